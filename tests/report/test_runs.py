"""`proctor runs` and what `proctor run` prints at its end, through the real executable."""

from __future__ import annotations

import json
import os
import sqlite3
import textwrap
from pathlib import Path

import pytest

from tests.helpers.cli import Cli

SUITE = """
cli: sh
tasks:
  - id: write-file
    intent: write hello into out.txt
    solution: ["echo hello > out.txt"]
    assert:
      - file_contains: {path: out.txt, text: hello}
  - id: count
    intent: print 3
    solution: ["echo 3"]
    assert:
      - output_equals: "3"
"""


@pytest.fixture
def cli(cli: Cli, tmp_path) -> Cli:
    (tmp_path / "spec.yaml").write_text(textwrap.dedent(SUITE))
    return cli


pytestmark = pytest.mark.slow  # real runs (a few seconds)


def test_a_failed_run_prints_its_result_once_and_where_to_look(cli):
    out = cli("run", "spec.yaml", "--agent", "nop", "--output-dir", "out", env={"COLUMNS": "100"})
    assert out.returncode == 1, out.stderr
    # the tables end with the headline; no second "0/2 passed" line
    assert out.stdout.count("2 trials: 0 passed, 2 failed, 0 errored") == 1
    assert "0/2 passed" not in out.stdout
    assert "what went wrong: proctor show out --failed" in out.stdout
    quiet = cli("run", "spec.yaml", "--agent", "oracle", "-q")
    assert quiet.returncode == 0
    assert quiet.stdout.splitlines()[0].startswith("2/2 passed, 0 failed, 0 errored")
    assert "what went wrong" not in quiet.stdout


def test_runs_lists_agents_fits_80_columns_and_drops_stale_entries(cli, tmp_path):
    assert cli("run", "spec.yaml", "--agent", "oracle", "-q").returncode == 0
    assert cli("run", "spec.yaml", "--agent", "nop", "--output-dir", "reused", "-q").returncode == 1
    # the directory is emptied and reused: the index keeps only the run that is there now
    for p in sorted((tmp_path / "reused").rglob("*"), reverse=True):
        p.unlink() if p.is_file() or p.is_symlink() else p.rmdir()
    assert cli("run", "spec.yaml", "--agent", "oracle", "--output-dir", "reused",
               "-q").returncode == 0
    out = cli("runs", env={"COLUMNS": "80"})
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].split() == ["run", "started", "status", "passed", "agents", "specs"]
    # two runs, each a row and its directory on a line of its own (not 3: the first run in
    # `reused` is gone); the default directory is far from here (the test's PROCTOR_HOME)
    # and still whole: never cut, at 80 columns either
    (default,) = (Path(os.environ["PROCTOR_HOME"]) / "runs").iterdir()
    assert len(lines) == 5, out.stdout
    reused_id = json.loads((tmp_path / "reused" / "run.json").read_text())["run_id"]
    assert lines[1].split()[0] == reused_id and lines[2].strip() == "reused"
    assert "passed 2/2 100% oracle spec.yaml" in " ".join(lines[1].split())
    assert lines[3].split()[0] == default.name and lines[4].strip() == str(default)
    assert lines[3].split()[1:3] == [default.name[:4] + "-" + default.name[4:6] + "-"
                                     + default.name[6:8], default.name[9:11] + ":"
                                     + default.name[11:13]]  # the start time, kept
    assert all(len(line) <= 80 for line in lines[:4]), out.stdout
    wide = cli("runs", env={"COLUMNS": "200"}).stdout.splitlines()
    assert wide[0].split() == ["run", "started", "status", "passed", "agents",
                               "directory", "specs"]
    assert len(wide) == 3 and wide[1].split()[-2:] == ["reused", "spec.yaml"]
    assert wide[2].split()[-2:] == [str(default), "spec.yaml"]


def test_runs_at_80_columns_with_long_model_names_keep_status_and_counts(tmp_path, capsys,
                                                                          monkeypatch):
    from proctor.report.runs import runs_main
    from proctor.store import index_run

    models = ["mock/models/anthropic-claude-sonnet-4-5-careful.yaml",
              "mock/models/anthropic-claude-sonnet-4-5-sloppy.yaml"]
    for i, status in enumerate(("failed", "interrupted")):
        index_run(f"2026030{i}T101500Z-ab12c{i}", tmp_path / "runs" / f"2026030{i}T101500Z-ab12c{i}",
                  started_at=f"2026-03-0{i + 1}T10:15:00+00:00", status=status,
                  specs=[str(tmp_path / "bench" / "cli-bench.yaml")],
                  summary={"trials": 800, "passed": 500, "failed": 200, "errored": 100,
                           "pass_rate": 0.625}, models=models)
    monkeypatch.setenv("COLUMNS", "80")
    runs_main()
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["run", "started", "status", "passed", "agents"]
    row = lines[1].split()
    assert row[0] == "20260301T101500Z-ab12c1" and row[1:3] == ["2026-03-02", "10:15"]
    assert lines[2].strip() == f"{tmp_path}/runs/20260301T101500Z-ab12c1 (deleted)"
    # status and counts whole, the models cut
    assert row[3:6] == ["interrupted", "500/800", "62%"] and row[6].endswith("…")
    assert all(len(line) <= 80 for line in lines[1::2]), lines
    monkeypatch.setenv("COLUMNS", "120")
    runs_main()
    row = capsys.readouterr().out.splitlines()[1]
    assert "careful.yaml, " in row and "sloppy.yaml" in row  # each by what tells it apart
    monkeypatch.setenv("COLUMNS", "400")
    runs_main()
    wide = capsys.readouterr().out.splitlines()
    assert ", ".join(models) in wide[1] and wide[1].rstrip().endswith("cli-bench.yaml")


def test_an_index_from_before_models_still_lists(cli, tmp_path):
    home = tmp_path / "old-home"
    home.mkdir()
    db = sqlite3.connect(home / "index.sqlite")
    db.execute("CREATE TABLE runs (run_id TEXT PRIMARY KEY, dir TEXT NOT NULL, started_at TEXT,"
               " finished_at TEXT, status TEXT, specs TEXT, trials INTEGER, passed INTEGER,"
               " failed INTEGER, errored INTEGER, pass_rate REAL)")
    db.execute("INSERT INTO runs VALUES ('old', '/nowhere/old', '2026-01-01T00:00:00+00:00',"
               " NULL, 'passed', '[]', 3, 3, 0, 0, 1.0)")
    db.commit()
    db.close()
    env = {"PROCTOR_HOME": str(home), "COLUMNS": "80"}
    out = cli("runs", env=env)
    assert out.returncode == 0, out.stderr
    row = out.stdout.splitlines()[1].split()
    assert row == ["old", "2026-01-01", "00:00", "passed", "3/3", "100%", "–",
                   "/nowhere/old", "(deleted)", "–"]
    assert cli("run", "spec.yaml", "--agent", "oracle", "-q", env=env).returncode == 0
    assert " oracle " in cli("runs", env=env).stdout
    assert os.path.exists(home / "index.sqlite")


def test_a_real_runs_report_carries_what_each_agent_ran(cli, tmp_path):
    import json

    from proctor.report.trajectory import decode

    out = cli("run", "spec.yaml", "--agent", "oracle", "--output-dir", "out", "--format", "html",
              "-q")
    assert out.returncode == 0, out.stderr
    page = (tmp_path / "out" / "report.html").read_text()
    start = page.index(">", page.index('id="trajectories"')) + 1
    docs = [decode(b) for b in json.loads(page[start:page.index("</script>", start)]) if b]
    commands = {s["cmd"]: s for d in docs for s in d["items"] if s["k"] == "cmd"}
    assert commands["echo 3"]["exit"] == 0 and commands["echo 3"]["stdout"] == "3\n"
    assert "echo hello > out.txt" in commands
    assert any(a[0] == "file_write" and "out.txt" in a[1] for d in docs for a in d["audit"])
