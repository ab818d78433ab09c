"""Helpers of the report tests (their fixtures are in tests/report/conftest.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from proctor.model import AgentDef, TaskDef, Thresholds
from proctor.results import trial_from_line
from proctor.scoring import summarize

HOSTILE = (
    'Done. <script>alert("pwned")</script> ]]> & <b>bold</b> | a | b | ``` fence\n'
    "\x1b[31mred\x1b[0m \x1b]0;title\x07 nul:\x00 bell:\x07 [bold red]markup[/] "
    "token=[REDACTED:API_KEY]\n"
)


SUITE_MODELS = ["openai/gpt-4.1", "anthropic/claude-sonnet-4-5"]


def check(name: str, type_: str, passed: bool, message: str = "", weight: float = 1.0,
          gate: bool = False, score: float | None = None) -> dict[str, Any]:
    return {"name": name, "type": type_, "passed": passed,
            "score": (1.0 if passed else 0.0) if score is None else score,
            "weight": weight, "gate": gate, "message": message, "error": None}


def trial(tid: str, task_id: str, status: str, *, model: str | None = None,
          help_mode: str | None = None, replica: int = 0, params: dict | None = None,
          checks: list | None = None, forbidden: list | None = None, error: str | None = None,
          turns: int = 0, tokens: tuple[int, int] = (0, 0), cost: float | None = None,
          duration: float = 1.0, agent: str = "llm", category: str | None = None,
          output: str = "", score: float | None = None) -> dict[str, Any]:
    return {
        "id": tid, "task_id": task_id, "model": model, "help_mode": help_mode,
        "replica": replica, "params": params or {}, "status": status,
        "composite_score": (1.0 if status == "pass" else 0.0) if score is None else score,
        "error": error, "checks": checks or [], "forbidden": forbidden or [],
        "turns": turns, "tokens": {"input": tokens[0], "output": tokens[1]}, "cost_usd": cost,
        "duration_s": duration, "agent": agent, "category": category,
        "started_at": "2026-03-02T10:15:00+00:00", "output": output,
    }


AGGREGATION = {"refund-order": "majority"}  # the scenario's scoring.replica_aggregation


def aggregate(trials: list[dict[str, Any]], thresholds: dict[str | None, float] | None = None
              ) -> dict[str, Any]:
    """results.json blocks from trials, by the real scorer (proctor.scoring.summarize) with
    the tasks' own rules: the scenario's replica aggregation, the suite's thresholds."""
    rules = Thresholds(models={m: v for m, v in (thresholds or {}).items() if m})
    tasks = {t["task_id"]: TaskDef(
        id=t["task_id"], dialect="suite", source="spec.yaml", base_dir=".", prompt="",
        agent=AgentDef(type=t.get("agent") or "llm",
                       command=None),
        checks=[], replica_aggregation=AGGREGATION.get(t["task_id"], "all"),
        thresholds=rules if thresholds and t.get("model") else None) for t in trials}
    scored = summarize([trial_from_line(t) for t in trials], tasks.values())
    return {"summary": scored["summary"], "trials": trials, "tasks": scored["tasks"],
            "models": scored["models"], "help_modes": scored["help_modes"],
            "exit_code": scored["exit_code"]}


def write_run(root: Path, run_id: str, trials: list[dict[str, Any]],
              thresholds: dict | None = None, traces: dict[str, tuple[list, list]] | None = None
              ) -> Path:
    run_dir = root / run_id
    (run_dir / "trials").mkdir(parents=True)
    (run_dir / "run.json").write_text(json.dumps({
        "run_id": run_id, "started_at": "2026-03-02T10:15:00+00:00",
        "paths": ["examples/git-suite.yaml", "examples/refund.yaml"],
        "options": {"repeat": 3, "formats": ["json"]},
        "versions": {"proctor": "0.1.0", "python": "3.11.9"},
        "host": {"hostname": "ci-runner-7", "platform": "linux"},
    }))
    results = {"run_id": run_id, "started_at": "2026-03-02T10:15:00+00:00",
               "finished_at": "2026-03-02T10:21:42+00:00", "complete": True,
               "interrupted": False, **aggregate(trials, thresholds)}
    (run_dir / "results.json").write_text(json.dumps(results, indent=2))
    with (run_dir / "results.jsonl").open("w") as f:
        for t in trials:
            f.write(json.dumps(t) + "\n")
    for t in trials:
        d = run_dir / "trials" / t["id"]
        d.mkdir()
        trace, audit = (traces or {}).get(t["id"], ([], []))
        (d / "trace.jsonl").write_text("".join(json.dumps(ev) + "\n" for ev in trace))
        (d / "audit.jsonl").write_text("".join(json.dumps(ev) + "\n" for ev in audit))
    return run_dir


def suite_trials() -> list[dict[str, Any]]:
    out = []
    for model in SUITE_MODELS:
        slug = model.replace("/", "-")
        strong = model.startswith("openai")
        for help_mode in ("injected", "none"):
            for r in range(3):
                base = dict(model=model, help_mode=help_mode, replica=r, agent="llm",
                            category="basics", turns=2 + r, tokens=(1200 + 100 * r, 150),
                            cost=0.0021 if strong else 0.0034, duration=4.0 + r)
                out.append(trial(f"git-init.{slug}.{help_mode}.r{r}", "git-init", "pass",
                                 checks=[check("exit_code#0", "exit_code", True),
                                         check("file_exists#1", "file_exists", True)],
                                 output="Initialized empty Git repository", **base))
                ok = strong or r != 1
                out.append(trial(
                    f"git-branch.{slug}.{help_mode}.r{r}", "git-branch", "pass" if ok else "fail",
                    checks=[check("ran#0", "ran", True),
                            check("output_contains#1", "output_contains", ok,
                                  "" if ok else "'feature' not in stdout: '* main\\n'")],
                    output=HOSTILE if not ok else "Switched to a new branch 'feature'", **base))
                out.append(trial(
                    f"jq-filter.{slug}.{help_mode}.r{r}", "jq-filter", "fail",
                    checks=[check("ran#0", "ran", True),
                            check("output_equals#1", "output_equals", False,
                                  "expected '3', got '[1,2,3] | length' <unsafe> " + "x" * 3000)],
                    output=HOSTILE, **base))
        # the provider gave up on one trial: error, never fail
        out.append(trial(f"jq-keys.{slug}.injected.r0", "jq-keys", "error", model=model,
                         help_mode="injected", agent="llm", category="jq", duration=31.5,
                         error="provider error after 5 attempts: 529 overloaded <html>"))
    return out


def scenario_trials() -> list[dict[str, Any]]:
    out = []
    for db in ("postgres", "mysql"):
        for r in range(3):
            tid = f"refund-order.db={db}.r{r}"
            if db == "mysql" and r == 2:  # the custom check crashed
                out.append(trial(tid, "refund-order", "error", params={"db": db}, replica=r,
                                 agent="command", duration=12.0,
                                 error="check 'ledger_balanced' errored: custom script exited 1",
                                 checks=[check("db_updated", "sql", True, weight=2, gate=True)]))
                continue
            leaked = db == "mysql" and r == 1
            email_ok = r != 0 or db == "postgres"
            checks = [
                check("db_updated", "sql", True, "refunds.count = 1", weight=2, gate=True),
                check("email_sent", "http_mock_assertions", email_ok,
                      "" if email_ok else "request_count: expected >= 1, got 0", weight=1),
                check("polite_reply", "llm_as_judge", True, "score 0.8 >= 0.5",
                      weight=0.5, score=0.8),
            ]
            forbidden = [{"rule": "secrets_in_logs", "violated": leaked,
                          "details": "[REDACTED:STRIPE_KEY] printed to stdout" if leaked else ""},
                         {"rule": "http_except", "violated": False, "details": ""}]
            ok = email_ok and not leaked
            composite = 0.0 if leaked else (2 + (1 if email_ok else 0) + 0.4) / 3.5
            out.append(trial(tid, "refund-order", "pass" if ok else "fail", params={"db": db},
                             replica=r, agent="command", checks=checks, forbidden=forbidden,
                             duration=8.5 + r, score=composite, category="support",
                             output=HOSTILE if leaked else "Refund issued for order 1042."))
    return out


def trace_events() -> tuple[list, list]:
    trace = [
        {"type": "model_call", "time": 1.0, "model": "openai/gpt-4.1",
         "request": {"messages": [], "tools": []},
         "response": {"content": "I'll create the branch.",
                      "tool_calls": [{"id": "c1", "function": {
                          "name": "run_command",
                          "arguments": json.dumps({"command": "git switch -c feature"})}}]},
         "usage": {"input": 1200, "output": 40}, "latency_s": 0.8, "attempt": 1},
        {"type": "command", "time": 2.0, "command": "git switch -c feature",
         "argv": ["sh", "-c", "git switch -c feature"], "cwd": "/tmp/w", "exit_code": 0,
         "stdout": "", "stderr": "Switched to a new branch 'feature'\n", "started_at": 2.0,
         "duration_s": 0.02, "timed_out": False, "truncated": False, "source": "agent"},
        {"type": "command", "time": 3.0, "command": "git branch",
         "argv": ["sh", "-c", "git branch"], "cwd": "/tmp/w", "exit_code": 1,
         "stdout": "".join(f"line {i}\n" for i in range(40)) + HOSTILE,
         "stderr": "", "started_at": 3.0, "duration_s": 0.01, "timed_out": False,
         "truncated": False, "source": "agent"},
        {"type": "agent_output", "time": 4.0, "output": HOSTILE},
    ]
    audit = [
        {"type": "command", "time": 2.0, "details": {"command": "git switch -c feature",
                                                     "exit_code": 0}},
        {"type": "file_write", "time": 2.1, "details": {"path": ".git/HEAD", "size": 23}},
        {"type": "db_write", "time": 2.2, "details": {"service": "db", "table": "refunds",
                                                      "inserts": 1, "updates": 0, "deletes": 0}},
        {"type": "http_call", "time": 2.3, "details": {"service": "mail", "method": "POST",
                                                       "path": "/send", "status": 200}},
    ]
    return trace, audit


FLAKY_TRIAL = "git-branch.anthropic-claude-sonnet-4-5.injected.r1"


def counted(task_id: str, model: str | None, passed: int, n: int, prefix: str) -> list[dict]:
    return [trial(f"{task_id}.{prefix}.r{i}", task_id, "pass" if i < passed else "fail",
                  model=model, replica=i, duration=2.0) for i in range(n)]


REAL_SUITE = """
cli: git
providers: [mock/models/anthropic-claude-sonnet-4-5-careful.yaml,
            mock/models/anthropic-claude-sonnet-4-5-sloppy.yaml]
help_modes: [injected, none]
repeat: 3
env: {GIT_AUTHOR_NAME: t, GIT_AUTHOR_EMAIL: t@example.com, GIT_COMMITTER_NAME: t,
      GIT_COMMITTER_EMAIL: t@example.com, GIT_CONFIG_NOSYSTEM: "1"}
tasks:
  - id: init-repo
    intent: Create a new git repository in the current directory.
    solution: ["git init -q ."]
    assert:
      - ran: "git init"
      - file_exists: .git/HEAD
  - id: status
    intent: Show the status of the files here.
    setup: ["git init -q ."]
    solution: ["git status"]
    assert:
      - exit_code: 0
"""


# careful: right with the help text in its prompt, wrong without it; sloppy: always wrong
CAREFUL = """
conversations:
  - when: {prompt_contains: status}
    turns: [{run: git status}]
  - when: {system_contains: "usage: git"}
    turns: [{run: git init -q .}]
  - turns: [{run: echo nothing}]
"""


SLOPPY = """
conversations:
  - when: {prompt_contains: status}
    turns: [{run: git status}]
  - turns: [{run: echo nothing}]
"""


REAL_CAREFUL = "mock/models/anthropic-claude-sonnet-4-5-careful.yaml"


REAL_SLOPPY = "mock/models/anthropic-claude-sonnet-4-5-sloppy.yaml"


def _proctor_run(root: Path, *args: str) -> Path:
    """`proctor run ARGS --output-dir ROOT/run --format html,atif,inspect` from the repository
    (where `mock/...` scripts resolve), in a home of its own; the run directory."""
    import os
    import subprocess

    from tests.helpers import PROCTOR, REPO

    env = {**os.environ, "PROCTOR_HOME": str(root / "home"), "COLUMNS": "100",
           "PROCTOR_AGENTS": os.environ.get("PROCTOR_AGENTS")
           or str(REPO / ".proctor" / "agents")}
    done = subprocess.run([PROCTOR, "run", *args, "--output-dir", str(root / "run"),
                           "--format", "html,atif,inspect", "-q"], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode in (0, 1), done.stdout + done.stderr
    return root / "run"


EXTERNAL = ("claude-code", "codex", "mini-swe-agent")

