"""Per-trial resource limits with cgroups: memory, processes alive at once, CPU.

One cgroup per trial (per controller on cgroup v1, one node on v2), created under proctor's
own cgroup. Every command of the trial joins it before it runs (`attach_argv`, a tiny `sh` wrapper), so
everything it starts is counted, whatever it does (`setsid` and double
forks stay in the cgroup). When a limit is hit the kernel acts (the OOM killer, a failing
fork) and `fault()` says so afterwards, which makes the trial `error` with the cause.

Where no cgroup can be created (no permission, no controller), `TrialCgroup.create` returns
None and the sandbox falls back to an address-space rlimit for memory (see docs/security.md).
"""

from __future__ import annotations

import contextlib
import os
import shlex
import time
from dataclasses import dataclass, field
from pathlib import Path

from proctor.fieldwise import Fieldwise
from proctor.proc import kill_until_gone
from proctor.sandbox.base import Resources

ROOT = Path("/sys/fs/cgroup")
CFS_PERIOD_US = 100_000


@dataclass(eq=False, repr=False)
class TrialCgroup(Fieldwise):
    """The cgroup a box's trials run in, with the counters read per trial."""
    dirs: dict[str, Path]  # controller ("memory", "pids", "cpu", or "" for v2) -> directory
    resources: Resources
    _procs_files: list[str] = field(default_factory=list)
    _marks: tuple[int, int] = (0, 0)  # oom kills, pid-limit hits before the current trial
    # The counters' files (OOM kills, forks refused), kept open once read: read twice a
    # trial, a pread costs a fifteenth of an open.
    _counter_files: list[tuple[Path, str] | None] = field(default_factory=list)
    _counters: dict[int, int] = field(default_factory=dict)

    @classmethod
    def create(cls, name: str, resources: Resources) -> TrialCgroup | None:
        wanted = ("memory", "pids", "cpu")
        try:
            dirs = _make(name, wanted)
        except OSError:
            return None
        if not dirs:
            return None
        cg = cls(dirs, resources)
        try:
            cg._set_limits()
        except OSError:
            cg.remove()
            return None
        cg._procs_files = [str(d / "cgroup.procs") for d in dirs.values()]
        return cg

    def apply(self, resources: Resources) -> None:
        """The next trial's limits (a cgroup kept across trials); raises OSError when the
        kernel refuses them (e.g. memory below what is still charged)."""
        if resources != self.resources:
            self.resources = resources
            self._set_limits()
        self._marks = self._events()

    def attach(self, pid: int) -> None:
        """Move a process (the box's spawner) into the cgroup: what it starts is counted."""
        for f in self._procs_files:
            Path(f).write_text(str(pid))

    def attach_argv(self) -> list[str]:
        """A prefix that moves the command into this cgroup, then execs it."""
        writes = " && ".join(f"echo $$ > {shlex.quote(p)}" for p in self._procs_files)
        return ["/bin/sh", "-c", f'{writes} && exec "$@"', "proctor-limits"]

    def pids(self) -> list[int]:
        # Every process joins all of the trial's controllers at once, so one list holds all.
        try:
            with open(self._procs_files[0] if self._procs_files else
                      next(iter(self.dirs.values())) / "cgroup.procs") as f:
                return [int(p) for p in f.read().split()]
        except OSError:
            return []

    def kill_all(self) -> int:
        """SIGKILL every process in the trial's cgroup until none is left (new forks race).
        Blocking: off the event loop."""
        return kill_until_gone(self.pids)

    def fault(self) -> str | None:
        """Why the trial hit a limit (since `apply`), in words, or None."""
        ooms, pid_hits = self._events()
        if ooms > self._marks[0]:
            mem = _size(self.resources.memory_bytes)
            return f"out of memory: the trial's processes passed resources.memory ({mem})"
        if pid_hits > self._marks[1]:
            return (f"process limit reached: more than {self.resources.pids} processes at once "
                    "(a fork bomb?)")
        return None

    def _events(self) -> tuple[int, int]:
        """The kernel's counters (they only grow): OOM kills, forks refused at pids.max."""
        if not self._counter_files:
            memory = self.dirs.get("memory")
            pids = self.dirs.get("pids") or self.dirs.get("")
            self._counter_files = [
                (self.dirs[""] / "memory.events", "oom_kill") if "" in self.dirs else
                (memory / "memory.oom_control", "oom_kill") if memory else None,
                (pids / "pids.events", "max") if pids else None]
        ooms, pid_hits = (self._counter(i) for i in range(2))
        return ooms, pid_hits

    def _counter(self, i: int) -> int:
        where = self._counter_files[i]
        if where is None:
            return 0
        fd = self._counters.get(i)
        if fd is None:
            try:
                fd = self._counters[i] = os.open(where[0], os.O_RDONLY | os.O_CLOEXEC)
            except OSError:
                return 0
        try:
            return _value(os.pread(fd, 4096, 0).decode(), where[1])
        except OSError:
            return 0

    def remove(self) -> None:
        self.kill_all()
        for fd in self._counters.values():
            os.close(fd)
        self._counters.clear()
        for d in self.dirs.values():
            for _ in range(100):  # the kernel frees a cgroup only once its last task is reaped
                try:
                    d.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.001)

    def _set_limits(self) -> None:
        r = self.resources
        if "" in self.dirs:  # cgroup v2
            d = self.dirs[""]
            (d / "memory.max").write_text(str(r.memory_bytes or "max"))
            with contextlib.suppress(OSError):
                (d / "memory.swap.max").write_text("0")
            if r.pids:
                (d / "pids.max").write_text(str(r.pids))
            if (d / "cpu.max").exists():
                quota = int(r.cpus * CFS_PERIOD_US) if r.cpus else "max"
                (d / "cpu.max").write_text(f"{quota} {CFS_PERIOD_US}")
            return
        if "memory" in self.dirs:
            mem, value = self.dirs["memory"], str(r.memory_bytes or -1)
            # memsw must stay >= the limit: raising, it goes first (the retry); lowering, after.
            for _ in range(2):
                try:
                    (mem / "memory.limit_in_bytes").write_text(value)
                    break
                except OSError:
                    with contextlib.suppress(OSError):
                        (mem / "memory.memsw.limit_in_bytes").write_text(value)
            else:
                raise OSError(f"cannot set memory.limit_in_bytes to {value}")
            with contextlib.suppress(OSError):  # no swap accounting: the plain limit still holds
                (mem / "memory.memsw.limit_in_bytes").write_text(value)
        if r.pids and "pids" in self.dirs:
            (self.dirs["pids"] / "pids.max").write_text(str(r.pids))
        if "cpu" in self.dirs:
            (self.dirs["cpu"] / "cpu.cfs_period_us").write_text(str(CFS_PERIOD_US))
            quota = int(r.cpus * CFS_PERIOD_US) if r.cpus else -1
            (self.dirs["cpu"] / "cpu.cfs_quota_us").write_text(str(quota))


def sweep_stale() -> int:
    """Remove the cgroups of proctor processes that are gone (a SIGKILLed run leaves them
    behind, empty); returns how many."""
    removed = 0
    own = _own_paths()
    bases = [ROOT / own.get("", "/").lstrip("/"), (ROOT / own.get("", "/").lstrip("/")).parent] \
        if (ROOT / "cgroup.controllers").exists() else \
        [ROOT / c / own[c].lstrip("/") for c in ("memory", "pids", "cpu") if c in own]
    for base in bases:
        for d in base.glob("proctor-*-*") if base.is_dir() else ():
            pid = d.name.split("-")[1]
            if pid.isdigit() and not Path(f"/proc/{pid}").exists():
                TrialCgroup({"": d}, Resources()).kill_all()
                with contextlib.suppress(OSError):
                    d.rmdir()
                    removed += 1
    return removed


def _own_paths() -> dict[str, str]:
    """controller -> proctor's own cgroup path ("" for the v2 unified hierarchy)."""
    out: dict[str, str] = {}
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        for c in controllers.split(","):
            out[c] = path
    return out


def _make(name: str, wanted: tuple[str, ...]) -> dict[str, Path]:
    own = _own_paths()
    if (ROOT / "cgroup.controllers").exists():  # pure v2
        parent = ROOT / own.get("", "/").lstrip("/")
        return _make_v2(parent, name)
    dirs: dict[str, Path] = {}
    for controller in wanted:
        base = ROOT / controller
        if controller not in own or not base.is_dir():
            continue
        d = base / own[controller].lstrip("/") / name
        try:
            d.mkdir()
        except FileExistsError:
            pass
        except OSError:
            continue
        dirs[controller] = d
    if "memory" not in dirs and "pids" not in dirs:
        for d in dirs.values():
            with contextlib.suppress(OSError):
                d.rmdir()
        return {}
    return dirs


def _make_v2(parent: Path, name: str) -> dict[str, Path]:
    # v2 lets a cgroup with processes have no controller-enabled children: use a sibling
    # subtree (`proctor` next to ourselves) when the parent cannot delegate.
    wanted = {"memory", "pids", "cpu"}
    for base in (parent, parent.parent):
        available = set((base / "cgroup.controllers").read_text().split())
        enable = " ".join(f"+{c}" for c in sorted(wanted & available))
        try:
            (base / "cgroup.subtree_control").write_text(enable)
        except OSError:
            continue
        d = base / name
        d.mkdir(exist_ok=True)
        return {"": d}
    return {}


def _field(path: Path, key: str) -> int:
    try:
        return _value(path.read_text(), key)
    except OSError:
        return 0


def _value(text: str, key: str) -> int:
    """The number after `key` in a counters file ("key value" lines), or 0."""
    for line in text.splitlines():
        k, _, v = line.partition(" ")
        if k == key:
            with contextlib.suppress(ValueError):
                return int(v)
    return 0


def _size(n: int | None) -> str:
    if not n:
        return "unset"
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:g} {unit}"
    return f"{n} bytes"


def limit_hit(dirs: dict[str, Path], resources: Resources) -> str | None:
    """A limit a container's cgroup (`dirs` by controller, "" on cgroup v2) reports hit, in
    the words of `TrialCgroup.fault`, or None."""
    mem = dirs.get("memory")
    if (mem is not None and _field(mem / "memory.oom_control", "oom_kill")) or (
            "" in dirs and _field(dirs[""] / "memory.events", "oom_kill")):
        return (f"out of memory: the trial's processes passed resources.memory "
                f"({_size(resources.memory_bytes)})")
    pids = dirs.get("pids") or dirs.get("")
    if pids is not None and _field(pids / "pids.events", "max"):
        return (f"process limit reached: more than {resources.pids} processes at once "
                "(a fork bomb?)")
    return None
