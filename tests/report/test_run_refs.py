"""Runs named the way people name them (docs/running.md "Naming a run"): a directory, a run
id, a unique prefix of one, or `latest` (the default where one run is meant), for every
command that takes a run; an unknown or ambiguous name is exit 2 saying why."""

from __future__ import annotations

import json
import textwrap

import pytest

from tests.helpers.cli import Cli

SUITE = """
cli: sh
tasks:
  - id: count
    intent: print 3
    solution: ["echo 3"]
    assert:
      - output_equals: "3"
"""

pytestmark = pytest.mark.slow  # real runs (a few seconds)


@pytest.fixture
def two_runs(cli: Cli, tmp_path) -> tuple[str, str]:
    """An oracle run in the default place, then a nop run in `out`: (first id, second id)."""
    (tmp_path / "spec.yaml").write_text(textwrap.dedent(SUITE))
    assert cli("run", "spec.yaml", "--agent", "oracle", "-q").returncode == 0
    assert cli("run", "spec.yaml", "--agent", "nop", "-q", "--output-dir", "out").returncode == 1
    ids = [line.split()[0] for line in cli("runs", env={"COLUMNS": "200"}).stdout.splitlines()[1:]]
    assert len(ids) == 2
    assert json.loads((tmp_path / "out" / "run.json").read_text())["run_id"] == ids[0]
    return ids[1], ids[0]  # newest first in `runs`


def test_show_takes_an_id_a_prefix_latest_or_nothing(cli, two_runs):
    oracle, nop = two_runs
    by_id = cli("show", oracle)
    assert by_id.returncode == 0, by_id.stderr
    assert by_id.stdout.startswith(f"run {oracle}") and "PASS" in by_id.stdout
    prefix = cli("show", oracle[:-2])
    assert prefix.returncode == 0 and prefix.stdout.startswith(f"run {oracle}")
    for latest in (cli("show", "latest"), cli("show"), cli("show", "--failed")):
        assert latest.returncode == 0, latest.stderr
        assert latest.stdout.startswith(f"run {nop}") and "FAIL" in latest.stdout
    trial = cli("show", oracle, "count")  # a run by id, then a trial by prefix
    assert trial.returncode == 0 and trial.stdout.startswith("count.r0")


def test_an_ambiguous_prefix_or_an_unknown_name_is_exit_2_saying_why(cli, two_runs):
    oracle, nop = two_runs
    common = oracle[:8]  # the date: both runs start with it
    assert nop.startswith(common)
    out = cli("show", common)
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.strip() == (f"proctor: {common}: ambiguous, 2 runs start with it: "
                                  f"{nop}, {oracle}; give more of the id")
    assert "Traceback" not in out.stderr
    missing = cli("report", "nothere")
    assert missing.returncode == 2
    assert missing.stderr.strip() == ("proctor: nothere: no such run directory, and no run id "
                                      "starts with it (`proctor runs` lists the runs)")


def test_report_export_compare_and_resume_take_ids(cli, tmp_path, two_runs):
    oracle, nop = two_runs
    report = cli("report", oracle[:-1], "--format", "md")
    assert report.returncode == 0, report.stderr
    assert f"`{oracle}`" in report.stdout or oracle in report.stdout
    export = cli("export", "--format", "atif", "--output", "atif")
    assert export.returncode == 0, export.stderr
    assert (tmp_path / "atif" / "count.r0" / "trajectory.json").is_file()  # latest: nop's
    compared = cli("compare", oracle, "latest", "--format", "json")
    assert compared.returncode == 0, compared.stderr
    data = json.loads(compared.stdout)
    assert (data["run_a"], data["run_b"]) == (oracle, nop)
    resumed = cli("run", "--resume", nop, "-q")
    assert resumed.returncode == 1 and f"run: {tmp_path / 'out'}" in resumed.stdout


def test_a_path_that_exists_wins_over_an_id_and_latest_is_always_the_newest(cli, tmp_path,
                                                                            two_runs):
    oracle, nop = two_runs
    (tmp_path / oracle[:6]).mkdir()  # a directory named like a prefix: the directory
    out = cli("show", oracle[:6])
    assert out.returncode == 2 and "is not a run directory" in out.stderr
    (tmp_path / "latest").mkdir()  # `latest` is the keyword; ./latest the directory
    assert cli("show", "latest").stdout.startswith(f"run {nop}")
    assert "is not a run directory" in cli("show", "./latest").stderr
