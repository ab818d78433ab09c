"""Ctrl-C, SIGTERM and SIGKILL + --resume leave no container, network or volume behind: the
trials' own containers and their image services' containers."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import uuid

import pytest

from tests.helpers.cli import Cli, results
from tests.helpers.docker import containers, gone, networks
from tests.runner.test_interrupt import wait_for_lines
from tests.security.test_processes import sleepers

pytestmark = [pytest.mark.slow]

# Twelve slow trials, each with a service container of its own; each leaves a
# background process behind (`sleep TAG`, a length no other process uses).
SUITE = """\
version: 1
id: slow
task: {{prompt: x}}
agent: {{type: oracle}}
services:
  - {{name: web, image: {image}, wait_for: "curl -sf http://web:8000/ > /dev/null"}}
solution: ["sleep 0.4; curl -s http://web:8000/ > page.txt; sleep {tag} & sleep {hold}"]
invariants:
  page: {{description: x, check: {{type: file_content, path: page.txt, contains: hello-from-web}}}}
parallelism: {{replicas: 12}}
"""


def _volumes() -> set[str]:
    return set(subprocess.run(["docker", "volume", "ls", "-q"], capture_output=True, text=True,
                              check=True).stdout.split())


def _run_id(tmp_path) -> str:
    return json.loads((tmp_path / "run" / "run.json").read_text())["run_id"]


def test_sigkill_then_resume_removes_the_killed_runs_containers(web_image, cli, spec, tmp_path):
    volumes = _volumes()
    tag = f"{uuid.uuid4().int % 10**6 + 3 * 10**6}"
    spec(SUITE.format(image=web_image, tag=tag, hold=1))  # each agent holds its trial 1 s
    proc = cli.popen("run", "spec.yaml", "--backend", "docker", "--concurrency", "3",
                     "--output-dir", "run", "-q")
    wait_for_lines(tmp_path / "run" / "results.jsonl", 2, timeout=120)
    deadline = time.monotonic() + 30
    while not sleepers(f"sleep {tag}") and time.monotonic() < deadline:
        time.sleep(0.05)  # a running trial's agent has left its background process
    proc.kill()
    proc.wait()
    run_id = _run_id(tmp_path)
    assert containers(run_id), "a SIGKILLed run leaves its trials' containers"
    assert sleepers(f"sleep {tag}"), "… and the processes in them"
    out = cli("run", "--resume", "run", "-q", timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    assert results(tmp_path / "run")["summary"]["passed"] == 12
    assert gone(run_id) == networks(run_id) == [] and _volumes() <= volumes
    assert sleepers(f"sleep {tag}") == []  # no agent process outlives its container


@pytest.mark.parametrize("how", ["SIGINT", "SIGTERM", "terminal Ctrl-C"])
def test_an_interrupted_run_removes_its_containers(web_image, spec, tmp_path, how):
    """SIGINT or SIGTERM to proctor, or a terminal's Ctrl-C: SIGINT to its whole process
    group, the engine clients it is waiting for included."""
    volumes = _volumes()
    spec(SUITE.format(image=web_image, tag=30, hold=0))
    proc = Cli(tmp_path).popen("run", "spec.yaml", "--backend", "docker", "--concurrency", "3",
                               "--output-dir", "run", "-q",
                               start_new_session=True)  # a group of its own, as in a terminal
    wait_for_lines(tmp_path / "run" / "results.jsonl", 2, timeout=120)
    time.sleep(0.5)
    if how == "terminal Ctrl-C":
        os.killpg(proc.pid, signal.SIGINT)
    else:
        proc.send_signal(getattr(signal, how))
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and "Traceback" not in err, err
    run_id = _run_id(tmp_path)
    assert gone(run_id) == networks(run_id) == [] and _volumes() <= volumes
