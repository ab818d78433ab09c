"""The Sandbox contract: where a trial's commands run. A backend is one module conforming to it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol


@dataclass
class ExecResult:
    exit_code: int | None  # None when killed by the timeout
    stdout: str
    stderr: str
    duration_s: float
    started_at: float
    timed_out: bool = False
    truncated: bool = False  # stdout or stderr went past the output limit
    execs: list[list[str]] | None = None  # argv of every process run, when traced


class Sandbox(Protocol):
    """A workspace plus a way to run shell commands in it.

    `exec` runs `sh -c command` with the sandbox's environment (plus `env`), in its own process
    group, killed with the whole group at `timeout`; output past the limit is dropped, not kept.
    With `trace=True` every process started underneath is recorded (argv) in `execs`.
    """

    workdir: Path
    env: dict[str, str]

    async def exec(
        self,
        command: str,
        *,
        timeout: float,
        env: dict[str, str] | None = None,
        cwd: str | None = None,
        stdin: bytes | None = None,
        trace: bool = False,
    ) -> ExecResult: ...

    async def read_file(self, path: str) -> bytes: ...

    async def write_file(self, path: str, data: bytes) -> None: ...

    async def close(self) -> None:
        """Kill anything still running and remove the workspace (unless kept)."""
