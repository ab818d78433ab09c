"""Exports other tools open: Harbor's ATIF trajectories (validated against the JSON Schema of
Harbor's own models, tests/report/data/atif/, and the rules its validators add) and Inspect
AI eval logs (read back by inspect_ai). On real runs of every bundled example and of the
external agents; `proctor run --format atif,inspect` wrote them (exports are report formats)."""

from __future__ import annotations

import functools
import json
import re
from datetime import datetime
from pathlib import Path

import jsonschema
import pytest

SCHEMA = json.loads((Path(__file__).parent / "data" / "atif" / "harbor-atif.schema.json")
                    .read_text())
AGENT_ONLY = ("model_name", "reasoning_effort", "reasoning_content", "tool_calls", "metrics")


def harbor_errors(doc: dict) -> list[str]:
    """What Harbor's validator says of an ATIF document: its models' JSON Schema, then the
    rules of their validators, restated (tests/report/data/atif/SOURCE.md)."""
    errors = [e.message for e in jsonschema.Draft202012Validator(SCHEMA).iter_errors(doc)]
    for i, step in enumerate(doc.get("steps") or []):
        if step.get("step_id") != i + 1:
            errors.append(f"steps[{i}].step_id: expected {i + 1}")
        if step.get("source") != "agent":
            errors += [f"steps[{i}].{f}: only on agent steps" for f in AGENT_ONLY
                       if step.get(f) is not None]
        if step.get("llm_call_count") == 0 and step.get("source") == "agent":
            errors += [f"steps[{i}].{f}: not without a model call"
                       for f in ("metrics", "reasoning_content") if step.get(f) is not None]
        ids = {c["tool_call_id"] for c in step.get("tool_calls") or []}
        for r in (step.get("observation") or {}).get("results") or []:
            if r.get("source_call_id") is not None and r["source_call_id"] not in ids:
                errors.append(f"steps[{i}]: result for unknown call {r['source_call_id']}")
        if step.get("timestamp"):
            datetime.fromisoformat(step["timestamp"].replace("Z", "+00:00"))
    return errors


def _trajectories(run_dir: Path) -> dict[str, dict]:
    results = json.loads((run_dir / "results.json").read_text())
    return {t["id"]: json.loads((run_dir / "trials" / t["id"] / "trajectory.json").read_text())
            for t in results["trials"]}


def test_harbor_accepts_every_bundled_examples_trajectories(examples_run, oracle_run):
    for run_dir, trials in ((examples_run, 19), (oracle_run, 16)):  # oracle: once per task
        docs = _trajectories(run_dir)
        assert len(docs) == trials
        for tid, doc in docs.items():
            assert harbor_errors(doc) == [], tid
            assert doc["schema_version"] == "ATIF-v1.8" and doc["session_id"] == tid
    # the built-in agent: a system step, the task, one agent step per turn with its calls
    doc = _trajectories(examples_run)["count-and-save.mock-solver.injected.r0"]
    assert [s["source"] for s in doc["steps"]] == ["system", "user", "agent", "agent", "agent"]
    call = doc["steps"][2]["tool_calls"][0]
    assert call["function_name"] == "run_command" and call["arguments"] == {
        "command": "jq length users.json > count.txt"}
    (result,) = doc["steps"][2]["observation"]["results"]
    assert result["source_call_id"] == call["tool_call_id"]
    assert result["content"].startswith("exit code: 0")  # what the model saw
    assert result["extra"]["proctor_commands"][0]["exit_code"] == 0
    assert doc["steps"][2]["metrics"]["prompt_tokens"] > 0
    assert doc["final_metrics"]["total_steps"] == 5
    assert doc["extra"]["proctor"]["status"] == "pass"
    # the oracle: commands without a model, each a step with no model call
    oracle = _trajectories(oracle_run)["count-and-save.r0"]
    assert {s["llm_call_count"] for s in oracle["steps"]} == {0}
    assert "metrics" not in oracle["steps"][0]


def test_an_external_agents_trajectory_comes_from_proctors_record(agent_run):
    name, run_dir = agent_run
    results = json.loads((run_dir / "results.json").read_text())
    (trial,) = results["trials"]
    (doc,) = _trajectories(run_dir).values()
    assert harbor_errors(doc) == []
    assert doc["agent"]["name"] == name and doc["agent"]["version"] != "unknown"
    agent_steps = [s for s in doc["steps"] if s["source"] == "agent"]
    assert len(agent_steps) == trial["turns"]
    step = next(s for s in agent_steps if s.get("tool_calls"))
    (call,) = step["tool_calls"]
    assert "wc -l < orders.csv > count.txt" in json.dumps(call["arguments"])
    (result,) = step["observation"]["results"]
    assert [c["command"] for c in result["extra"]["proctor_commands"]
            if "set_aside" not in c] == ["wc -l < orders.csv > count.txt"]
    assert doc["final_metrics"]["total_prompt_tokens"] == trial["tokens"]["input"]
    assert sum(s["metrics"]["prompt_tokens"] for s in agent_steps) == trial["tokens"]["input"]
    assert doc["extra"]["proctor"]["status"] == "fail"
    assert doc["extra"]["proctor"]["reason"].startswith("failed: verify#0:")


def test_an_inspect_log_reads_back_with_every_score(examples_run):
    from inspect_ai.log import read_eval_log

    results = json.loads((examples_run / "results.json").read_text())
    log = read_eval_log(str(examples_run / "inspect.eval"))
    assert log.status == "success" and log.eval.model == "mock/solver"
    assert log.results.scores[0].metrics["pass_rate"].value == results["summary"]["pass_rate"]
    by_id = {s.id: s for s in log.samples}
    assert set(by_id) == {t["id"] for t in results["trials"]}
    for t in results["trials"]:
        sample = by_id[t["id"]]
        for c in t["checks"]:
            score = sample.scores[c["name"]]
            assert score.value == c["score"] and score.metadata["passed"] == c["passed"]
        assert sample.scores["composite"].value == t["composite_score"]
        assert sample.scores["verdict"].value == ("C" if t["status"] == "pass" else "I")
        assert sample.metadata["task_id"] == t["task_id"] and sample.epoch == 1
    messages = by_id["count-and-save.mock-solver.injected.r0"].messages
    assert [m.role for m in messages] == ["system", "user", "assistant", "tool", "assistant",
                                          "tool", "assistant"]
    assert messages[2].tool_calls[0].arguments == {"command": "jq length users.json > count.txt"}
    assert messages[3].tool_call_id == messages[2].tool_calls[0].id


def test_export_writes_where_it_is_told_in_either_inspect_format(examples_run, tmp_path, cli):
    from inspect_ai.log import read_eval_log

    out = cli("export", str(examples_run), "--format", "atif", "--output", str(tmp_path / "a"))
    assert out.returncode == 0 and "(19 trajectories)" in out.stdout
    assert len(list((tmp_path / "a").glob("*/trajectory.json"))) == 19
    out = cli("export", str(examples_run), "--format", "inspect", "--output",
              str(tmp_path / "log.json"))
    assert out.returncode == 0, out.stderr
    assert len(read_eval_log(str(tmp_path / "log.json")).samples) == 19
    # Issue 38: an export over many trials (3 s) said nothing. Without a terminal: plain
    # lines on stderr as the trials go, the end with its time; stdout only the path.
    assert out.stdout == f"{tmp_path / 'log.json'}\n"
    lines = out.stderr.splitlines()
    what = f"proctor: exporting {examples_run.name} as an Inspect log"
    assert lines[0] == f"{what} (19 trials)", lines
    steps = [x for x in lines if x.startswith(f"{what}: ")]
    assert re.fullmatch(rf"{re.escape(what)}: 19/19 trials · 0:\d\d", steps[-1]), lines
    assert 2 <= len(steps) <= 19
    assert re.fullmatch(r"proctor: exported 19 trial\(s\) as an Inspect log in 0:\d\d",
                        lines[-1]), lines
    assert "\x1b" not in out.stderr
    bad = cli("export", str(examples_run), "--format", "inspect", "--output",
              str(tmp_path / "log.txt"))
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and ".eval or a .json" in bad.stderr


def test_the_inspect_export_without_inspect_ai_says_how_to_get_it(examples_run, monkeypatch):
    import builtins

    from proctor.errors import UsageError
    from proctor.report import export_main

    real = builtins.__import__

    def no_inspect(name, *args, **kw):
        if name.startswith("inspect_ai"):
            raise ImportError(name)
        return real(name, *args, **kw)

    monkeypatch.setattr(builtins, "__import__", no_inspect)
    with pytest.raises(UsageError, match=r"pip install 'proctor\[inspect\]'"):
        export_main(examples_run, "inspect")


def test_proctor_help_never_imports_inspect_ai():
    import subprocess
    import sys

    code = ("import sys, runpy; sys.argv = ['proctor', '--help']\n"
            "try: runpy.run_module('proctor.cli', run_name='__main__')\n"
            "except SystemExit: pass\n"
            "assert not [m for m in sys.modules if m.startswith('inspect_ai')]")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


@pytest.fixture
def cli(cli):
    return functools.partial(cli, timeout=300)


def test_an_external_agents_otel_spans_come_from_proctors_record(agent_run):
    """The proxy's model calls as chat spans, the traced commands under their tool calls."""
    pytest.importorskip("opentelemetry.proto")
    from proctor.report.otel import run_request
    from tests.report.test_otel import attrs, parse, spans_of

    name, run_dir = agent_run
    results = json.loads((run_dir / "results.json").read_text())
    (trial,) = results["trials"]
    spans = spans_of(parse(run_request(run_dir, results)))
    chats = [s for s in spans if s.name.startswith("chat ")]
    assert len([c for c in chats if "proctor.side" not in attrs(c)]) == trial["turns"]
    assert sum(attrs(c).get("gen_ai.usage.input_tokens", 0) for c in chats) == \
        trial["tokens"]["input"]
    by_id = {s.span_id: s for s in spans}
    (command,) = [s for s in spans if attrs(s).get("process.command_line")
                  == "wc -l < orders.csv > count.txt"]
    assert by_id[command.parent_span_id].name.startswith("execute_tool ")
    assert by_id[by_id[command.parent_span_id].parent_span_id].name.startswith("chat ")
    (t,) = [s for s in spans if s.name.startswith("trial ")]
    assert attrs(t)["proctor.agent"] == name and t.status.code == 2  # verify fails
