"""Every upstream documentation example (as a fixture) loads into the expected TaskDefs."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from proctor.spec.load import load_specs
from tests.helpers import REPO

VALID = "tests/fixtures/specs/valid"


@pytest.fixture(scope="module")
def tasks():
    result = load_specs([str(REPO / VALID)])
    assert result.warnings == []
    return {t.id: t for t in result.tasks}


def test_all_ten_assertion_types(tasks):
    types = {c.type for t in tasks.values() if t.source.endswith("suite-assertions.yaml") for c in t.checks}
    assert types == {"exit_code", "output_contains", "output_equals", "error_contains", "file_exists",
                     "file_contains", "ran", "not_ran", "run_count", "verify"}
    counts = tasks["command-counts"].checks
    assert (counts[0].config.min, counts[0].config.max, counts[1].config.max) == (2, 5, None)
    assert [c.name for c in tasks["create-and-verify"].checks] == [
        "exit_code#0", "output_contains#1", "file_exists#2", "file_contains#3", "not_ran#4"]


def test_all_eight_invariant_types(tasks):
    t = tasks["invariant-examples"]
    assert {c.type for c in t.checks} == {"command_exit", "file_exists", "file_absent", "file_content",
                                          "sql", "http_mock_assertions", "custom", "llm_as_judge"}
    by_name = {c.name: c for c in t.checks}
    assert by_name["tests_pass"].gate and by_name["reconciliation_clean"].weight == 0.5
    assert by_name["email_tone"].config.pass_threshold == 0.7


def test_weights_and_gates_patterns(tasks):
    t = tasks["gate-plus-quality"]
    assert [(c.name, c.weight, c.gate) for c in t.checks] == [
        ("tests_pass", 1.0, True), ("no_console_log", 0.3, False), ("small_diff", 0.2, False)]
    assert t.pass_threshold == 0.85
    assert [c.type for c in tasks["sql-http-judge"].checks] == ["sql", "http_mock_assertions", "llm_as_judge"]
    assert tasks["sql-http-judge"].services[0].kind == "postgres"  # from `image: postgres:16`
    assert tasks["custom-python-check"].checks[0].config.runs_in == "sandbox"


def test_reconciliation(tasks):
    t = tasks["reconciliation"]
    db, smtp = t.services
    assert (db.kind, smtp.kind, smtp.config["record"]) == ("postgres", "http_mock", True)
    assert db.config["seed_file"].endswith("tests/fixtures/specs/valid/seeds/customers.sql")
    assert [(s.name, s.value, s.generated) for s in t.secrets] == [
        ("SMTP_TOKEN", None, True), ("REGION", "eu-west-1", False)]
    assertions = t.checks[1].config.assertions
    assert assertions[0].filters == {"method": "POST", "path": "/api/messages", "to": "finance@co"}
    assert t.checks[2].config.input_from == "smtp.last_request.body"
    assert (t.repeat, t.replica_aggregation) == (3, "majority")


def test_rest_api(tasks):
    t = tasks["rest-api"]
    (support,) = t.services
    assert support.config["routes"][0]["response"]["tickets"][0] == {"id": "T-1", "state": "open"}
    assert support.config["wait_for"].startswith("curl")
    assert t.files["README.md"].startswith("The support API") and t.packages == ["curl", "jq"]


def test_multi_file_suite(tasks):
    ids = [i for i, t in tasks.items() if t.cli == "jq"]
    assert ids == ["jq-keys", "jq-sum", "jq-length", "jq-filter"]
    assert tasks["jq-length"].source.endswith("multi/tasks/nested/deeper/length.yml")
    assert (tasks["jq-length"].repeat, tasks["jq-sum"].repeat) == (1, 2)
    assert tasks["jq-sum"].help_modes == ["injected", "discoverable"]


@pytest.mark.skipif(shutil.which("jq") is None, reason="the suite's solutions use jq")
def test_multi_file_suite_solutions_work(tasks, tmp_path):
    # Not the runner: a smoke test that the fixture's solutions and verify commands agree.
    for task_id in ("jq-keys", "jq-sum", "jq-length", "jq-filter"):
        t = tasks[task_id]
        work = tmp_path / task_id
        work.mkdir()
        env = {**os.environ, **{k: v.replace("{{workdir}}", str(work)) for k, v in t.env.items()}}
        out = ""
        for cmd in t.setup + t.solution:
            proc = subprocess.run(["sh", "-c", cmd], cwd=work, env=env, capture_output=True, text=True)
            assert proc.returncode == 0, (task_id, cmd, proc.stderr)
            out = proc.stdout
        for check in t.checks:
            if check.type == "output_equals":
                assert out.strip() == check.config.text.strip()
            if check.type == "verify":
                proc = subprocess.run(["sh", "-c", check.config.run], cwd=work, env=env,
                                      capture_output=True, text=True)
                assert proc.stdout.strip() == check.config.output_equals
