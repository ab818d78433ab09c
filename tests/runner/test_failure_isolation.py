"""A trial's failure stays in the trial (issue 25.6): an exception while running, judging or
storing one trial makes that trial `error` with the cause; the others and the run complete."""

from __future__ import annotations

import json
import textwrap

from proctor.executors import local as local_executor
from proctor.model import RunOptions
from proctor.run.main import run_main
from proctor.store import RunStore
from proctor.trial import trial as trial_mod

SPEC = """
    cli: sh
    tasks:
      - id: a
        intent: one
        solution: ["echo a > a.txt"]
        assert: [{file_contains: {path: a.txt, text: a}}]
      - id: b
        intent: two
        solution: ["echo b > b.txt"]
        assert: [{file_contains: {path: b.txt, text: b}}]
      - id: c
        intent: three
        solution: ["echo c > c.txt"]
        assert: [{file_contains: {path: c.txt, text: c}}]
    """


def _run(tmp_path, monkeypatch) -> dict:
    spec = tmp_path / "spec.yaml"
    spec.write_text(textwrap.dedent(SPEC))
    monkeypatch.setenv("PROCTOR_HOME", str(tmp_path / "home"))
    options = RunOptions(agent="oracle", quiet=True, output_dir=str(tmp_path / "run"),
                         concurrency=1)
    run_main([str(spec)], options)
    return json.loads((tmp_path / "run" / "results.json").read_text())


def test_an_exception_running_one_trial_errors_that_trial_only(tmp_path, monkeypatch):
    real = local_executor.run_trial

    async def flaky(trial, task, run):
        if trial.task_id == "b":
            raise RuntimeError("judging broke")
        return await real(trial, task, run)

    monkeypatch.setattr(local_executor, "run_trial", flaky)
    results = _run(tmp_path, monkeypatch)
    by = {t["task_id"]: t for t in results["trials"]}
    assert by["a"]["status"] == by["c"]["status"] == "pass"
    assert by["b"]["status"] == "error" and "judging broke" in by["b"]["error"]
    assert results["complete"]


def test_a_result_the_store_cannot_hold_is_stored_as_an_error(tmp_path, monkeypatch):
    real = RunStore.append

    def append(store, result):
        if result["task_id"] == "b" and result["status"] != "error":
            raise ValueError("cannot hold this")
        real(store, result)

    monkeypatch.setattr(RunStore, "append", append)
    results = _run(tmp_path, monkeypatch)
    by = {t["task_id"]: t for t in results["trials"]}
    assert by["a"]["status"] == by["c"]["status"] == "pass"
    assert by["b"]["status"] == "error" and "could not store the result" in by["b"]["error"]
    assert "cannot hold this" in by["b"]["error"]


def test_error_result_names_the_cause():
    from types import SimpleNamespace

    from proctor.model import Trial

    t = Trial(id="x.r0", task_id="x", model=None, help_mode=None, params={}, replica=0,
              agent="oracle")
    r = trial_mod.error_result(t, SimpleNamespace(category=None), "boom \udcff")
    assert r["status"] == "error" and r["error"] == "boom \\xff"


def test_the_store_signs_and_reads_back_a_name_that_is_not_utf8(tmp_path, monkeypatch):
    from proctor.results import new_trial
    from proctor.store import RunStore

    monkeypatch.setenv("PROCTOR_HOME", str(tmp_path / "home"))
    store = RunStore.create(str(tmp_path / "run"))
    name = "file_writes_outside: created bad\udcff\udcfe"
    store.append(new_trial(id="t.r0", task_id="t", model=None, help_mode=None, replica=0,
                           params={}, status="fail", composite_score=0.0, error=name))
    store.close()
    assert (tmp_path / "run" / "results.jsonl").read_bytes().isascii()
    [back] = RunStore(store.dir, store.run_id).finished().values()
    assert back["error"] == name
