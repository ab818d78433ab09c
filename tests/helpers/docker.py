"""Helpers of the docker tests (their fixtures are in tests/docker/conftest.py)."""

from __future__ import annotations

import subprocess

from proctor.dockercli import RUN_LABEL


def containers(run_id: str | None = None) -> list[str]:
    """Containers (running or not) labelled by proctor, of one run or of any."""
    label = f"{RUN_LABEL}={run_id}" if run_id else RUN_LABEL
    done = subprocess.run(["docker", "ps", "-aq", "--filter", f"label={label}"],
                          capture_output=True, text=True, check=True)
    return done.stdout.split()


def networks(run_id: str) -> list[str]:
    done = subprocess.run(["docker", "network", "ls", "-q", "--filter", f"label={RUN_LABEL}={run_id}"],
                          capture_output=True, text=True, check=True)
    return done.stdout.split()


def left_by(run_dir) -> list[str]:
    """Containers and networks a finished run left behind (by its run id: other runs on this
    engine, such as another session's tests, do not count)."""
    from tests.helpers.cli import results

    run_id = results(run_dir)["run_id"]
    return containers(run_id) + networks(run_id)

