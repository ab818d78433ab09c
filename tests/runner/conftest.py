from __future__ import annotations

import json
import os
import subprocess
import textwrap
from pathlib import Path

import pytest

from tests.conftest import PROCTOR


class Cli:
    """Runs the real `proctor` executable; runs land under the test's PROCTOR_HOME."""

    def __init__(self, cwd: Path):
        self.cwd = cwd

    def __call__(self, *args: str, timeout: float = 120, env: dict | None = None,
                 ) -> subprocess.CompletedProcess:
        return subprocess.run([PROCTOR, *args], cwd=self.cwd, capture_output=True, text=True,
                              timeout=timeout, env={**os.environ, **(env or {})})

    def popen(self, *args: str, env: dict | None = None) -> subprocess.Popen:
        return subprocess.Popen([PROCTOR, *args], cwd=self.cwd, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True,
                                env={**os.environ, **(env or {})})


@pytest.fixture
def cli(tmp_path) -> Cli:
    return Cli(tmp_path)


@pytest.fixture
def spec(tmp_path):
    """Write a spec file (dedented) into the test's directory; returns its path."""
    def write(text: str, name: str = "spec.yaml") -> Path:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
        return path
    return write


def results(run_dir: Path) -> dict:
    return json.loads((run_dir / "results.json").read_text())


def run_dir_of(proc: subprocess.CompletedProcess) -> Path:
    for line in proc.stdout.splitlines():
        if line.startswith("run: "):
            return Path(line[5:])
    raise AssertionError(f"no run directory printed:\n{proc.stdout}\n{proc.stderr}")
