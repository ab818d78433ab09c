"""The one way tests run proctor's CLI: `Cli` runs the real `proctor` executable (the `cli`
fixture of tests/conftest.py gives one in the test's directory); runs land under the test's
PROCTOR_HOME."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from tests.helpers import PROCTOR


class Cli:
    """`cli(*args)` -> the finished process (text); `cli.popen(*args)` a running one."""

    def __init__(self, cwd: Path | None = None, env: dict[str, str] | None = None,
                 unset: tuple[str, ...] = ()):
        self.cwd = cwd
        self.env = env or {}  # on top of the test's environment
        self.unset = unset  # names taken out of it

    def environ(self, env: dict | None = None) -> dict[str, str]:
        base = {k: v for k, v in os.environ.items() if k not in self.unset}
        return {**base, **self.env, **(env or {})}

    def __call__(self, *args: str, timeout: float = 120, env: dict | None = None,
                 cwd: Path | None = None, input: str | None = None,
                 ) -> subprocess.CompletedProcess:
        return subprocess.run([PROCTOR, *args], cwd=cwd or self.cwd, capture_output=True,
                              text=True, timeout=timeout, input=input, env=self.environ(env))

    def popen(self, *args: str, env: dict | None = None, cwd: Path | None = None,
              **kw) -> subprocess.Popen:
        kw = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, **kw}
        return subprocess.Popen([PROCTOR, *args], cwd=cwd or self.cwd, text=True,
                                env=self.environ(env), **kw)


def results(run_dir: Path) -> dict:
    return json.loads((run_dir / "results.json").read_text())


def run_dir_of(proc: subprocess.CompletedProcess) -> Path:
    for line in proc.stdout.splitlines():
        if line.startswith("run: "):
            return Path(line[5:])
    raise AssertionError(f"no run directory printed:\n{proc.stdout}\n{proc.stderr}")
