"""`proctor schema`: both dialects, from the models and the check registry."""

from __future__ import annotations

import glob

import jsonschema
import pytest
import yaml

from proctor.checks import assertion_types, invariant_types
from proctor.spec.schema import json_schema

VALID = sorted(glob.glob("tests/fixtures/specs/valid/**/*.y*ml", recursive=True))


@pytest.fixture(scope="module")
def validator():
    schema = json_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


@pytest.mark.parametrize("path", VALID)
def test_every_valid_fixture_matches_the_schema(validator, repo, path):
    with open(repo / path) as f:
        data = yaml.safe_load(f)
    assert list(validator.iter_errors(data)) == []


@pytest.mark.parametrize("data", [
    {"cli": "x", "tasks": [{"id": "a", "intent": "b", "assert": [{"file_contain": "x"}]}]},
    {"cli": "x", "tasks": [{"id": "a", "intent": "b", "assert": [{"exit_code": 0, "ran": "x"}]}]},
    {"cli": "x", "tasks": [{"id": "a", "intent": "b", "assert": [], "max_turns": 5}]},
    {"cli": "x", "tasks": [{"id": "a", "intent": "b", "assert": [{"exit_code": 0}], "max_turns": 21}]},
    {"cli": "x", "providers": [], "tasks": ["tasks/*.yaml"]},
    {"version": 2, "task": {"prompt": "p"}, "invariants": {"a": {"description": "d", "check": {"type": "file_exists", "path": "x"}}}},
    {"version": 1, "task": {"prompt": "p"}, "invariants": {"a": {"check": {"type": "file_exists", "path": "x"}}}},
    {"version": 1, "task": {"prompt": "p"}, "invariants": {"a": {"description": "d", "check": {"type": "sql", "service": "db"}}}},
    {"version": 1, "task": {"prompt": "p"}, "invariants": {"a": {"description": "d", "check": {"type": "nope"}}}},
    {"version": 1, "task": {"prompt": "p"}, "invariants": {}, "extra": 1},
])
def test_schema_rejects_what_the_loader_rejects(validator, data):
    assert list(validator.iter_errors(data)) != []


def test_every_check_type_is_described():
    schema = json_schema()
    assertions = schema["$defs"]["Assertion"]["oneOf"]
    assert [a["title"] for a in assertions] == list(assertion_types())
    assert all(a["description"] for a in assertions)
    checks = schema["$defs"]["Invariant"]["properties"]["check"]["oneOf"]
    names = [schema["$defs"][c["$ref"].rsplit("/", 1)[-1]]["properties"]["type"]["const"] for c in checks]
    assert names == list(invariant_types())


def test_fields_carry_descriptions():
    defs = json_schema()["$defs"]
    for name in ("Suite", "SuiteTask", "Scenario", "Invariant", "Service", "Secret"):
        for key, prop in defs[name]["properties"].items():
            assert prop.get("description") or "$ref" in prop, f"{name}.{key} has no description"
