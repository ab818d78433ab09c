"""Where isolation cannot be built, `proctor run` stops before any trial, saying what is
missing; `--isolation none` runs, and every output says in words that it was not isolated."""

from __future__ import annotations

import json

SPEC = """
cli: sh
tasks:
  - id: t
    intent: x
    solution: ["echo hi > f"]
    assert: [{file_contains: {path: f, text: hi}}]
"""


def test_no_bubblewrap_is_exit_2_before_any_trial(cli, tmp_path):
    (tmp_path / "spec.yaml").write_text(SPEC)
    empty = tmp_path / "bin"
    empty.mkdir()
    out = cli("run", "spec.yaml", "--agent", "oracle", "--output-dir", "run",
              env={"PATH": str(empty)})
    assert out.returncode == 2, out.stdout + out.stderr
    assert "bwrap" in out.stderr and "--isolation none" in out.stderr
    assert "Traceback" not in out.stderr
    assert not (tmp_path / "run" / "results.jsonl").exists()


def test_an_unisolated_run_says_so_everywhere(cli, tmp_path):
    (tmp_path / "spec.yaml").write_text(SPEC)
    out = cli("run", "spec.yaml", "--agent", "oracle", "--output-dir", "run", "--isolation",
              "none", "--format", "json,md,html,junit")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "not isolated" in out.stderr.lower() and "NOT ISOLATED" in out.stdout
    run = tmp_path / "run"
    isolation = json.loads((run / "results.json").read_text())["isolation"]
    assert isolation["isolated"] is False
    # Issue 25.1: without a box there is no grader box either, and the note says so.
    assert "checks that execute something" in isolation["note"]
    assert "checks that execute something" in out.stderr
    assert "Not isolated" in (run / "summary.md").read_text()
    assert "Not isolated" in (run / "report.html").read_text()
    assert 'name="not_isolated"' in (run / "junit.xml").read_text()


def test_an_isolated_run_says_nothing_of_the_kind(cli, tmp_path):
    (tmp_path / "spec.yaml").write_text(SPEC)
    out = cli("run", "spec.yaml", "--agent", "oracle", "--output-dir", "run", "--format", "md")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "not isolated" not in out.stdout.lower() + out.stderr.lower()
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    assert results["isolation"]["isolated"] is True
    assert "not isolated" not in (tmp_path / "run" / "summary.md").read_text().lower()
