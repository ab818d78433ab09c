"""run.json and results.json as typed data (proctor.results): a real run's files carry a
schema_version and validate against the JSON Schema `proctor schema` prints; every reader
loads them through the checked types, keeps what it does not know, still reads runs written
before the version existed, and refuses a malformed file with a usage error that says where."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from proctor.errors import UsageError
from proctor.model import AgentDef, TaskDef
from proctor.report.data import load_run
from proctor.results import (
    SCHEMA_VERSION,
    CheckRecord,
    TrialRecord,
    new_check,
    new_forbidden,
    new_trial,
    parse_results,
    trial_from_line,
)
from proctor.scoring import summarize
from proctor.store import RunStore, write_json
from tests.helpers.cli import Cli


def _schema(kind: str) -> dict:
    out = Cli()("schema", kind, timeout=60)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_a_real_run_writes_versioned_files_valid_against_the_printed_schemas(oracle_run: Path):
    results = json.loads((oracle_run / "results.json").read_text())
    meta = json.loads((oracle_run / "run.json").read_text())
    assert results["schema_version"] == meta["schema_version"] == SCHEMA_VERSION
    jsonschema.validate(results, _schema("results"))
    jsonschema.validate(meta, _schema("run"))
    assert results["trials"] and load_run(oracle_run).results == results


def test_the_schema_says_what_a_trial_must_have():
    schema = _schema("results")
    trial = schema["$defs"]["TrialRecord"]
    assert set(trial["required"]) == {"id", "task_id", "status"}
    assert trial["properties"]["status"]["enum"] == ["pass", "fail", "error"]
    bad = {"trials": [{"id": "t", "task_id": "x", "status": "passed"}]}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, schema)


GOLDEN = Path(__file__).parent / "data" / "records"


def _records() -> list[TrialRecord]:
    from tests.report.data.records.trials import TRIALS

    return [new_trial(**{**t, "checks": [new_check(**c) for c in t.get("checks", [])],
                         "forbidden": [new_forbidden(**f) for f in t.get("forbidden", [])]})
            for t in TRIALS]


def _written(trials: list[TrialRecord], path: Path) -> bytes:
    tasks = [TaskDef(id=i, dialect="suite", source="s.yaml", base_dir=".", prompt="",
                     agent=AgentDef(), checks=[]) for i in ("alpha", "beta", "gamma")]
    scored = summarize(_records(), tasks)
    write_json(path, {"schema_version": 1, "run_id": "golden", "summary": scored["summary"],
                      "trials": trials, "tasks": scored["tasks"], "models": scored["models"],
                      "help_modes": scored["help_modes"], "exit_code": scored["exit_code"]})
    return path.read_bytes()


def test_the_records_write_the_bytes_the_two_shapes_wrote(tmp_path: Path, monkeypatch):
    # One record per trial, check and rule (proctor.results) writes results.json,
    # results.jsonl and a resumed run's results.json byte for byte as the dataclasses and
    # their to_dict did (the golden files: tests/report/data/records/trials.py says how).
    trials = _records()
    assert all(list(t) == list(TrialRecord.__annotations__) for t in trials)
    assert _written(trials, tmp_path / "results.json") == (GOLDEN / "results.json").read_bytes()
    monkeypatch.setenv("PROCTOR_HOME", str(tmp_path / "home"))
    (tmp_path / "home" / "keys").mkdir(parents=True)
    (tmp_path / "home" / "keys" / "golden.key").write_bytes(b"k" * 32)
    (tmp_path / "run").mkdir()
    store = RunStore(tmp_path / "run", "golden")
    for t in trials:
        store.append(t)
    store.close()
    assert (tmp_path / "run" / "results.jsonl").read_bytes() == (
        GOLDEN / "results.jsonl").read_bytes()
    back = list(store.finished(repair=False).values())
    assert _written(back, tmp_path / "resumed.json") == (GOLDEN / "resumed.json").read_bytes()


def test_a_record_has_every_key_in_order_and_reads_back_older_lines():
    made = new_trial(id="t.r0", task_id="t", status="pass")
    assert list(made) == list(TrialRecord.__annotations__)
    assert made["checks"] == [] and made["tokens"] == {"input": 0, "output": 0}
    assert new_trial(id="u", task_id="u", status="pass")["checks"] is not made["checks"]
    assert list(new_check(name="c", type="x", passed=True, score=1.0, weight=1.0, gate=False,
                          message="")) == list(CheckRecord.__annotations__)
    # A line from an older proctor (fewer keys), or a newer one (a key unknown here).
    line = {"id": "t.r0", "task_id": "t", "status": "fail", "from_later": 1,
            "checks": [{"name": "c", "type": "x", "passed": False, "score": 0.0,
                        "weight": 1.0, "gate": False, "message": ""}],
            "forbidden": [{"rule": "r", "violated": False}]}
    back = trial_from_line(line)
    assert list(back) == list(TrialRecord.__annotations__) and back["replica"] == 0
    assert back["checks"][0]["error"] is None and back["forbidden"][0]["details"] == ""
    for torn in ({"id": "t", "task_id": "t"}, {**line, "checks": [1]}):
        with pytest.raises((KeyError, TypeError)):
            trial_from_line(torn)


def test_a_run_written_before_schema_version_and_unknown_keys_load(mixed_run: Path):
    path = mixed_run / "results.json"
    results = json.loads(path.read_text())
    assert "schema_version" not in results  # written as runs before it were
    results["from_a_newer_proctor"] = {"kept": True}
    results["trials"][0]["also_new"] = [1, 2]
    path.write_text(json.dumps(results))
    run = load_run(mixed_run)
    assert run.results["from_a_newer_proctor"] == {"kept": True}
    assert run.trials[0]["also_new"] == [1, 2]
    assert run.results == results


def test_a_name_that_was_not_utf8_still_loads():
    # results.json keeps such a name as a \udcXX escape, which only Python's json reads.
    text = json.dumps({"trials": [{"id": "t\udcff", "task_id": "x", "status": "pass"}]})
    assert parse_results(text)["trials"][0]["id"] == "t\udcff"


def test_a_malformed_results_file_is_a_usage_error_naming_the_key(mixed_run: Path):
    path = mixed_run / "results.json"
    results = json.loads(path.read_text())
    results["trials"][2]["status"] = 1
    del results["trials"][3]["task_id"]
    path.write_text(json.dumps(results))
    with pytest.raises(UsageError, match=r"results.json is not a proctor results.json file: "
                       r"trials\.2\.status: .*trials\.3\.task_id: Field required"):
        load_run(mixed_run)
    out = Cli()("report", str(mixed_run), "--format", "md", timeout=60)
    assert out.returncode == 2 and "trials.2.status" in out.stderr
    assert "Traceback" not in out.stderr


def test_a_malformed_run_json_is_a_usage_error(mixed_run: Path):
    (mixed_run / "run.json").write_text(json.dumps({"run_id": 7}))
    with pytest.raises(UsageError, match=r"run.json is not a proctor run.json file: run_id: "):
        load_run(mixed_run)
