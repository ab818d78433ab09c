"""scoring.RowsAhead: a run's tasks rows made as each task's last trial is stored, during
the run, not all at its end; results.json the same as summarize makes it at the end."""

from __future__ import annotations

import json
import sys

import pytest

from proctor import scoring

SPEC = """cli: sh
tasks:
  - id: a
    intent: write hello
    repeat: 3
    solution: ["echo hello > out.txt"]
    assert: [{file_contains: {path: out.txt, text: hello}}]
  - id: b
    intent: write bye
    solution: ["echo hello > out.txt"]
    assert: [{file_contains: {path: out.txt, text: bye}}]
  - id: c
    intent: write c
    repeat: 2
    solution: ["echo c > out.txt"]
    assert: [{file_contains: {path: out.txt, text: c}}]
"""


def _run(tmp_path, monkeypatch, *extra: str) -> dict:
    from proctor import cli

    (tmp_path / "spec.yaml").write_text(SPEC)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PROCTOR_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(sys, "argv", ["proctor", "run", "spec.yaml", "--agent", "oracle",
                                      "--concurrency", "2", "-q", "--output-dir", "run",
                                      *extra])
    with pytest.raises(SystemExit):
        cli.main()
    return json.loads((tmp_path / "run" / "results.json").read_text())


def test_a_runs_tasks_rows_are_made_as_each_task_ends(tmp_path, monkeypatch):
    made: list[tuple[str, bool]] = []  # (task, during the run) for each row made
    ending = []
    real_row = scoring._task_row

    def task_row(key, group, task):  # type: ignore[no-untyped-def]
        made.append((key[0], not ending))
        return real_row(key, group, task)

    from proctor.run import execute

    real_build = execute.build_results

    def build_results(planned, *args, **kwargs):  # type: ignore[no-untyped-def]
        ending.append(planned)
        return real_build(planned, *args, **kwargs)

    monkeypatch.setattr(scoring, "_task_row", task_row)
    monkeypatch.setattr(execute, "build_results", build_results)
    results = _run(tmp_path, monkeypatch)
    assert results["summary"]["trials"] == 6 and results["summary"]["failed"] == 1
    # every row made during the run, once, none at its end
    assert sorted(made) == [("a", True), ("b", True), ("c", True)]
    # ... and the very rows summarize makes at the end from the stored trials
    again = scoring.summarize(results["trials"], ending[0].tasks.values())
    assert results["tasks"] == json.loads(json.dumps(again["tasks"]))
    assert [r["task_id"] for r in results["tasks"]] == ["a", "b", "c"]


def test_a_row_made_ahead_is_used_only_for_the_very_same_trials():
    task = {"id": "t.r0", "task_id": "t", "agent": "oracle", "model": None,
            "help_mode": None, "params": {}, "status": "pass", "composite_score": 1.0,
            "turns": 0, "duration_s": 1.0, "tokens": {}, "cost_usd": None}
    other = dict(task, id="t.r1", status="fail", composite_score=0.0)
    ahead = scoring.RowsAhead([("t.r0", "t"), ("t.r1", "t")], {})
    kept = {"t.r0": task, "t.r1": other}
    ahead.stored("t.r0", "t", kept.get)
    assert ahead.rows == {}  # the task's other trial has not ended
    ahead.stored("t.r1", "t", kept.get)
    assert len(ahead.rows) == 1
    with_ahead = scoring.summarize([task, other], [], ahead)
    assert with_ahead == scoring.summarize([task, other], [])
    key = next(iter(ahead.rows))
    assert ahead.row(key, [task, other]) is with_ahead["tasks"][0]
    # the same content in other objects (a results.jsonl read back): made again
    assert ahead.row(key, [dict(task), dict(other)]) is None
    assert ahead.row(key, [task]) is None

