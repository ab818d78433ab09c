"""Helpers for check tests (fixtures are in conftest.py)."""

from __future__ import annotations

import shlex
import time

from proctor.model import CommandRecord, Process


def make_record(command: str | list[str], exit_code: int | None = 0, stdout: str = "",
                stderr: str = "", *, timed_out: bool = False,
                processes: list[list[str]] = ()) -> CommandRecord:
    """A CommandRecord as the runner stores it. A list is a traced program's argv (command
    agent); `processes`: the argv of each program it started (each started by the shell)."""
    if isinstance(command, list):
        argv, source, command = command, "traced", shlex.join(command)
    else:
        argv, source = ["sh", "-c", command], "agent"
    return CommandRecord(command=command, argv=argv, cwd="/w", exit_code=exit_code,
                         stdout=stdout, stderr=stderr, started_at=time.time(), duration_s=0.01,
                         timed_out=timed_out, source=source,
                         processes=[Process(list(a), -1, 0) for a in processes])


LONG = "x" * 1990 + "<<observed-tail>>" + "y" * 5000
"""An observed value past 2,000 characters: its first 2,000 must be quoted, its tail never."""


def assert_cut(message: str, observed: str = LONG) -> None:
    assert observed[:2000] in message
    assert observed[:2001] not in message
    assert f"[{len(observed) - 2000} more characters]" in message
