"""Checks that execute something, on the docker backend (grader.py is the local one).

A check's command runs in the trial's container — the task's image has the task's tools —
after the agent's processes are gone, as the grader's uid (65533: not root, not the agent's),
with its own HOME and TMPDIR under `/proctor-grader` (a host directory mounted at container
start: `bin/` the safe git, `files/` this check's files, `home/` and `tmp/` emptied after
each check), and every process it started is killed afterwards. A `runs_in: host` script
(the host's tools and proctor's Python) runs in a local grader box over the container's
places instead (grader.py), which needs bubblewrap here.

What the container cannot give (docs/security.md): its places stay writable for whoever may
write them, so a file or directory the agent made world-writable can be changed by one check
for the next; the workspace itself and the agent's files (0755/0644, its uid) are not.
"""

from __future__ import annotations

import asyncio
import os
import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from proctor.proc import ExecResult
from proctor.sandbox import grader
from proctor.sandbox.base import Capabilities, Resources

_SCRATCH = ("home", "tmp")


class Graded(Protocol):
    """What grading asks of a trial's container (container.py's DockerSandbox): declared
    here, so this module needs not import container.py, which imports it."""

    capabilities: Capabilities
    root: Path
    workdir: str
    env: dict[str, str]
    places: list[tuple[str, Path]]
    endpoints: list[tuple[str, int]]
    resources: Resources
    output_limit: int
    host_graders: dict[tuple[str, ...], Any]

    async def run_as(self, uid: int, command: str, *, timeout: float,
                     env: dict[str, str] | None = None, cwd: str | None = None,
                     stdin: bytes | None = None, trace: bool = False,
                     capture: int | None = None, user: str | None = None) -> ExecResult: ...

    async def kill_processes(self) -> int: ...


def make_tools(root: Path) -> None:
    """root/ (mounted at /proctor-grader): bin/git, files/, shared/ (root's, read-only to
    the grader), home/ and tmp/ (the grader's)."""
    grader.install_tools(root / "bin")
    for name in ("files", "shared", *_SCRATCH):
        (root / name).mkdir(parents=True, exist_ok=True)
        os.chmod(root / name, 0o755)
    os.chmod(root, 0o755)
    for name in _SCRATCH:
        grader.own(root / name)


async def grade(sb: Graded, argv: Sequence[str], *, timeout: float,
                env: dict[str, str] | None, cwd: str | None, stdin: bytes | None,
                files: dict[str, bytes | Path] | None, readonly: Sequence[str],
                host: bool) -> ExecResult:
    if host:
        return await _on_host(sb, argv, timeout=timeout, env=env, cwd=cwd, stdin=stdin,
                              files=files, readonly=readonly)
    tools = sb.root / "grader"
    try:
        if files:
            await asyncio.to_thread(grader.put_files, tools, files)
        path = f"{grader.TOOLS}/bin:" + (env or {}).get("PATH", sb.env.get("PATH", ""))
        extra = {**(env or {}), "HOME": f"{grader.TOOLS}/home", "TMPDIR": f"{grader.TOOLS}/tmp",
                 "PATH": path}
        # Traced where the image is the task's environment: what it ran of the container's
        # is checked for tampering (checks/_run.py).
        return await sb.run_as(grader.GRADER_UID, shlex.join(argv), timeout=timeout,
                               env=extra, cwd=cwd, stdin=stdin,
                               trace=sb.capabilities.image_environment)
    finally:
        await sb.kill_processes()
        await asyncio.to_thread(lambda: [grader.empty(tools / n) for n in (*_SCRATCH, "files")])


async def _on_host(sb: Graded, argv: Sequence[str], *, timeout: float,
                   env: dict[str, str] | None, cwd: str | None, stdin: bytes | None,
                   files: dict[str, bytes | Path] | None, readonly: Sequence[str],
                   ) -> ExecResult:
    from proctor.sandbox.namespaces import missing

    if (why := missing()) is not None:
        return ExecResult(None, "", f"proctor: a runs_in: host check on the docker backend "
                          f"runs in a local grader box, which cannot be built here: {why}", 0.0,
                          0.0)
    extra = tuple(sorted({p for p in readonly if os.path.exists(p)}))
    box = sb.host_graders.get(extra)
    if box is None or not box.alive():
        if box is not None:
            await box.close()
        places = tuple((str(h), inside) for inside, h in sb.places
                       if inside in (sb.workdir, "/home/agent"))
        shape = grader.GraderShape(places, extra, sb.workdir)
        box = sb.host_graders[extra] = await grader.Grader.create(
            sb.root / f"host-grader-{next(grader.numbers)}", shape, hosts_file=None,
            resources=sb.resources or Resources(), env={})
    return await box.run(argv, env=box.env(sb.env, env), cwd=cwd or sb.workdir,
                         timeout=timeout, stdin=stdin, files=files, endpoints=sb.endpoints,
                         resources=sb.resources, limit=sb.output_limit)
