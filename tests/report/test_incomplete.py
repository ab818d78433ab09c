"""Issue 38: an interrupted run whose finished trials all passed was headed ✅ / passed. Every
place a run is shown marks it incomplete: the terminal's tables, summary.md, report.html,
junit.xml, `proctor show` (list and --failed) and `proctor runs` (tests/report/test_runs.py)."""

from __future__ import annotations

import io
import json
import xml.etree.ElementTree as ET

from rich.console import Console

from proctor.report.html import render_html
from proctor.report.junit import render_junit
from proctor.report.markdown import render_markdown
from proctor.report.show import TrialFilter, show_main
from proctor.report.terminal import print_summary
from tests.helpers.report import trial, write_run


def _interrupted(tmp_path, second="pass"):
    """A run stopped by Ctrl-C after two trials (results.json written)."""
    run_dir = write_run(tmp_path, "20260302T101500Z-ab12cd",
                        [trial("a.r0", "a", "pass"), trial("b.r0", "b", second)])
    path = run_dir / "results.json"
    results = json.loads(path.read_text())
    results.update(complete=False, interrupted=True)
    path.write_text(json.dumps(results))
    return run_dir, results


def test_every_report_marks_an_interrupted_run_incomplete(tmp_path, capsys, monkeypatch):
    run_dir, results = _interrupted(tmp_path)
    console = Console(record=True, file=io.StringIO(), width=140, color_system=None)
    print_summary(results, console)
    text = console.export_text(styles=False)
    assert text.rstrip().endswith("INCOMPLETE (interrupted)") and "PASSED" not in text

    md = render_markdown(results)
    assert md.startswith("## ⏸️ proctor run `20260302T101500Z-ab12cd` (incomplete)")

    html = render_html(results)
    assert "Incomplete run: it was interrupted" in html
    assert "<title>proctor run 20260302T101500Z-ab12cd (incomplete)</title>" in html
    assert "</span> 20260302T101500Z-ab12cd (incomplete)</h1>" in html

    root = ET.fromstring(render_junit(results))
    assert root.get("name") == "proctor 20260302T101500Z-ab12cd (incomplete: interrupted)"
    for suite in root.iter("testsuite"):
        props = {p.get("name"): p.get("value") for p in suite.iter("property")}
        assert props["run_incomplete"] == ("interrupted: only the trials that finished are "
                                           "here; finish it with proctor run --resume")

    monkeypatch.setenv("COLUMNS", "160")
    assert show_main(str(run_dir), None) == 0
    out = " ".join(capsys.readouterr().out.split())  # a long path wraps
    assert out.startswith("run 20260302T101500Z-ab12cd (incomplete: interrupted; finish it "
                          f"with proctor run --resume {run_dir}) "), out


def test_show_failed_marks_an_interrupted_run_incomplete(tmp_path, capsys, monkeypatch):
    run_dir, _ = _interrupted(tmp_path, second="fail")
    monkeypatch.setenv("COLUMNS", "160")
    assert show_main(str(run_dir), None, TrialFilter(failed=True)) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert out.startswith("run 20260302T101500Z-ab12cd (incomplete: interrupted; finish it "
                          f"with proctor run --resume {run_dir}): 1 trial did not pass"), out
