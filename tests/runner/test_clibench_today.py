"""cli-bench suites as CLIWatch writes them today, run unchanged: the top-level catalogue
fields, `upload: auto`, a CLI installed outside the sandbox's PATH, `version_command`."""

from __future__ import annotations

import json
import os
import stat

from tests.helpers.cli import results, run_dir_of

SUITE = """\
cli: mailer
display_name: Mailer
category: Email
website_url: https://mailer.example
github_url: https://github.com/example/mailer
version_command: mailer --version
upload: auto
tasks:
  - id: send
    intent: Print the mailer's version.
    assert: [exit_code: 0, output_contains: "mailer 1.2"]
    solution: [mailer --version]
"""


def _install(bin_dir):
    """A CLI installed the way `pip install --user` does: in ~/.local/bin, nowhere else.
    Its version says where it runs (the sandbox's HOME is not this machine's)."""
    bin_dir.mkdir(parents=True)
    tool = bin_dir / "mailer"
    tool.write_text('#!/bin/sh\necho "mailer 1.2 (HOME=$HOME)"\n')
    tool.chmod(tool.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


def test_the_catalogue_fields_validate_and_reach_the_reports(cli, spec, tmp_path):
    _install(tmp_path / "local" / "bin")
    spec(SUITE, "cli-bench.yaml")
    (tmp_path / "proctor.toml").write_text(f'host_path = ["{tmp_path}/local/bin"]\n')
    proc = cli("validate", "cli-bench.yaml")
    assert proc.returncode == 0, proc.stderr
    assert "upload: proctor uploads nothing (`upload: auto`" in proc.stderr
    proc = cli("run", "cli-bench.yaml", "--agent", "oracle", "--format", "md,html")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    run = run_dir_of(proc)
    meta = json.loads((run / "run.json").read_text())
    assert meta["about"] == [{"cli": "mailer", "display_name": "Mailer", "category": "Email",
                              "website_url": "https://mailer.example",
                              "github_url": "https://github.com/example/mailer"}]
    assert "**Mailer** (Email) · <https://mailer.example> · " in (run / "summary.md").read_text()
    page = (run / "report.html").read_text()
    assert '<b>Mailer</b> (Email) <a href="https://mailer.example"' in page
    # version_command ran where the agent runs: the sandbox's HOME, not this machine's.
    assert meta["versions"]["cli mailer"] == "mailer 1.2 (HOME=/home/agent)"
    assert os.environ.get("HOME") != "/home/agent"


def test_a_cli_the_sandbox_cannot_see_stops_the_run_naming_where_and_how(cli, spec, tmp_path):
    _install(tmp_path / "local" / "bin")
    spec(SUITE, "cli-bench.yaml")
    env = {"PATH": f"{tmp_path}/local/bin:{os.environ['PATH']}"}  # the user's shell finds it
    proc = cli("run", "cli-bench.yaml", "--agent", "oracle", env=env)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    line = proc.stderr.strip().splitlines()[-1]
    assert line.startswith("proctor: cli 'mailer' (task send, ")
    assert "`mailer` is not found inside the sandbox (looked in PATH=/usr/local/sbin:" in line
    assert (f"On this machine it is {tmp_path}/local/bin/mailer, which the sandbox does not "
            f'show: add `host_path = ["{tmp_path}/local/bin"]` to proctor.toml') in line
    assert not (tmp_path / ".proctor").exists() or not any((tmp_path / ".proctor").rglob("run.json"))
    # Nowhere at all: say so, and where to install it.
    proc = cli("run", "cli-bench.yaml", "--agent", "oracle")
    assert proc.returncode == 2 and "It is not on this machine's PATH either" in proc.stderr


def test_host_path_is_read_only_inside(cli, spec, tmp_path):
    _install(tmp_path / "local" / "bin")
    spec(SUITE.replace("solution: [mailer --version]",
                       "solution: ['mailer --version; echo x > $(dirname $(command -v mailer))/planted']"),
         "cli-bench.yaml")
    (tmp_path / "proctor.toml").write_text(f'host_path = ["{tmp_path}/local/bin"]\n')
    proc = cli("run", "cli-bench.yaml", "--agent", "oracle")
    trial = results(run_dir_of(proc))["trials"][0]
    assert not (tmp_path / "local" / "bin" / "planted").exists()
    assert trial["status"] == "fail"  # the write failed, so the last command exited non-zero
