"""Ctrl-C, SIGTERM and SIGKILL + --resume leave no container, network or volume behind."""

from __future__ import annotations

import json
import signal
import subprocess
import time

import pytest

from tests.docker.conftest import containers
from tests.runner.conftest import results
from tests.runner.test_interrupt import SLOW_SUITE, wait_for_lines

pytestmark = [pytest.mark.slow]


def _volumes() -> set[str]:
    return set(subprocess.run(["docker", "volume", "ls", "-q"], capture_output=True, text=True,
                              check=True).stdout.split())


def _run_id(tmp_path) -> str:
    return json.loads((tmp_path / "run" / "run.json").read_text())["run_id"]


def test_sigkill_then_resume_removes_the_killed_runs_containers(base_image, cli, spec, tmp_path):
    spec(SLOW_SUITE)
    volumes = _volumes()
    proc = cli.popen("run", "spec.yaml", "--backend", "docker", "--agent", "oracle",
                     "--concurrency", "3", "--output-dir", "run", "-q")
    wait_for_lines(tmp_path / "run" / "results.jsonl", 2, timeout=120)
    time.sleep(0.5)  # the next trials' containers are up (each trial takes over 0.4 s)
    proc.kill()
    proc.wait()
    run_id = _run_id(tmp_path)
    assert containers(run_id), "a SIGKILLed run leaves its running trials' containers"
    out = cli("run", "--resume", "run", "-q", timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    assert results(tmp_path / "run")["summary"]["passed"] == 12
    assert containers(run_id) == [] and _volumes() <= volumes


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupted_run_removes_its_containers(base_image, cli, spec, tmp_path, sig):
    spec(SLOW_SUITE)
    proc = cli.popen("run", "spec.yaml", "--backend", "docker", "--agent", "oracle",
                     "--concurrency", "3", "--output-dir", "run", "-q")
    wait_for_lines(tmp_path / "run" / "results.jsonl", 2, timeout=120)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and "Traceback" not in err, err
    assert containers(_run_id(tmp_path)) == []
