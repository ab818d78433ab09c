"""The docker tests run for real wherever an engine answers (./setup.sh starts one); they skip,
saying why, only where ./setup.sh recorded that none can run (tests/docker/engine.py)."""

from __future__ import annotations

import subprocess

import pytest

from tests.docker.engine import require_engine


@pytest.fixture(scope="session")
def engine() -> None:
    require_engine()


@pytest.fixture(scope="session")
def base_image(engine) -> str:
    from proctor.sandbox.docker.images import ensure_base

    return ensure_base()


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

