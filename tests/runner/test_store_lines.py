"""results.jsonl keeps one line per trial: a trial run again (`--resume` after an
infrastructure error) appends its new line, which wins, and reading the file leaves only it."""

from __future__ import annotations

import json

from proctor.model import TrialResult
from proctor.store import RunStore


def _result(trial_id: str, status: str, error: str | None = None) -> TrialResult:
    return TrialResult(id=trial_id, task_id=trial_id.split(".")[0], model=None, help_mode=None,
                       replica=0, params={}, status=status, composite_score=0.0, error=error)


def test_a_trial_run_again_leaves_one_line_its_last(tmp_path, monkeypatch):
    monkeypatch.setenv("PROCTOR_HOME", str(tmp_path / "home"))
    store = RunStore.create(str(tmp_path / "run"))
    store.append(_result("a.r0", "pass"))
    store.append(_result("b.r0", "error", "infrastructure error: the node was lost"))
    store.append(_result("b.r0", "fail"))  # the re-run
    store.close()
    done = RunStore(store.dir, store.run_id).finished()
    assert {k: v.status for k, v in done.items()} == {"a.r0": "pass", "b.r0": "fail"}
    lines = [json.loads(line) for line in store.jsonl_path.read_text().splitlines()]
    assert [(t["id"], t["status"]) for t in lines] == [("a.r0", "pass"), ("b.r0", "fail")]
    # What is left is still signed: read again, both trials are there.
    assert set(RunStore(store.dir, store.run_id).finished()) == {"a.r0", "b.r0"}
