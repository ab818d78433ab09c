"""Running a check's own program: always in the trial's grader box (sandbox/grader.py).

Every check that executes something — `verify`, `command_exit`, `custom`, and any check type
added later (a Harbor verifier) — goes through `run_program`, never through the trial's own
sandbox nor a host subprocess: the program sees the trial's final files read-only, has its own
HOME and /tmp (emptied after it), its own uid, the trial's services and nothing else of the
network, and `git` there is proctor's safe git (docs/checks.md). Files it needs (a script,
the trial's logs) are passed in `files` and found at `file_path(ctx, name)`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from proctor.checks.base import CheckContext
from proctor.proc import ExecResult


async def run_program(ctx: CheckContext, argv: Sequence[str], *, timeout: float,
                      stdin: bytes | None = None,
                      files: Mapping[str, bytes | Path] | None = None,
                      readonly: Sequence[str] = (), env: Mapping[str, str] | None = None,
                      cwd: str | None = None, host: bool = False) -> ExecResult:
    """`argv` run for a check in the grader box (cwd: the workspace). `files`: name ->
    content (or a host file to copy) put read-only at `file_path(ctx, name)`; `readonly`:
    host paths shown read-only at their own path (a script's directory, an interpreter);
    `env`: added to the trial's environment; `host`: with the host's tools rather than the
    sandbox's (differs only on container backends)."""
    return await ctx.sandbox.grade(list(argv), timeout=timeout, stdin=stdin,
                                   files=dict(files or {}), readonly=list(readonly),
                                   env=dict(env or {}), cwd=cwd, host=host)


async def run_command(ctx: CheckContext, command: str, *, timeout: float) -> ExecResult:
    """`sh -c command` in the workspace, in the grader box (verify, command_exit)."""
    return await run_program(ctx, ["/bin/sh", "-c", command], timeout=timeout)


def file_path(ctx: CheckContext, name: str) -> str:
    """Where a file passed to `run_program` in `files` is, as the program sees it."""
    return ctx.sandbox.grader_path(name)
