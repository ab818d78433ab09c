"""Boxes kept across a run's trials: building a box costs more than most trivial trials.

A `Slot` is one box (sandbox/namespaces.py) with everything that outlives a trial in it: its
host directories (workspace, HOME, /tmp, /dev/shm, a private dir), its hosts file, its
cgroup and its egress listener. Between two trials (`Slot.end`), every process in it is
killed, every place wiped back to an empty directory owned by the agent's uid, and the next
trial (`Slot.begin`) gets its own limits, hosts file, IPC namespace and egress policy. A
slot that cannot be made clean (its spawner died, a place could not be wiped) is closed,
never reused. `BoxPool` hands out idle slots of the right shape (the same fixed workdir and
read-only paths), and builds one when none is idle.

What a trial cannot leave behind for the next one, and why (docs/security.md):
processes (cgroup or PID-namespace kill), files (the places are wiped; the box's own root and
/dev are read-only), SysV IPC and POSIX message queues (a fresh IPC namespace per trial),
keyrings (refused by the spawner's seccomp filter), sockets (they die with their processes;
forwarders are per trial), limits and their counters (set and read per trial).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import shutil
import stat
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from proctor.sandbox import cgroup as cgroups
from proctor.sandbox import disk
from proctor.sandbox.base import Resources
from proctor.sandbox.files import copy_sparse
from proctor.sandbox.hosts import hosts_text
from proctor.sandbox.namespaces import AGENT_UID, Box, Mount

PLACES = ("work", "home", "tmp", "shm")
INSIDE_HOME = "/home/agent"
PING_TIMEOUT_S = 5.0
Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]
_numbers = itertools.count()


@dataclass(frozen=True)
class Shape:
    """What a box is built with and a trial cannot change: the same shape, the same box."""

    workdir: str
    readonly: tuple[str, ...] = ()

    def places(self) -> dict[str, str]:
        """Each place's path inside the box."""
        return {"work": self.workdir, "home": INSIDE_HOME, "tmp": "/tmp", "shm": "/dev/shm"}

    @property
    def nested(self) -> bool:
        """A place inside another (a fixed workdir under /tmp): its mount point is a directory
        of the outer place, which a wipe would remove, so such a box serves one trial."""
        inside = list(self.places().values())
        return any(a != b and a.startswith(b.rstrip("/") + "/") for a in inside for b in inside)


class Slot:
    def __init__(self, root: Path, shape: Shape, box: Box, cgroup: cgroups.TrialCgroup | None):
        self.root, self.shape, self.box, self.cgroup = root, shape, box, cgroup
        self.hosts_file = root / "private" / "hosts"
        self.trials = 0
        self.tampered = False  # its spawner was stopped by an agent: never reused
        self._names: dict[str, str] | None = None  # what the hosts file holds now
        self._servers: dict[tuple[str, int], _Switch] = {}  # outlive trials (egress proxy)
        self.graders: dict[tuple[str, ...], Any] = {}  # grader boxes beside it (grader.py)
        self.disk_bytes: int | None = None  # the size of its file system (disk.py), if any

    @classmethod
    async def create(cls, root: Path, shape: Shape, env: dict[str, str],
                     resources: Resources) -> Slot:
        cg = await asyncio.to_thread(_make_dirs, root, resources)
        try:
            mounts = [Mount(root / name, inside) for name, inside in  # parents first
                      sorted(shape.places().items(), key=lambda p: p[1].count("/"))]
            mounts += [Mount(Path(p), p, writable=False) for p in shape.readonly
                       if os.path.exists(p)]
            box = await Box.start(mounts, workdir=shape.workdir,
                                  hosts_file=root / "private" / "hosts", env=env)
        except BaseException:
            if cg is not None:
                await asyncio.to_thread(cg.remove)
            await asyncio.to_thread(disk.unmount, root)
            raise
        slot = cls(root, shape, box, cg)
        slot.disk_bytes = resources.disk_bytes if os.path.ismount(root) else None
        try:
            if cg is not None:
                cg.attach(box.spawner_pid)
        except OSError:
            await slot.close()
            raise
        return slot

    async def begin(self, resources: Resources, names: dict[str, str]) -> None:
        """Make the slot the next trial's: its limits, its service names in /etc/hosts, a
        fresh IPC namespace."""
        if self.cgroup is not None:
            self.cgroup.apply(resources)
        if self.disk_bytes is not None and resources.disk_bytes != self.disk_bytes:
            # its file system has its size for good: another box for this trial
            raise OSError(f"this box's disk is {self.disk_bytes}, not {resources.disk_bytes}")
        if names != self._names:
            # In place: the box has this very file mounted at /etc/hosts.
            with open(self.hosts_file, "r+") as f:
                f.truncate()
                f.write(hosts_text(names))
            self._names = dict(names)
        if self.trials:
            await self.box.spawner.new_ipc_namespace()
        self.trials += 1

    async def serve(self, host: str, port: int, handler: Handler | None) -> None:
        """A listener inside the box at host:port that outlives the trial; `handler` is the
        current trial's (None: connections are closed at once)."""
        switch = self._servers.get((host, port))
        if switch is None:
            sock = await self.box.spawner.listen(host, port)
            switch = self._servers[(host, port)] = _Switch()
            switch.server = await asyncio.start_server(switch.handle, sock=sock)
        switch.handler = handler

    async def end(self, keep: Path | None = None) -> bool:
        """Kill the trial's processes, keep a copy of its places if asked, wipe them; whether
        the slot can take another trial."""
        await self.kill_processes()
        for switch in self._servers.values():
            switch.handler = None
        if keep is not None:
            await asyncio.to_thread(self._copy_places, keep)
        clean = await _off_loop_if_big(self._wipe, [self.root / name for name in PLACES])
        return clean and self.box.alive() and not self.tampered and not self.box.spawner.busy

    async def kill_processes(self) -> int:
        """Every process of the trial but the spawner. An agent with the spawner's uid (no
        root) may have stopped it with requests queued: resume it, let it handle them (a
        start, then its kill), and kill again; such a box is never reused."""
        killed = self._kill()
        if self.box.stopped():
            self.tampered = True
            self.box.wake()
            with contextlib.suppress(Exception):
                await self.box.spawner.ping(PING_TIMEOUT_S)
            killed += self._kill()
        return killed

    def _kill(self) -> int:
        if self.cgroup is not None:
            return self.cgroup.kill_all(spare=self.box.spawner_pid)
        return self.box.kill_processes()

    async def close(self) -> None:
        for switch in self._servers.values():
            switch.server.close()
        self._servers.clear()
        graders, self.graders = list(self.graders.values()), {}
        for grader in graders:
            await grader.close()
        await self.box.close()
        await asyncio.to_thread(self._remove)

    def _copy_places(self, keep: Path) -> None:
        for name in PLACES:  # sparse files stay sparse (a 3 GiB hole is not 3 GiB of zeros)
            shutil.copytree(self.root / name, keep / name, symlinks=True, dirs_exist_ok=True,
                            copy_function=copy_sparse)

    def _wipe(self) -> bool:
        ok = True
        for name in PLACES:
            ok = _empty(self.root / name) and ok
        return ok

    def _remove(self) -> None:
        if self.cgroup is not None:  # waits until the kernel has reaped every task
            self.cgroup.remove()
        disk.unmount(self.root)
        shutil.rmtree(self.root, ignore_errors=True)


class BoxPool:
    """Idle slots by shape. `size` 0: no slot is kept (a box per trial)."""

    def __init__(self, root: Path, size: int):
        self.root, self.size = root, size
        self._idle: list[Slot] = []

    async def acquire(self, shape: Shape, env: dict[str, str], resources: Resources,
                      names: dict[str, str]) -> Slot:
        """A slot of this shape made the next trial's (`Slot.begin`): an idle one, else a new
        one. An idle slot that cannot be made the trial's (e.g. a lower memory limit than
        what is still charged to it) is closed, and a new one built instead."""
        for i, slot in enumerate(self._idle):
            if slot.shape == shape:
                self._idle.pop(i)
                try:
                    await slot.begin(resources, names)
                    return slot
                except Exception:
                    await slot.close()
                break
        if len(self._idle) >= self.size and self._idle:  # room for a box of this shape
            await self._idle.pop(0).close()
        slot = await Slot.create(self.root / f"box-{next(_numbers)}", shape, env, resources)
        try:
            await slot.begin(resources, names)
        except BaseException:
            await slot.close()
            raise
        return slot

    async def release(self, slot: Slot, keep: Path | None = None) -> None:
        try:
            reusable = await slot.end(keep)
        except Exception:
            reusable = False
        if reusable and not slot.shape.nested and len(self._idle) < self.size:
            self._idle.append(slot)
        else:
            await slot.close()

    async def close(self) -> None:
        idle, self._idle = self._idle, []
        for slot in idle:
            await slot.close()


async def _off_loop_if_big(work: Callable[[], bool], places: list[Path]) -> bool:
    """`work` on the loop when the places hold a few plain files (a thread hop costs more
    than that), else in a thread: an agent may leave a hundred thousand files."""
    small = True
    for place in places:
        try:
            with os.scandir(place) as it:
                entries = list(itertools.islice(it, 65))
        except OSError:
            entries = []
        if len(entries) > 64 or any(e.is_dir(follow_symlinks=False) for e in entries):
            small = False
            break
    return work() if small else await asyncio.to_thread(work)


class _Switch:
    """One listener, its handler swapped per trial."""

    server: asyncio.base_events.Server
    handler: Handler | None = None

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.handler is None:
            writer.close()
            return
        await self.handler(reader, writer)


def _make_dirs(root: Path, resources: Resources) -> cgroups.TrialCgroup | None:
    """The slot's directories and cgroup (blocking file system work: off the loop); as root,
    on a file system of the trial's disk limit (sandbox/disk.py)."""
    if resources.disk_bytes:
        disk.mount(root, resources.disk_bytes)
    for name in (*PLACES, "private"):
        (root / name).mkdir(parents=True, exist_ok=True)
    (root / "private" / "hosts").touch()
    (root / "private" / "hosts").chmod(0o644)  # read inside the box by the agent's uid
    for name in PLACES:
        _own(root / name)
    return cgroups.TrialCgroup.create(f"proctor-{os.getpid()}-{root.name}", resources)


def _own(place: Path) -> None:
    """A place as the agent finds it: an empty directory it owns, mode 0755 (changed only
    when it is not: an unchanged inode costs the file system's journal nothing)."""
    st = os.lstat(place)
    if os.geteuid() == 0 and (st.st_uid, st.st_gid) != (AGENT_UID, AGENT_UID):
        os.lchown(place, AGENT_UID, AGENT_UID)
    if stat.S_IMODE(st.st_mode) != 0o755 or not stat.S_ISDIR(st.st_mode):
        os.chmod(place, 0o755)


def _empty(place: Path) -> bool:
    """Remove everything in `place` (whatever modes the agent left), keep the directory."""
    for attempt in range(2):
        try:
            _own(place)
            with os.scandir(place) as it:
                entries = list(it)
        except OSError:
            return False
        if not entries:
            return True
        if attempt:  # an agent without root may have made directories unwritable: undo
            _unlock(place)
        for e in entries:
            with contextlib.suppress(OSError):
                if e.is_dir(follow_symlinks=False):
                    shutil.rmtree(e.path, ignore_errors=True)
                else:
                    os.unlink(e.path)
    return not any(os.scandir(place))


def _unlock(top: Path) -> None:
    stack = [str(top)]
    while stack:
        d = stack.pop()
        with contextlib.suppress(OSError):
            os.chmod(d, stat.S_IRWXU)
            with os.scandir(d) as it:
                stack += [e.path for e in it if e.is_dir(follow_symlinks=False)]
