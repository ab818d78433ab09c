"""The docker tests run for real wherever an engine answers (./setup.sh starts one); they skip,
saying why, only where ./setup.sh recorded that none can run (tests/docker/engine.py)."""

from __future__ import annotations

import subprocess

import pytest

from proctor.sandbox.docker import RUN_LABEL
from tests.docker.engine import require_engine
from tests.runner.conftest import cli, spec  # noqa: F401 (the CLI fixtures, shared)


@pytest.fixture(scope="session")
def engine() -> None:
    require_engine()


@pytest.fixture(scope="session")
def base_image(engine) -> str:
    from proctor.sandbox.dockerimages import ensure_base

    return ensure_base()


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
    from tests.runner.conftest import results

    run_id = results(run_dir)["run_id"]
    return containers(run_id) + networks(run_id)


@pytest.fixture(scope="session")
def web_image(base_image) -> str:
    """A small HTTP server image, built here from the base (no registry needed)."""
    tag = "proctor-test-web:1"
    dockerfile = (f"FROM {base_image}\nRUN mkdir -p /srv && echo hello-from-web > /srv/index.html\n"
                  "WORKDIR /srv\nEXPOSE 8000\n"
                  'CMD ["sh", "-c", "echo \\"greeting=$GREETING\\" > /srv/env.txt; '
                  'exec python3 -m http.server 8000"]\n')
    subprocess.run(["docker", "build", "-q", "--force-rm", "-t", tag, "-"], input=dockerfile, text=True,
                   capture_output=True, check=True)
    return tag
