"""One meaning for every check, whatever the agent (SPEC §2, §4): the conformance suite
(tests/agents/conformance/) and one scripted behaviour run through `llm`, Claude Code, Codex
and mini-swe-agent give the same verdict for every check and the same agent commands
(string, exit status, stdout, stderr, the programs each started), each answering its
model's tool call; a model that hangs after a forbidden command does not save the agent,
and the task's timeout holds. Then every bundled example passes under every agent that
can run it, driven by `mock/solver`."""

from __future__ import annotations

import json
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.helpers import REPO
from tests.helpers.agents import AGENTS, need_agent
from tests.helpers.cli import Cli

pytestmark = pytest.mark.slow

SUITE = Path(__file__).parent / "conformance"
ALL = ("llm", *AGENTS)
TASKS = ("compound", "pipes", "children", "failing-last", "streams", "renamed", "script-hang",
         "order")
# Each agent's shell tool and its command argument, as its model calls it (`tool_used`).
SHELL_TOOL = {"llm": ("run_command", "command"), "claude-code": ("Bash", "command"),
              "codex": ("exec_command", "cmd"), "mini-swe-agent": ("bash", "command")}
HANG_TIMEOUT, GRACE = 60, 10  # the hang task's timeout (cli-bench.yaml); setup, start, stop
EXAMPLES = ("external-agents", "fix-the-bug", "git-basics", "mock-llm-demo", "reconciliation")


def _run(args: list[str], cwd: Path, timeout: float = 900) -> subprocess.CompletedProcess:
    return Cli(cwd, env={"NO_COLOR": "1"})(*args, timeout=timeout)


def for_agent(suite: Path, agent: str, into: Path) -> Path:
    """The agent's copy of a conformance spec, with the mock script and the files beside it:
    @TOOL@ and @ARG@ are its shell tool's name and command argument."""
    into.mkdir(parents=True, exist_ok=True)
    tool, arg = SHELL_TOOL[agent]
    for f in [*SUITE.iterdir(), suite]:
        if f.is_file():
            (into / f.name).write_text(f.read_text().replace("@TOOL@", tool)
                                       .replace("@ARG@", arg))
    return into / suite.name


def _all_agents(tmp: Path, argv: list[str]) -> dict[str, Path]:
    """`proctor run ARGV --agent A` for every agent at once; the run directory of each. A
    conformance suite in ARGV is given as the agent's own copy (`for_agent`)."""
    for agent in AGENTS:
        need_agent(agent)

    def one(agent: str) -> Path:
        out = tmp / agent
        args = [str(for_agent(Path(a), agent, tmp / f"{agent}-suite"))
                if a.endswith(".yaml") and Path(a).parent in (SUITE, tmp) else a for a in argv]
        proc = _run([*args, "--agent", agent, "-q", "--output-dir", str(out)], tmp)
        assert (out / "results.json").exists(), proc.stdout + proc.stderr
        assert "Traceback" not in proc.stderr, proc.stderr
        return out

    with ThreadPoolExecutor(len(ALL)) as pool:
        return dict(zip(ALL, pool.map(one, ALL), strict=True))


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("conformance")
    return _all_agents(tmp, ["run", str(SUITE / "cli-bench.yaml")])


def _trial(run: Path, task: str) -> dict:
    [t] = [t for t in json.loads((run / "results.json").read_text())["trials"]
           if t["task_id"] == task]
    return t


def _commands(run: Path, trial: dict) -> list[dict]:
    events = map(json.loads, (run / "trials" / trial["id"] / "trace.jsonl").read_text()
                 .splitlines())
    return [e for e in events if e["type"] == "command" and not e.get("ignored")]


def _comparable(c: dict) -> tuple:
    """What must agree across agents (pipeline members start in any order)."""
    return (c["command"], c["exit_code"], c["stdout"], c["stderr"], c["timed_out"],
            sorted(" ".join(p["argv"]) for p in c["processes"]))


@pytest.mark.parametrize("task", TASKS)
def test_every_agent_gives_the_same_verdicts_and_commands(runs, task):
    trials = {agent: _trial(run, task) for agent, run in runs.items()}
    verdicts = {agent: [(c["name"], c["passed"]) for c in t["checks"]]
                for agent, t in trials.items()}
    assert all(t["status"] != "error" for t in trials.values()), \
        {a: t.get("error") for a, t in trials.items()}
    assert verdicts["llm"] and all(v == verdicts["llm"] for v in verdicts.values()), \
        {a: [(c["name"], c["passed"], c["message"]) for c in t["checks"]]
         for a, t in trials.items()}
    commands = {agent: _commands(runs[agent], t) for agent, t in trials.items()}
    assert commands["llm"], "the behaviour ran no command"
    for agent, seen in commands.items():
        assert [_comparable(c) for c in seen] == [_comparable(c) for c in commands["llm"]], agent
        assert all(c["tool_call_id"] for c in seen), agent  # matched to the model's call


def test_the_intended_verdicts(runs):
    """The shared verdicts are the right ones (checked on one agent; the test above makes
    them everyone's)."""
    failing = {task: [c["name"] for c in _trial(runs["codex"], task)["checks"]
                      if not c["passed"]] for task in TASKS}
    assert failing == {"compound": [], "pipes": ["output_contains#3"], "children": [],
                       "failing-last": ["exit_code#1", "output_contains#3"],
                       "streams": ["output_contains#2"],
                       "renamed": ["not_ran#0", "file_exists#2"],
                       "script-hang": ["not_ran#0", "file_exists#2"],
                       "order": ["ran_in_order#1", "ran_in_order#2", "tool_used#7",
                                 "budget#9", "budget#10"]}
    message = next(c["message"] for c in _trial(runs["claude-code"], "script-hang")["checks"]
                   if c["name"] == "not_ran#0")
    assert message.endswith("#1 sh cleanup.sh (its program: rm -rf junk)")
    # run as `cleaner` (bash's exec -a), rm is found by the file it executed (SPEC §2)
    message = next(c["message"] for c in _trial(runs["mini-swe-agent"], "renamed")["checks"]
                   if c["name"] == "not_ran#0")
    assert message.endswith("#1 bash tidy.sh (its program: rm -rf junk)"), message


@pytest.mark.parametrize("agent", ALL)
def test_a_model_that_hangs_after_a_forbidden_command_times_out_and_is_judged(runs, agent):
    """Hostile: the agent ran `sh cleanup.sh` (which removes junk), then its model hangs
    for ten minutes. The trial ends at its timeout (plus a little grace), says it timed
    out, and keeps the command, the turns and the tokens: not_ran fails. The honest twins
    are the other tasks: not timed out."""
    t = _trial(runs[agent], "script-hang")
    assert t["status"] == "fail" and t["timed_out"] is True
    assert t["duration_s"] < HANG_TIMEOUT + GRACE, t["duration_s"]
    assert t["turns"] >= 1 and t["tokens"]["input"] > 0
    others = [_trial(runs[agent], task) for task in TASKS if task != "script-hang"]
    assert not any(o["timed_out"] for o in others)


def test_help_modes_give_one_trial_each_under_every_agent(tmp_path):
    """`help_modes: [injected, none]`: two trials per task under every agent that takes a
    prompt, with the same verdicts."""
    suite = tmp_path / "help.yaml"
    suite.write_text((SUITE / "cli-bench.yaml").read_text().replace(
        "cli: git\n", "cli: git\nhelp_modes: [injected, none]\n"))
    (tmp_path / "script.yaml").write_text((SUITE / "script.yaml").read_text())
    runs = _all_agents(tmp_path, ["run", str(suite), "--task", "streams"])
    for run in runs.values():
        trials = json.loads((run / "results.json").read_text())["trials"]
        assert sorted(t["help_mode"] for t in trials) == ["injected", "none"]
        assert all([c["passed"] for c in t["checks"]] == [True, True, False, True]
                   for t in trials)


def test_every_bundled_example_passes_under_every_agent(tmp_path):
    """`--model mock/solver` answers each task with its `solution`, one command per turn,
    through each agent's own shell tool."""
    runs = _all_agents(tmp_path, ["run", *(str(REPO / "examples" / e) for e in EXAMPLES),
                                  "--model", "mock/solver", "--concurrency", "4"])
    for agent, run in runs.items():
        trials = json.loads((run / "results.json").read_text())["trials"]
        assert {t["task_id"] for t in trials} >= {"count-orders", "fix-the-bug",
                                                  "unknown-revision", "reconciliation"}
        failed = {t["id"]: t.get("error") or [c["message"] for c in t["checks"]
                                               if not c["passed"]]
                  for t in trials if t["status"] != "pass"}
        assert not failed, (agent, failed)


@pytest.mark.parametrize("agent", ALL)
def test_trajectory_checks_read_the_same_record_under_every_agent(runs, agent):
    """ran_in_order, tool_used and budget (the `order` task): the model's tool calls as the
    agent got them or the proxy read them — three shell tool calls, named as the agent names
    its shell tool — the same three agent commands, the same turns, a known cost of 0."""
    t = _trial(runs[agent], "order")
    tool, arg = SHELL_TOOL[agent]
    messages = {c["name"]: c["message"] for c in t["checks"]}
    assert messages["tool_used#3"] == (f"2 tool calls of the model match name '{tool}' and "
                                       f"{arg} '^git ' (expected exactly 2)")
    assert messages["budget#8"].startswith("within budget: turns 4 <= 4, commands 3 <= 3, "
                                           "cost_usd $0 <= $0, duration_s ")
    assert messages["budget#9"] == "over budget: commands 3 > 2"
    assert messages["ran_in_order#1"].startswith(
        "matched '^git commit\\b' by #3 git commit -qm first; but no agent command after #3 "
        "matches '^git add\\b'; it matches #2, too early")
    assert t["turns"] == 4 and t["cost_usd"] == 0.0


def test_scenario_invariants_mean_the_same_under_every_agent(tmp_path):
    """The scenario dialect through every agent: ran_in_order and tool_used invariants pass
    alike; two weight-0 invariants fail everywhere and no trial fails for them (SPEC §3);
    the custom check of each replica sees its own trial id and replica number."""
    runs = _all_agents(tmp_path, ["run", str(SUITE / "scenario.yaml")])
    for agent, run in runs.items():
        trials = sorted(json.loads((run / "results.json").read_text())["trials"],
                        key=lambda t: t["replica"])
        assert [t["status"] for t in trials] == ["pass", "pass"], (agent, trials)
        for t in trials:
            checks = {c["name"]: c for c in t["checks"]}
            failed = sorted(n for n, c in checks.items() if not c["passed"])
            assert failed == ["editor", "frugal"], (agent, t["checks"])
            assert checks["frugal"]["weight"] == checks["editor"]["weight"] == 0
            assert t["composite_score"] == 1.0
            assert json.loads(checks["who"]["message"]) == {
                "id": t["id"], "replica": t["replica"], "params": {}}
        assert [t["replica"] for t in trials] == [0, 1] and trials[0]["id"] != trials[1]["id"]


OTHER_TOOL = """
cli: git
providers: [mock/script.yaml]
tasks:
  - id: other-tool
    intent: "[other-tool] Take a note."
    assert:
      - tool_used: {name: Write, args: {content: "^a note$"}, min: 1, max: 1}
      - tool_used: {name: "run_command|Bash|exec_command|bash", min: 0, max: 0}
      - tool_used: {name: Read}             # fails everywhere
"""
OTHER_SCRIPT = """
conversations:
  - when: {prompt_contains: "[other-tool]"}
    turns:
      - tool: {name: Write, arguments: {file_path: /tmp/proctor-note.txt, content: a note}}
      - say: done
"""


@pytest.mark.parametrize("agent", ["llm", "claude-code", "codex"])
def test_a_tool_call_other_than_the_shell_is_counted_by_its_name(tmp_path, agent):
    """The model calls `Write` (Claude Code's file tool; an unknown tool to `llm` and Codex,
    which answer it with an error): the proxy, or the built-in agent, recorded the call by
    its name and arguments, and tool_used counts it once, whatever the agent did with it.
    (mini-swe-agent answers a call of a tool it lacks with a format error and asks again:
    the scripted model repeats its turn, and each repetition is a call of its own.)"""
    if agent != "llm":
        need_agent(agent)
    (tmp_path / "s.yaml").write_text(OTHER_TOOL)
    (tmp_path / "script.yaml").write_text(OTHER_SCRIPT)
    _run(["run", "s.yaml", "--agent", agent, "-q", "--output-dir", "out"], tmp_path)
    [t] = json.loads((tmp_path / "out" / "results.json").read_text())["trials"]
    assert [(c["name"], c["passed"]) for c in t["checks"]] == [
        ("tool_used#0", True), ("tool_used#1", True), ("tool_used#2", False)], t
    assert t["checks"][2]["message"].startswith(
        "0 tool calls of the model match name 'Read', expected at least 1; the model made 1 "
        'tool call: #1 Write {"content": "a note", "file_path": "/tmp/proctor-note.txt"}')
