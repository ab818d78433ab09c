"""run.json and results.json as typed data (proctor.results): a real run's files carry a
schema_version and validate against the JSON Schema `proctor schema` prints; every reader
loads them through the checked types, keeps what it does not know, still reads runs written
before the version existed, and refuses a malformed file with a usage error that says where."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import jsonschema
import pytest

from proctor.errors import UsageError
from proctor.model import CheckResult, ForbiddenResult, TrialResult
from proctor.report.data import load_run
from proctor.results import (
    SCHEMA_VERSION,
    CheckRecord,
    ForbiddenRecord,
    TrialRecord,
    parse_results,
)
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


def test_the_json_types_name_every_field_of_the_in_memory_ones():
    # A field added to a dataclass and not to its JSON form would be written unchecked.
    for record, cls in ((TrialRecord, TrialResult), (CheckRecord, CheckResult),
                        (ForbiddenRecord, ForbiddenResult)):
        assert set(record.__annotations__) == {f.name for f in dataclasses.fields(cls)}, cls


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
