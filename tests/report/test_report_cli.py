"""`proctor report` and write_reports: formats, paths, errors."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from proctor.cli import main
from proctor.errors import UsageError
from proctor.report import report_main, write_reports


def test_write_reports_all_formats(mixed_run):
    results = json.loads((mixed_run / "results.json").read_text())
    paths = write_reports(mixed_run, results, ["junit", "md", "html", "json", "md"])
    assert [p.name for p in paths] == ["junit.xml", "summary.md", "report.html", "results.json"]
    assert json.loads((mixed_run / "results.json").read_text()) == results
    assert not list(mixed_run.glob(".*.tmp"))
    with pytest.raises(ValueError, match="unknown report format 'pdf'"):
        write_reports(mixed_run, results, ["pdf"])


def test_report_default_prints_markdown(mixed_run, capsys):
    assert report_main(str(mixed_run), []) == 0
    out = capsys.readouterr().out
    assert out.startswith("## ❌ proctor run `20260302T101500Z-ab12cd`")
    assert not (mixed_run / "summary.md").exists()


def test_report_cli_writes_and_prints_paths(mixed_run):
    res = CliRunner().invoke(main, ["report", str(mixed_run), "--format", "junit,html"])
    assert res.exit_code == 0, res.output
    assert res.output.splitlines() == [str(mixed_run / "junit.xml"),
                                       str(mixed_run / "report.html")]


def test_report_errors_are_usage_errors(tmp_path, mixed_run):
    with pytest.raises(UsageError, match="is not a run directory"):
        report_main(tmp_path, [])
    (mixed_run / "results.json").unlink()
    with pytest.raises(UsageError, match="did not finish .*proctor run --resume"):
        report_main(mixed_run, ["md"])
    (mixed_run / "results.json").write_text("{not json")
    res = CliRunner().invoke(main, ["report", str(mixed_run)])
    assert res.exit_code == 2 and res.output.startswith("proctor: cannot read ")
    assert res.output.count("\n") == 1
