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


def gone(run_id: str, within: float = 10.0) -> list[str]:
    """The run's containers still there after asking the engine for up to `within` s (none
    when all are gone): a trial's close kills its container's init and the engine removes
    the container on its own (--rm), a moment after proctor has moved on or exited."""
    import time

    deadline = time.monotonic() + within
    while (left := containers(run_id)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


def networks(run_id: str) -> list[str]:
    done = subprocess.run(["docker", "network", "ls", "-q", "--filter", f"label={RUN_LABEL}={run_id}"],
                          capture_output=True, text=True, check=True)
    return done.stdout.split()


def left_by(run_dir) -> list[str]:
    """Containers and networks a finished run left behind (by its run id: other runs on this
    engine, such as another session's tests, do not count)."""
    from tests.helpers.cli import results

    run_id = results(run_dir)["run_id"]
    return gone(run_id) + networks(run_id)



def web_scenario(image: str, replicas: int) -> str:
    """A scenario whose solution reaches an `image:` service (tests/docker/conftest.py's web
    image) by name and through its injected URL; `image` is on line 7, column 12."""
    return f"""\
version: 1
id: web
task: {{prompt: x}}
agent: {{type: oracle}}
services:
  - name: web
    image: {image}
    env: {{GREETING: hi}}
    wait_for: curl -sf http://web:8000/ > /dev/null
solution:
  - curl -s http://web:8000/ > page.txt
  - curl -s "$WEB_URL/env.txt" > env.txt
invariants:
  page: {{description: x, check: {{type: file_content, path: page.txt, contains: hello-from-web}}}}
  env: {{description: x, check: {{type: file_content, path: env.txt, contains: greeting=hi}}}}
parallelism: {{replicas: {replicas}}}
"""
