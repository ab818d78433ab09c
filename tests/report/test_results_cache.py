"""results.json and run.json are checked by a validator built from a core schema kept in the
cache directory (proctor.results._validator): a reader after the first needs no pydantic,
checks exactly as pydantic's TypeAdapter does, and a cache file naming anything but
proctor.results' own types is not used."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from proctor import results

TRIAL = {"id": "t.r0", "task_id": "t", "model": None, "help_mode": None, "replica": 0,
         "params": {}, "status": "pass", "composite_score": 1.0, "checks": [],
         "new_key": "kept"}
GOOD = {"run_id": "r", "started_at": "2026-01-01T00:00:00+00:00", "finished_at": None,
        "summary": {"trials": 1, "passed": 1, "failed": 0, "errored": 0, "pass_rate": 1.0},
        "trials": [TRIAL], "tasks": [], "models": [], "exit_code": 0}
BAD = {**GOOD, "trials": [{**TRIAL, "status": "maybe"}]}

READER = """
import json, sys
from proctor import results
ok = results.parse_results(sys.argv[1].encode())
try:
    results.parse_results(sys.argv[2].encode())
    bad = None
except results.InvalidRunFile as e:
    bad = str(e)
print(json.dumps({"ok": ok, "bad": bad, "pydantic": "pydantic" in sys.modules}))
"""


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("PROCTOR_CACHE", str(tmp_path))
    results._validator.cache_clear()
    yield tmp_path
    results._validator.cache_clear()


def read_in_fresh_interpreter() -> dict:
    out = subprocess.run([sys.executable, "-c", READER, json.dumps(GOOD), json.dumps(BAD)],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def pydantics_verdict(data: dict) -> str | None:
    from pydantic import TypeAdapter, ValidationError

    try:
        TypeAdapter(results.RunResults).validate_python(data)
    except ValidationError as e:
        return results._problems(e)
    return None


def test_a_reader_after_the_first_checks_as_pydantic_does_without_it(cache):
    first = read_in_fresh_interpreter()  # makes the schema with pydantic, keeps it
    assert sorted(p.name.split("-")[2] for p in cache.glob("results-schema-*.json")) == ["results"]
    later = read_in_fresh_interpreter()
    assert not later["pydantic"]
    assert later["ok"] == first["ok"] == GOOD  # a key proctor does not know is kept
    assert later["bad"] == first["bad"] == pydantics_verdict(BAD)
    assert "trials.0.status" in later["bad"]


def test_a_cache_file_naming_anything_else_is_not_used(cache):
    results.parse_results(json.dumps(GOOD))
    (path,) = cache.glob("results-schema-results-*.json")
    schema = json.loads(path.read_text())
    text = json.dumps(schema)
    assert '"cls": "TrialRecord"' in text
    # A forged file naming something that is not one of proctor.results' types ...
    for other in ("os", "Path", "InvalidRunFile", "nothing"):
        path.write_text(text.replace('"cls": "TrialRecord"', f'"cls": "{other}"'))
        results._validator.cache_clear()
        with pytest.raises(results.InvalidRunFile, match="trials.0.status"):
            results.parse_results(json.dumps(BAD))
        # ... is made again from the types, not used.
        assert f'"cls": "{other}"' not in path.read_text()
    assert results.parse_results(json.dumps(GOOD)) == GOOD
