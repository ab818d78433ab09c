"""results.jsonl keeps one line per trial: a trial run again (`--resume` after an
infrastructure error) appends its new line, which wins, and reading the file leaves only it."""

from __future__ import annotations

import json

from proctor.results import TrialRecord, new_trial
from proctor.store import RunStore


def _result(trial_id: str, status: str, error: str | None = None) -> TrialRecord:
    return new_trial(id=trial_id, task_id=trial_id.split(".")[0], model=None, help_mode=None,
                     replica=0, params={}, status=status, composite_score=0.0, error=error)


def test_a_trial_run_again_leaves_one_line_its_last(tmp_path, monkeypatch):
    monkeypatch.setenv("PROCTOR_HOME", str(tmp_path / "home"))
    store = RunStore.create(str(tmp_path / "run"))
    store.append(_result("a.r0", "pass"))
    store.append(_result("b.r0", "error", "infrastructure error: the node was lost"))
    store.append(_result("b.r0", "fail"))  # the re-run
    store.close()
    done = RunStore(store.dir, store.run_id).finished()
    assert {k: v["status"] for k, v in done.items()} == {"a.r0": "pass", "b.r0": "fail"}
    lines = [json.loads(line) for line in store.jsonl_path.read_text().splitlines()]
    assert [(t["id"], t["status"]) for t in lines] == [("a.r0", "pass"), ("b.r0", "fail")]
    # What is left is still signed: read again, both trials are there.
    assert set(RunStore(store.dir, store.run_id).finished()) == {"a.r0", "b.r0"}


def test_a_line_is_signed_as_it_reads_back_whatever_its_keys_and_values(tmp_path, monkeypatch):
    """The signature is over the text a reader gets back: parameters with int keys (sorted
    as strings once written), tuples, and values JSON lacks (written as their str) all
    verify on reading, so none of these trials is run again by --resume."""
    monkeypatch.setenv("PROCTOR_HOME", str(tmp_path / "home"))
    store = RunStore.create(str(tmp_path / "run"))
    odd = {
        "int keys": {"p": {10: "ten", 9: "nine"}},
        "tuples": {"p": ("a", ("b", 1.5))},
        "a path": {"p": tmp_path / "x"},
        "plain": {"p": "v", "n": 3},
    }
    for i, params in enumerate(odd.values()):
        r = _result(f"t{i}.r0", "pass")
        r["params"] = params
        store.append(r)
    store.close()
    reader = RunStore(store.dir, store.run_id)
    done = reader.finished()
    assert set(done) == {f"t{i}.r0" for i in range(len(odd))} and reader.rejected == 0
    assert done["t0.r0"]["params"] == {"p": {"10": "ten", "9": "nine"}}
    assert done["t2.r0"]["params"] == {"p": str(tmp_path / "x")}
    # A line changed after it was written is still refused.
    lines = store.jsonl_path.read_text().splitlines()
    store.jsonl_path.write_text("\n".join([lines[0].replace('"pass"', '"fail"')] + lines[1:]) + "\n")
    assert "t0.r0" not in RunStore(store.dir, store.run_id).finished()
