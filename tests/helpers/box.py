"""A local sandbox for tests that talk to its box's spawner directly."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from proctor.sandbox import create_sandbox
from proctor.sandbox.base import ExecResult, Resources, SandboxSpec
from proctor.sandbox.namespaces import missing


async def new_sandbox(root: Path, trial_id: str = "tr.r0", isolation: str = "auto",
                      pids: int = 512):
    """A sandbox at `root` (1 GiB, `pids` processes); skips the test when `isolation`
    "auto" has no namespace box here."""
    if isolation == "auto" and missing() is not None:
        pytest.skip(f"no namespace box here: {missing()}")
    return await create_sandbox("local", SandboxSpec(
        trial_id=trial_id, root=root, env={}, isolation=isolation,
        resources=Resources(memory_bytes=1 << 30, pids=pids)))


async def run_traced(sb, argv: list[str], trace_path: Path, timeout: float = 10,
                     capture: tuple[int, int] | None = None) -> ExecResult:
    """`argv` run by the box's spawner under its tracer, the trace written to `trace_path`."""
    fd = os.open(trace_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        return await sb.box.spawner.run(argv, env=sb.env, cwd=sb.workdir, timeout=timeout,
                                        trace_fd=fd, capture=capture)
    finally:
        os.close(fd)


def comm(pid: int | str) -> str:
    """A process's name, as the host sees it ("" once it is gone)."""
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except OSError:
        return ""


def trial_inits(spawner: int) -> list[int]:
    """The spawner's children named init: the trials' PID namespaces' first processes."""
    with open(f"/proc/{spawner}/task/{spawner}/children") as f:
        children = [int(pid) for pid in f.read().split()]
    found = []
    for pid in children:
        try:
            with open(f"/proc/{pid}/comm") as f:
                if f.read().strip() == "init":
                    found.append(pid)
        except OSError:
            continue  # gone meanwhile
    return found
