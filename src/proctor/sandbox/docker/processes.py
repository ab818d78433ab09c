"""A container's processes as the host sees them (proctor is root there): a pidfd of its init
and the kill through it (the whole container dies with its init), its cgroup directories, and
a process's start time (with its pid: who it is) and environment (what marks it). Read from
/proc, not asked of the engine: cheaper than a `docker exec` per look.
"""

from __future__ import annotations

import os
from pathlib import Path


def pidfd_of(pid: int, container: str) -> int | None:
    """A pidfd of the container's init (host `pid`, from the engine), or None when that pid
    is no longer the container's (it exited, the number went to another process): only
    then is a process killed through it."""
    try:
        fd = os.pidfd_open(pid)
    except (OSError, AttributeError):
        return None
    try:  # pidfd taken first: from here the number cannot change owner under it
        mine = container in Path(f"/proc/{pid}/cgroup").read_text()
    except OSError:
        mine = False
    if not mine:
        os.close(fd)
        return None
    return fd


def killed(pidfd: int | None) -> bool:
    """SIGKILL the container's init through its pidfd: the kernel kills every process of
    the container's pid namespace with it; the engine, seeing the container stop, removes it
    (--rm). False when there is no such handle or the init is gone already (removal then
    awaited as `docker rm -f`)."""
    import signal

    if pidfd is None:
        return False
    try:
        signal.pidfd_send_signal(pidfd, signal.SIGKILL)
    except OSError:
        return False
    return True


def cgroup_dirs(pid: int, every: bool = False) -> dict[str, Path]:
    """The container's cgroup directories by controller ("" on cgroup v2): the memory and
    pids ones, for fault(), or `every` one (a process joins them all: verifier.py)."""
    out: dict[str, Path] = {}
    try:
        lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
    except OSError:
        return out
    for line in lines:
        _, controllers, path = line.split(":", 2)
        for c in controllers.split(",") if controllers else [""]:
            if c in ("memory", "pids", "") or (every and not c.startswith("name=")):
                base = Path("/sys/fs/cgroup") / c if c else Path("/sys/fs/cgroup")
                out[c] = base / path.lstrip("/")
    return out


def started(pid: int) -> str:
    """A process's start time (field 22 of its stat): with the pid, who it is."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return ""
    return stat[stat.rindex(")") + 2:].split()[19]


def has(pid: int, mark: bytes) -> bool:
    """Whether process `pid` has `mark` (NAME=VALUE) in its environment."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            return mark in f.read().split(b"\0")
    except OSError:
        return False
