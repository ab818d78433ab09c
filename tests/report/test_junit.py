"""junit.xml read by a real JUnit consumer (junitparser) and validated against the schema."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from junitparser import Error, Failure, JUnitXml
from lxml import etree

from proctor.report import write_reports
from proctor.report.junit import render_junit

XSD = Path(__file__).parent / "junit.xsd"


def _write(run_dir: Path) -> Path:
    results = json.loads((run_dir / "results.json").read_text())
    (path,) = write_reports(run_dir, results, ["junit"])
    assert path == run_dir / "junit.xml"
    return path


def test_validates_against_junit_schema(mixed_run):
    schema = etree.XMLSchema(etree.parse(str(XSD)))
    doc = etree.parse(str(_write(mixed_run)))
    assert schema.validate(doc), schema.error_log


def test_schema_rejects_what_it_should():
    # The schema is only worth something if it says no: a testcase without a name.
    schema = etree.XMLSchema(etree.parse(str(XSD)))
    bad = etree.fromstring(b'<testsuites><testsuite name="s" tests="1" failures="0" errors="0">'
                           b'<testcase classname="c" time="1"/></testsuite></testsuites>')
    assert not schema.validate(bad)


def test_junitparser_reads_counts_and_results(mixed_run):
    xml = JUnitXml.fromfile(str(_write(mixed_run)))
    suites = list(xml)
    results = json.loads((mixed_run / "results.json").read_text())
    trials = results["trials"]
    assert sum(s.tests for s in suites) == len(trials) == 44
    assert sum(s.failures for s in suites) == results["summary"]["failed"] == 16
    assert sum(s.errors for s in suites) == results["summary"]["errored"] == 3
    cases = {c.name: (s, c) for s in suites for c in s}
    assert set(cases) == {t["id"] for t in trials}

    suite, case = cases["jq-filter.openai-gpt-4.1.injected.r0"]
    assert case.classname == "jq-filter/llm · openai/gpt-4.1"
    assert case.time == pytest.approx(4.0)
    (failure,) = case.result
    assert isinstance(failure, Failure)
    assert failure.type == "output_equals"
    assert failure.message.startswith("output_equals#1: expected '3'")
    assert len(failure.message) <= 501  # the attribute is cut, the body has the rest
    assert "output_equals#1 (output_equals, weight 1.0" in failure.text
    props = {p.name: p.value for p in suite.properties()}
    assert props["model"] == "openai/gpt-4.1"
    assert props["help_mode"] == "injected"
    assert props["task_status"] == "fail"

    _, case = cases["jq-keys.openai-gpt-4.1.injected.r0"]
    (error,) = case.result
    assert isinstance(error, Error)
    assert "529 overloaded" in error.message

    _, case = cases["git-init.openai-gpt-4.1.injected.r0"]
    assert case.is_passed and case.system_out == "Initialized empty Git repository"


def test_scenario_trials_carry_params_gates_and_forbidden(mixed_run):
    xml = JUnitXml.fromfile(str(_write(mixed_run)))
    cases = {c.name: (s, c) for s in xml for c in s}
    suite, case = cases["refund-order.db=mysql.r1"]
    assert case.classname == "refund-order"  # no model: classname is the task id
    props = {p.name: p.value for p in suite.properties()}
    assert props["param.db"] == "mysql" and props["task_status"] == "error"  # one replica errored
    assert "model" not in props
    (failure,) = case.result
    assert failure.type == "forbidden"
    assert failure.message.startswith("forbidden secrets_in_logs: [REDACTED:STRIPE_KEY]")
    # Partial score below the threshold with a failed check names that check.
    _, case = cases["refund-order.db=mysql.r0"]
    assert case.result[0].message.startswith("email_sent: request_count")


def test_hostile_output_stays_well_formed(mixed_run):
    text = _write(mixed_run).read_text()
    for ch in ("\x00", "\x1b", "\x07"):
        assert ch not in text
    xml = JUnitXml.fromfile(str(mixed_run / "junit.xml"))
    outs = [c.system_out for s in xml for c in s if c.system_out and "pwned" in c.system_out]
    assert outs and all('<script>alert("pwned")</script> ]]>' in o for o in outs)
    assert all("[REDACTED:API_KEY]" in o for o in outs)


def test_empty_run_is_valid():
    schema = etree.XMLSchema(etree.parse(str(XSD)))
    doc = etree.fromstring(render_junit({"run_id": "x", "trials": []}).encode())
    assert schema.validate(doc), schema.error_log
    assert doc.get("tests") == "0"


def test_junit2html_reads_every_row_and_renders_it(mixed_run, tmp_path):
    """junit2html, a second consumer: its parser sees every tasks row (task × model × help
    mode × params) as a suite with its trials, and its command renders the file."""
    import subprocess
    import sys

    from junit2htmlreport.parser import Junit

    path = _write(mixed_run)
    report = Junit(filename=str(path))
    results = json.loads((mixed_run / "results.json").read_text())
    assert len(report.suites) == len(results["tasks"]) == 16
    cases = [c for s in report.suites for c in s.all()]
    assert len(cases) == 44
    assert sum(len(s.failed()) for s in report.suites) == 16 + 3  # failures and errors
    names = {s.name for s in report.suites}
    assert "git-branch [llm · anthropic/claude-sonnet-4-5, injected]" in names
    assert "git-branch [llm · anthropic/claude-sonnet-4-5, none]" in names  # help modes apart
    assert "refund-order [command, db=mysql]" in names  # params apart
    props = {p.name: p.value for p in next(s for s in report.suites
                                           if s.name == "refund-order [command, db=mysql]").properties}
    assert props["param.db"] == "mysql" and props["agent_model"] == "command"
    out = tmp_path / "junit.html"
    exe = Path(sys.executable).parent / "junit2html"
    done = subprocess.run([str(exe), str(path), str(out)], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    page = out.read_text()
    assert "jq-filter.openai-gpt-4.1.injected.r0" in page and "<script>alert" not in page


def test_a_failures_message_carries_the_useful_part(tmp_path):
    """The message attribute (what CI shows in a list) names each failed check with its first
    line and its end, where a test runner says why; the body has every message."""
    from tests.helpers.report import check, trial, write_run
    from tests.report.test_show import UNITTEST

    t = trial("fix.r0", "fix", "fail", model="m", checks=[
        check("tests_pass", "command_exit", False, UNITTEST),
        check("changelog", "file_content", False, "CHANGELOG.md does not contain 'Fix'"),
        check("small_diff", "custom", True, "2 changed lines")])
    xml = JUnitXml.fromfile(str(_write(write_run(tmp_path, "r", [t]))))
    (case,) = [c for s in xml for c in s]
    (failure,) = case.result
    msg = failure.message
    assert msg.startswith("tests_pass: `python3 -m unittest discover -s tests -t . -q` exited "
                          "with 1, expected exit code 0 ")
    assert "AssertionError: 5.5 != 7" in msg and "FAILED (failures=2)" in msg
    assert msg.endswith("; changelog: CHANGELOG.md does not contain 'Fix'")
    assert len(msg) <= 500 and "=====" not in msg and "small_diff" not in msg
    assert "FAIL: test_sum" in failure.text and "FAILED (failures=2)" in failure.text
    # three long failures share the attribute: each keeps its end
    t["checks"] = [check(f"c{i}", "command_exit", False, UNITTEST) for i in range(3)]
    xml = JUnitXml.fromfile(str(_write(write_run(tmp_path, "r2", [t]))))
    msg = next(c for s in xml for c in s).result[0].message
    assert len(msg) <= 500 and msg.count("FAILED (failures=2)") == 3 and msg.count(" … ") == 3
