"""Ctrl-C, SIGTERM and SIGKILL + --resume leave no container, network or volume behind: the
trials' own containers and their image services' containers and networks."""

from __future__ import annotations

import json
import signal
import subprocess
import time

import pytest

from tests.docker.conftest import containers, networks
from tests.runner.conftest import results
from tests.runner.test_interrupt import wait_for_lines

pytestmark = [pytest.mark.slow]

# Twelve slow trials, each with a service container on a network of its own; each leaves a
# background process behind.
SUITE = """\
version: 1
id: slow
task: {{prompt: x}}
agent: {{type: oracle}}
services:
  - {{name: web, image: {image}, wait_for: "curl -sf http://web:8000/ > /dev/null"}}
solution: ["sleep 0.4; curl -s http://web:8000/ > page.txt; sleep 30 &"]
invariants:
  page: {{description: x, check: {{type: file_content, path: page.txt, contains: hello-from-web}}}}
parallelism: {{replicas: 12}}
"""


def _volumes() -> set[str]:
    return set(subprocess.run(["docker", "volume", "ls", "-q"], capture_output=True, text=True,
                              check=True).stdout.split())


def _run_id(tmp_path) -> str:
    return json.loads((tmp_path / "run" / "run.json").read_text())["run_id"]


def _start(cli, spec, web_image) -> subprocess.Popen:
    spec(SUITE.format(image=web_image))
    return cli.popen("run", "spec.yaml", "--backend", "docker", "--concurrency", "3",
                     "--output-dir", "run", "-q")


def test_sigkill_then_resume_removes_the_killed_runs_containers(web_image, cli, spec, tmp_path):
    volumes = _volumes()
    proc = _start(cli, spec, web_image)
    wait_for_lines(tmp_path / "run" / "results.jsonl", 2, timeout=120)
    time.sleep(0.5)  # the next trials' containers are up (each trial takes over 0.4 s)
    proc.kill()
    proc.wait()
    run_id = _run_id(tmp_path)
    assert containers(run_id) and networks(run_id), "a SIGKILLed run leaves its trials' own"
    out = cli("run", "--resume", "run", "-q", timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    assert results(tmp_path / "run")["summary"]["passed"] == 12
    assert containers(run_id) == networks(run_id) == [] and _volumes() <= volumes


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupted_run_removes_its_containers(web_image, cli, spec, tmp_path, sig):
    volumes = _volumes()
    proc = _start(cli, spec, web_image)
    wait_for_lines(tmp_path / "run" / "results.jsonl", 2, timeout=120)
    time.sleep(0.5)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and "Traceback" not in err, err
    run_id = _run_id(tmp_path)
    assert containers(run_id) == networks(run_id) == [] and _volumes() <= volumes
