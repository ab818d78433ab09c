"""The docker tests run for real wherever an engine answers (./setup.sh starts one); where
none can run they skip, saying why."""

from __future__ import annotations

import subprocess

import pytest

from proctor.sandbox.docker import RUN_LABEL, engine_problem
from tests.runner.conftest import cli, spec  # noqa: F401 (the CLI fixtures, shared)


@pytest.fixture(scope="session")
def engine() -> None:
    if (why := engine_problem()) is not None:
        pytest.skip(f"no usable docker engine: {why}")


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
