"""What the local and docker backends share: a trial whose writable places (workspace, HOME,
/tmp, /dev/shm) are directories on this machine, read and written from the host.

`PlaceFiles` is the common base of `LocalSandbox` and `DockerSandbox` (siblings: neither
derives from the other). It maps paths as the commands see them onto the places' host
directories, resolving symlinks inside that view, so a link the agent planted never makes
proctor read or write a host file; it snapshots and streams the places, writes proctor's
own files into them (owned by the agent's uid), and reads a command's trace. How a backend
differs is data, set by the backend, never an override:

* `isolated`: paths are mapped onto the places (False: the local backend without a box,
  where paths are the host's own);
* `host_system`: paths outside the places are this machine's system, shown read-only
  (the local box), rather than the image's (a container: read through the engine);
* `owner`: the (uid, gid) proctor's writes are given (None: left as proctor's);
* `disk_enforced`: the places sit on a file system of the trial's disk limit (disk.py), so
  a snapshot need not measure it.
"""

from __future__ import annotations

import asyncio
import errno
import os
import posixpath
import shutil
import stat
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from proctor.proc import ExecResult
from proctor.sandbox import disk, files
from proctor.sandbox.base import Capabilities, Entry, Kind, Resources, Snapshot, UnreadableFile
from proctor.sandbox.forward import Forwarder
from proctor.sandbox.namespaces import visible_system_path
from proctor.sandbox.trace import TraceSource, read_trace

INSIDE_WORKDIR = "/workspace"  # the workspace as commands see it, unless the suite fixes one
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
READ_ON_LOOP = 1 << 18  # bytes read or written on the event loop; more go to a thread
SNAPSHOT_TIMEOUT_S = 300.0  # reading every place, when the trial gives no deadline
LOST = "recording lost: the command trace ended before the command did"
_SYMLINK_HOPS = 40


class PlaceFiles:
    """See the module docstring. Subclasses set `workdir`, `env` and `places` (inside
    prefix, host dir), longest prefix first."""

    capabilities: Capabilities
    image_user: str | None = None  # only where the image is the environment (docker/taskenv.py)
    host_system = False
    disk_enforced = False
    # What the places hold now, when that is known without reading them (else None): a
    # box just wiped and found empty (sandbox/pool.py `Slot.held`: {}), or the last
    # snapshot, read while nothing could change them (`_quiet`). A snapshot is then that,
    # and the wipe after the trial removes what it lists without listing the places again.
    # Every way into the places (a command, proctor's own writes, a check's command, the
    # host path handed out) forgets it first (`_touched`).
    held: Snapshot | None = None
    _quiet = False  # the backend's to say: no process can change the places now

    def _touched(self) -> None:
        self.held = None

    def __init__(self, root: Path, *, trial_id: str, output_limit: int, keep: bool,
                 resources: Resources | None, hosts: dict[str, str] | None, isolated: bool,
                 readonly_paths: Sequence[str] = (),
                 on_output: Callable[[int, bytes], None] | None = None):
        self.root = root
        self.trial_id = trial_id or root.name
        self.private = root / "private"
        self.output_limit = output_limit
        self.keep = keep
        self.resources = resources or Resources()
        self.hosts = hosts or {}
        self.isolated = isolated
        self.readonly_paths = list(readonly_paths)
        self.on_output = on_output
        self.workdir = ""
        self.env: dict[str, str] = {}
        self.places: list[tuple[str, Path]] = []
        self.owner: tuple[int, int] | None = None
        self.forwarder: Forwarder | None = None
        self.endpoints: list[tuple[str, int]] = []  # the trial's services (for grader boxes)
        self._faults: list[str] = []

    def fault(self) -> str | None:
        return self._faults[0] if self._faults else None

    # -- the path view -------------------------------------------------------------------

    def host_path(self, path: str, *, follow: bool = True) -> Path | None:
        """Where `path` (as commands see it) lives on the host, or None if not visible."""
        full = posixpath.normpath(posixpath.join(self.workdir, path))
        if not self.isolated:
            return Path(full)
        parts = [p for p in full.split("/") if p]
        cur, i, hops = "/", 0, 0
        while i < len(parts):
            nxt = posixpath.join(cur, parts[i])
            i += 1
            host = self._map(nxt)
            if host is None:
                if i < len(parts) and self._holds_mounts(nxt):
                    cur = nxt  # e.g. /home on the way to /home/agent: only the box has it
                    continue
                return None
            if (follow or i < len(parts)) and host.is_symlink():
                hops += 1
                if hops > _SYMLINK_HOPS:
                    raise OSError(errno.ELOOP, "too many levels of symbolic links", path)
                target = os.readlink(host)
                base = target if target.startswith("/") else posixpath.join(cur, target)
                parts = [p for p in posixpath.normpath(base).split("/") if p] + parts[i:]
                cur, i = "/", 0
                continue
            cur = nxt
        return self._map(cur)

    def _holds_mounts(self, inside: str) -> bool:
        prefix = inside.rstrip("/") + "/"
        return any(p.startswith(prefix) for p, _ in self.places) or (self.host_system and any(
            p.startswith(prefix) for p in self.readonly_paths))

    def _map(self, inside: str) -> Path | None:
        for prefix, host in self.places:
            if inside == prefix or inside.startswith(prefix.rstrip("/") + "/"):
                return host / inside[len(prefix):].lstrip("/")
        if self.host_system and visible_system_path(inside, self.readonly_paths):
            return Path(inside)
        return None

    def _writable(self, path: str) -> Path:
        parent = self.host_path(posixpath.dirname(posixpath.join(self.workdir, path)) or "/")
        host = None if parent is None else parent / posixpath.basename(path)
        if host is None or not any(host == h or h in host.parents for _, h in self.places):
            raise PermissionError(errno.EACCES, "not a writable place of the sandbox", path)
        return host

    # -- reading on the host ---------------------------------------------------------------

    def _open_host(self, path: str, *, directory: bool = False) -> int:
        host = self.host_path(path)
        if host is None:
            what = "directory" if directory else "file"
            raise FileNotFoundError(errno.ENOENT, f"no such {what} in the sandbox", path)
        if directory:
            return os.open(host, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        return os.open(host, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK | os.O_NOCTTY)

    def _stat_host(self, path: str) -> Entry | None:
        try:
            host = self.host_path(path)
            st = host.stat() if host is not None else None
        except OSError:
            return None
        return None if st is None else entry_of(st)

    # -- proctor's own writes --------------------------------------------------------------

    async def read_if_file(self, path: str, limit: int | None = None) -> tuple[Entry, bytes | None] | None:
        entry = await self.stat(path)  # type: ignore[attr-defined]  # each backend's own
        if entry is None or entry.kind != "file":
            return None if entry is None else (entry, None)
        try:
            data: bytes = await self.read_file(path, limit)  # type: ignore[attr-defined]
        except OSError as e:
            raise UnreadableFile(e.errno, e.strerror, path) from None
        return entry, data

    async def write_file(self, path: str, data: bytes) -> None:
        """proctor's own writes (setup files, an agent's config) before the agent runs."""
        if len(data) <= READ_ON_LOOP:
            self._write(path, data)
        else:
            await asyncio.to_thread(self._write, path, data)

    def _write(self, path: str, data: bytes) -> None:
        self._touched()
        host = self._writable(path)
        top = _first_missing(host)
        host.parent.mkdir(parents=True, exist_ok=True)
        host.write_bytes(data)
        self._own(top)

    async def copy_in(self, src: Path, dest: str = ".") -> None:
        await asyncio.to_thread(self._copy_in, src, dest)

    def _copy_in(self, src: Path, dest: str) -> None:
        self._touched()
        host = self._writable(dest) if dest not in (".", "") else self._map(self.workdir)
        assert host is not None
        top = _first_missing(host)
        if src.is_dir():
            shutil.copytree(src, host, symlinks=True, dirs_exist_ok=True)
        else:
            host.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, host)
        self._own(top)

    def _own(self, host: Path) -> None:
        """Files proctor puts in the sandbox belong to the agent's uid (`owner`)."""
        if self.owner is None:
            return
        uid, gid = self.owner
        os.lchown(host, uid, gid)
        if host.is_dir() and not host.is_symlink():
            for dirpath, dirnames, filenames in os.walk(host):
                for name in dirnames + filenames:
                    os.lchown(os.path.join(dirpath, name), uid, gid)

    # -- the places as a whole -------------------------------------------------------------

    async def export(self) -> Path:
        self._touched()  # the caller may write there
        host = self._map(self.workdir)
        assert host is not None
        return host

    async def snapshot(self, deadline: float | None = None) -> Snapshot:
        """Every entry of every writable place, by content: workspace paths relative to it,
        the others (HOME, /tmp, /dev/shm) as absolute paths as the agent sees them. Raises
        FilesLimit (naming it) when they cannot all be read by `deadline` (monotonic)."""
        if self.held is not None:  # what reading them would give
            return dict(self.held)
        places = [("" if inside == self.workdir else inside.rstrip("/") + "/", host)
                  for inside, host in self.places]
        deadline = deadline or time.monotonic() + SNAPSHOT_TIMEOUT_S
        budget = files.Budget(deadline, stop_at=(64, 1 << 18, time.monotonic() + 0.005))
        try:  # a handful of small files: cheaper here than a thread hop
            snap = files.snapshot(places, budget)
        except files.TooBig:
            budget = files.Budget(deadline)
            snap = await asyncio.to_thread(files.snapshot, places, budget)
        if not self.disk_enforced and (why := disk.over(budget.allocated,
                                                         self.resources.disk_bytes)):
            raise files.FilesLimit(why)  # measured: no file system of its own enforced it
        if self._quiet:
            self.held = dict(snap)
        return snap

    async def stream_files(self, paths: list[str], sink: Callable[[str, int, bytes], None],
                           deadline: float | None = None) -> None:
        """Every byte of each regular file (paths as in a snapshot), holes skipped, no size
        cap, as sink(path, offset, chunk) calls from a worker thread; sink(path, -1, b"")
        ends a file. Read from the places themselves, never through a symlink."""
        budget = files.Budget(deadline or time.monotonic() + SNAPSHOT_TIMEOUT_S)
        where = [(self._in_place(p), p) for p in paths]
        await asyncio.to_thread(files.stream, where, sink, budget)

    def _in_place(self, path: str) -> tuple[Path, str] | None:
        """(the place's host directory, the path inside it) of a snapshot path."""
        if not path.startswith("/"):
            path = posixpath.join(self.workdir, path)
        for inside, host in self.places:
            if path == inside or path.startswith(inside.rstrip("/") + "/"):
                return host, path[len(inside):].lstrip("/")
        return None

    # -- traces ----------------------------------------------------------------------------

    def _take_trace(self, res: ExecResult, source: TraceSource,
                    skip: tuple[str, ...] = ()) -> bool:
        """The trace the tracer wrote at `source` into `res`; a trace without the command's
        end is a lost recording (a fault), unless the command timed out. Whether the
        tracer has finished it (what a command left running is still traced)."""
        trace = read_trace(source, skip)
        res.trace = trace
        res.execs, res.exec_parents = trace.execs, trace.parents
        if not trace.complete and not res.timed_out:
            res.error = LOST
            self._faults.append(res.error)
        return trace.finished


async def read_fd(fd: int, path: str, limit: int | None,
                  st: os.stat_result | None = None) -> bytes:
    """At most `limit` + 1 bytes of the regular file open at `fd` (closed here; `st`: its
    stat, if the caller has it); large reads off the event loop."""
    try:
        st = st or os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise IsADirectoryError(errno.EISDIR, "is a directory", path)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(errno.EINVAL, "not a regular file", path)
        want = st.st_size + 1 if limit is None else limit + 1
        if min(want, st.st_size) <= READ_ON_LOOP:
            return files.read_fd(fd, want, st.st_size)
        return await asyncio.to_thread(files.read_fd, fd, want, st.st_size)
    finally:
        os.close(fd)


def list_fd(fd: int) -> list[str]:
    """Names in the directory open at `fd` (closed here), sorted; directories end with `/`.
    Each entry's kind from the directory itself: a symlink is never followed here."""
    try:
        with os.scandir(fd) as it:
            return sorted(e.name + ("/" if e.is_dir(follow_symlinks=False) else "") for e in it)
    finally:
        os.close(fd)


def _first_missing(path: Path) -> Path:
    """The outermost directory that creating `path` makes (or `path` itself)."""
    top = path
    while not top.parent.exists():
        top = top.parent
    return top


def entry_of(st: os.stat_result) -> Entry:
    """What a stat says an entry is (no digest)."""
    return Entry(kind_of(st.st_mode), st.st_size, "")


def kind_of(mode: int) -> Kind:
    if stat.S_ISLNK(mode):
        return "symlink"
    if stat.S_ISDIR(mode):
        return "dir"
    if stat.S_ISREG(mode):
        return "file"
    return "other"
