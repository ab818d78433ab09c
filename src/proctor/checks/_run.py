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
from typing import TYPE_CHECKING

from proctor.checks.base import CheckContext
from proctor.proc import ExecResult

if TYPE_CHECKING:
    from proctor.sandbox.docker.taskenv import ImageSandbox


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
    sb = ctx.sandbox
    # In a task's own image (Harbor) the program runs the container's tools, which the agent
    # may have changed: what it ran of those is tampering (SPEC §4, checks/_tamper.py).
    image = _image(ctx) if not host else None
    changes = await image.changes() if image is not None else {}
    res = await sb.grade(list(argv), timeout=timeout, stdin=stdin, files=dict(files or {}),
                         readonly=list(readonly), env=dict(env or {}), cwd=cwd, host=host)
    if image is not None:
        from proctor.checks._tamper import tampering

        ctx.tampered(await tampering(image, changes, res))
    return res


async def run_command(ctx: CheckContext, command: str, *, timeout: float) -> ExecResult:
    """`sh -c command` in the workspace, in the grader box (verify, command_exit)."""
    return await run_program(ctx, ["/bin/sh", "-c", command], timeout=timeout)


def _image(ctx: CheckContext) -> ImageSandbox | None:
    """The trial's container when it is a task's own image (docker modules loaded only then)."""
    if not ctx.sandbox.capabilities.image_environment:
        return None
    from proctor.sandbox.docker.taskenv import ImageSandbox

    return ctx.sandbox if isinstance(ctx.sandbox, ImageSandbox) else None


def file_path(ctx: CheckContext, name: str) -> str:
    """Where a file passed to `run_program` in `files` is, as the program sees it."""
    return ctx.sandbox.grader_path(name)
