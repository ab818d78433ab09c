"""A run's end reads its trials from memory (`RunStore.written`), not from results.jsonl
again, when the file holds only what the run read at its start and appended since: the same
records and the same results.json, byte for byte, as reading the file back gives. Anything
else in the file (a line someone else appended, a trial stored twice) is read as before."""

from __future__ import annotations

import json

import pytest

from proctor.results import TrialRecord, new_trial
from proctor.store import RunStore, write_json


def _result(trial_id: str, status: str, **extra: object) -> TrialRecord:
    record = new_trial(id=trial_id, task_id=trial_id.split(".")[0], model=None,
                       help_mode=None, replica=0, params={}, status=status,
                       composite_score=0.0, error=None)
    record.update(extra)  # type: ignore[typeddict-item]
    return record


def _odd_results(tmp_path) -> list[TrialRecord]:
    """Records whose JSON form differs from the dict: int keys, tuples, a Path, text that
    is not ASCII or not even UTF-8 (a lone surrogate), checks and forbidden entries given
    in an order other than results.json's, and a key proctor does not know."""
    return [
        _result("a.r0", "pass", params={"p": {10: "ten", 9: "nine"}, "t": ("x", (1, 2.5))}),
        _result("b.r0", "fail", params={"where": tmp_path / "x", "name": "caf\u00e9 \u2603"},
                checks=[{"weight": 1.0, "passed": False, "type": "command_exit", "gate": False,
                         "score": 0.0, "message": "exit 1", "name": "c#0", "extra": 1}],
                forbidden=[{"details": "rm -rf /", "violated": True, "rule": "no rm"}]),
        _result("c.r0", "error", error="file \udcff not UTF-8", not_a_field=1),
        _result("d.r0", "pass", timings={"z": 1.0, "a": 2.0}, tokens={"out": 3, "in": 4}),
    ]


def _results_file(store: RunStore, records: dict[str, TrialRecord], order: list[str]) -> dict:
    return {"schema_version": 1, "run_id": store.run_id, "summary": {"trials": len(order)},
            "trials": [records[i] for i in order], "tasks": [{"id": "a", "n": 1}]}


def test_the_end_reads_memory_and_writes_the_same_results_json(tmp_path, monkeypatch):
    monkeypatch.setenv("PROCTOR_HOME", str(tmp_path / "home"))
    store = RunStore.create(str(tmp_path / "run"))
    assert store.finished() == {}  # as run/execute.py does first
    odd = _odd_results(tmp_path)
    for record in odd:
        store.append(record)
    store.close()

    def no_reading(**_: object) -> None:
        raise AssertionError("results.jsonl read again")

    monkeypatch.setattr(store, "finished", no_reading)
    order = [r["id"] for r in odd]
    mine = store.written()
    store.write_results(_results_file(store, mine, order))

    reader = RunStore(store.dir, store.run_id)  # what reading the lines back gives
    back = reader.finished()
    assert reader.rejected == 0 and mine == back
    assert [list(mine[i]) for i in order] == [list(back[i]) for i in order]  # key order
    write_json(tmp_path / "read-back.json", _results_file(store, back, order))
    assert (store.dir / "results.json").read_bytes() == \
        (tmp_path / "read-back.json").read_bytes()
    assert json.loads((store.dir / "results.json").read_text())["trials"][2]["error"] == \
        "file \udcff not UTF-8"


def test_a_resumed_run_keeps_what_it_read_and_adds_what_it_ran(tmp_path, monkeypatch):
    monkeypatch.setenv("PROCTOR_HOME", str(tmp_path / "home"))
    first = RunStore.create(str(tmp_path / "run"))
    first.finished()
    first.append(_result("a.r0", "pass"))
    first.close()
    store = RunStore(first.dir, first.run_id)  # --resume
    assert set(store.finished()) == {"a.r0"}
    store.append(_result("b.r0", "fail"))
    store.close()
    monkeypatch.setattr(store, "finished", lambda **_: pytest.fail("read again"))
    assert {k: v["status"] for k, v in store.written().items()} == \
        {"a.r0": "pass", "b.r0": "fail"}


def test_a_line_someone_else_appended_is_still_refused_and_removed(tmp_path, monkeypatch):
    monkeypatch.setenv("PROCTOR_HOME", str(tmp_path / "home"))
    store = RunStore.create(str(tmp_path / "run"))
    store.finished()
    store.append(_result("a.r0", "pass"))
    line = store.jsonl_path.read_text()
    with store.jsonl_path.open("a") as f:  # a copy of a signed line under another id
        f.write(line.replace('"a.r0"', '"z.r0"'))
    store.append(_result("b.r0", "fail"))
    store.close()
    assert set(store.written()) == {"a.r0", "b.r0"} and store.rejected == 1
    assert [json.loads(x)["id"] for x in store.jsonl_path.read_text().splitlines()] == \
        ["a.r0", "b.r0"]


def test_a_trial_run_again_is_read_back_once_its_last(tmp_path, monkeypatch):
    """--resume runs an infrastructure error again: its second line wins, the file keeps
    one line per trial, as reading it back at the end always left it."""
    monkeypatch.setenv("PROCTOR_HOME", str(tmp_path / "home"))
    first = RunStore.create(str(tmp_path / "run"))
    first.finished()
    first.append(_result("b.r0", "error", error="infrastructure error: the node was lost"))
    first.close()
    store = RunStore(first.dir, first.run_id)  # --resume
    store.finished()
    store.append(_result("b.r0", "pass"))
    store.append(_result("c.r0", "pass"))
    store.append(_result("c.r0", "fail"))  # stored twice in one run (an unstorable result)
    store.close()
    assert {k: v["status"] for k, v in store.written().items()} == \
        {"b.r0": "pass", "c.r0": "fail"}
    assert [(json.loads(x)["id"], json.loads(x)["status"])
            for x in store.jsonl_path.read_text().splitlines()] == \
        [("b.r0", "pass"), ("c.r0", "fail")]
