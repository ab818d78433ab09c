"""`proctor run --backend docker` with no usable engine: one line, exit 2, no run directory."""

from __future__ import annotations

import os
import textwrap

from tests.helpers.cli import Cli

SPEC = """
version: 1
id: dk
task: {prompt: x}
agent: {type: oracle}
solution: ["true"]
invariants:
  ok: {description: x, check: {type: command_exit, command: "true"}}
"""


def test_daemon_down_stops_the_run_before_any_trial(tmp_path):
    (tmp_path / "spec.yaml").write_text(textwrap.dedent(SPEC))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "docker"  # a client whose daemon is down, whatever this machine runs
    fake.write_text("#!/bin/sh\necho 'Cannot connect to the Docker daemon at "
                    "unix:///nowhere.sock. Is the docker daemon running?' >&2\nexit 1\n")
    fake.chmod(0o755)
    # The preflight asks the engine's socket first (dockercli._pings): none answers there.
    out = Cli(tmp_path)("run", "spec.yaml", "--backend", "docker", "--output-dir", "run",
                        env={"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
                             "DOCKER_HOST": f"unix://{tmp_path}/nowhere.sock"})
    assert out.returncode == 2
    assert out.stderr.strip() == (
        "proctor: --backend docker: the container engine is not usable: Cannot connect to "
        "the Docker daemon at unix:///nowhere.sock. Is the docker daemon running?")
    assert "Traceback" not in out.stderr and not (tmp_path / "run").exists()
