"""One real `proctor run` (two long-named mock models, two help modes, three repeats) read the
way a user reads it: the terminal at 80 columns, summary.md, junit.xml through junitparser
and junit2html, results.json. The browser half is in test_browser.py."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.report import REAL_CAREFUL, REAL_SLOPPY

pytestmark = pytest.mark.slow


def test_the_terminal_at_80_columns(real_run):
    out = (real_run.parent / "stdout.txt").read_text()
    lines = out.splitlines()
    assert all(len(line) <= 80 for line in lines), out
    # help modes are rows of their own, task labels keep them, statuses are per condition
    rows = [line for line in lines if line.startswith("init-repo [")]
    assert len(rows) == 4 and sum("PASS" in r for r in rows) == 1
    assert not any("FLAKY" in r for r in rows)  # identical conditions agree here
    # the models table keeps the tokens (and would keep a cost) at 80 columns
    assert re.search(r"│ +\d+(\.\d)?k/\d+ │ +free", out)
    # does --help help? the careful model's answer, every figure on one line
    at = lines.index(f"llm · {REAL_CAREFUL}")
    assert lines[at + 3].split() == ["injected", "│", "6/6", "│", "none", "│", "3/6", "│",
                                     "-50", "pts", "│", "-81", "to", "0", "│", "0.182"]
    assert "what went wrong: proctor show run --failed" in out
    assert out.count("24 trials: 15 passed, 9 failed, 0 errored") == 1  # printed once


def test_results_and_summary_answer_does_help_help(real_run):
    results = json.loads((real_run / "results.json").read_text())
    effects = {e["agent"]: e for e in results["help_modes"]}
    assert (effects[REAL_CAREFUL]["passed_a"], effects[REAL_CAREFUL]["passed_b"]) == (6, 3)
    assert (effects[REAL_SLOPPY]["passed_a"], effects[REAL_SLOPPY]["passed_b"]) == (3, 3)
    rows = {(r["task_id"], r["model"], r["help_mode"]): r for r in results["tasks"]}
    assert rows[("init-repo", REAL_CAREFUL, "injected")]["pass_at_k"]["3"] == 1.0
    assert rows[("init-repo", REAL_CAREFUL, "none")]["pass_hat_k"]["3"] == 0.0
    md = (real_run / "summary.md").read_text()
    assert (f"| llm · {REAL_CAREFUL} | injected | 6/6 | none | 3/6 | -50 pts (-81 to 0) | 0.182 |"
            in md)
    # failing checks apart per help mode: the careful model fails only without --help
    assert (f"**init-repo \\[none\\]** · llm · {REAL_CAREFUL} · `ran#0` (ran) failed in 3 of 3"
            in md)
    assert f"**init-repo \\[injected\\]** · llm · {REAL_CAREFUL}" not in md
    for path in real_run.rglob("*"):
        if path.is_file():
            assert "/proctor-" not in path.read_text(errors="replace"), path


def test_junit_read_by_junitparser_and_junit2html(real_run, tmp_path):
    from junit2htmlreport.parser import Junit
    from junitparser import Failure, JUnitXml

    path = real_run / "junit.xml"
    xml = JUnitXml.fromfile(str(path))
    suites = {s.name: s for s in xml}
    assert len(suites) == 8  # task × model × help mode
    none = suites[f"init-repo [llm · {REAL_CAREFUL}, none]"]
    assert (none.tests, none.failures) == (3, 3)
    assert suites[f"init-repo [llm · {REAL_CAREFUL}, injected]"].failures == 0
    (failure,) = next(iter(none)).result
    assert isinstance(failure, Failure)
    assert failure.message == ("ran#0: no agent command matches 'git init' (ran 1 command: echo "
                               "nothing); file_exists#1: file not found: .git/HEAD; the "
                               "workspace holds: nothing")
    report = Junit(filename=str(path))
    assert len(report.suites) == 8 and sum(len(s.failed()) for s in report.suites) == 9
    exe = Path(sys.executable).parent / "junit2html"
    done = subprocess.run([str(exe), str(path), str(tmp_path / "junit.html")],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "file not found: .git/HEAD" in (tmp_path / "junit.html").read_text()
