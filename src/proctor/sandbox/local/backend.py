"""The local backend: each trial gets a private directory tree on this machine, and (unless
`--isolation none`) a namespace box around every command (see sandbox/namespaces.py).

Host layout of a trial's `root`:

    work/    the workspace  (inside the box: /workspace, or the suite's fixed `workdir`)
    home/    $HOME          (inside: /home/agent)
    tmp/     $TMPDIR, /tmp  (inside: /tmp)
    shm/     /dev/shm       (inside: /dev/shm)
    private/ proctor's own files for this trial (traces, hosts file): never mounted

Files are read and written from the host through a *view* that maps paths as the commands see
them onto these directories, resolving symlinks inside the view, so a link the agent planted
never makes proctor read or write a host file.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import posixpath
import resource
import shlex
import shutil
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from proctor import proc
from proctor.errors import SetupError, UsageError
from proctor.sandbox import cgroup as cgroups
from proctor.sandbox import grader, native
from proctor.sandbox import hosts as hostsfile
from proctor.sandbox.base import (
    Capabilities,
    Entry,
    ExecResult,
    Resources,
    SandboxSpec,
    UnreadableFile,
)
from proctor.sandbox.forward import Forwarder, Handler
from proctor.sandbox.namespaces import Box, missing
from proctor.sandbox.placefiles import (
    INSIDE_WORKDIR,
    SNAPSHOT_TIMEOUT_S,
    SYSTEM_PATH,
    PlaceFiles,
    entry_of,
    list_fd,
    read_fd,
)
from proctor.sandbox.pool import INSIDE_HOME, PLACES, BoxPool, Shape, Slot
from proctor.sandbox.spawn import OPEN_FILE, OPEN_PATH, OPEN_READ, SpawnerLost
from proctor.sandbox.trace import TraceFd, TraceSource, capture_limits, release, tracer_argv

if TYPE_CHECKING:
    from proctor.config import ProctorConfig

__all__ = ["INSIDE_WORKDIR", "SNAPSHOT_TIMEOUT_S", "SYSTEM_PATH", "LocalBackend", "LocalSandbox"]

# A trial in a box; without one (`--isolation none`) none of the boundary holds.
BOXED = Capabilities(isolated=True, traced=True, host_files=True, grader_box=True,
                     serves_inside=True, per_trial_disk=True, host_system=True)
UNBOXED = Capabilities(traced=True, host_files=True, host_system=True)
BOXED_SHARED_DISK = replace(BOXED, per_trial_disk=False)  # no file system of its own
UNBOXED_ISOLATED = replace(UNBOXED, isolated=True)  # until its box is started


class LocalBackend:
    """`--backend local`: isolated with namespaces when it can be, else as `--isolation` says.

    One instance per run (`scratch`: where its boxes live; `pool_size`: how many idle boxes
    it keeps for the next trials, sandbox/pool.py); `close()` at the end of the run."""

    capabilities = BOXED

    def __init__(self, scratch: Path | None = None, pool_size: int = 0):
        self.scratch, self.pool_size = scratch, pool_size
        self.pool: BoxPool | None = None

    @classmethod
    def for_run(cls, scratch: Path, concurrency: int) -> LocalBackend:
        """As many idle boxes as trials run at once: a box per trial slot, reused."""
        return cls(scratch, concurrency)

    def preflight(self, isolation: str = "auto") -> bool:
        """Whether trials will be isolated (`--isolation`); a UsageError (exit 2) when
        isolation was asked for (or left to auto) and cannot be built here."""
        if isolation == "none":
            return False
        why = missing()
        if why is not None:
            raise UsageError(f"cannot isolate trials: {why}")
        native.binary("spawner")  # built once per machine; no compiler: exit 2
        return True

    def prepare(self, tasks: Sequence[Any], *, quiet: bool = False,
                config: ProctorConfig | None = None) -> None:
        """Nothing to make ready: the local backend uses this machine's tools."""

    async def create(self, spec: SandboxSpec) -> LocalSandbox:
        isolated = spec.isolation != "none" and self.preflight(spec.isolation)
        sandbox = LocalSandbox(spec.root, spec.env, workdir=spec.workdir, on_output=spec.on_output,
                               output_limit=spec.output_limit, keep=spec.keep,
                               resources=spec.resources, hosts=spec.hosts,
                               isolated=isolated, readonly_paths=spec.readonly_paths,
                               trial_id=spec.trial_id, prepare=False)
        if isolated and self.pool is None:
            self.pool = BoxPool(self.scratch or spec.root.parent, self.pool_size)
        try:
            await sandbox.start(spec, self.pool)
        except BaseException:
            await sandbox.close()
            raise
        return sandbox

    def drain(self) -> None:
        """No trial is to begin any more (`drain_run`): the boxes of those still running are
        closed as each ends, not kept for trials that will not come."""
        self.pool_size = 0
        if self.pool is not None:
            self.pool.drain()

    async def close(self) -> None:
        if self.pool is not None:
            await self.pool.close()


class LocalSandbox(PlaceFiles):
    """A trial's sandbox on this machine. Constructed directly it is not isolated (tests,
    benchmarks, `--isolation none`); `LocalBackend.create` builds the isolated kind."""

    host_system = True  # outside the places, the box shows this machine's system read-only

    def __init__(self, root: Path, env: dict[str, str], *, workdir: str | None = None,
                 output_limit: int = 1_000_000, keep: bool = False,
                 resources: Resources | None = None, hosts: dict[str, str] | None = None,
                 isolated: bool = False, readonly_paths: list[str] | None = None,
                 trial_id: str = "", prepare: bool = True,
                 on_output: Callable[[int, bytes], None] | None = None):
        super().__init__(root, trial_id=trial_id, output_limit=output_limit, keep=keep,
                         resources=resources, hosts=hosts, isolated=isolated,
                         readonly_paths=readonly_paths or (), on_output=on_output)
        # Until a box is started (`start`): no grader box, no serving inside, no own disk.
        self.capabilities = UNBOXED_ISOLATED if isolated else UNBOXED
        self.slot: Slot | None = None  # isolated: the box this trial runs in
        self.pool: BoxPool | None = None
        self.box: Box | None = None
        self.cgroup: cgroups.TrialCgroup | None = None
        self._groups: set[int] = set()
        self._traces: list[TraceSource] = []  # traces not finished (or not read) yet
        self._trace_n = 0
        self._made_workdir = False
        self._runs = 0  # commands started (`_quiet`: none since the last kill)
        if isolated:  # the host side, and so the places, are the box's (`start`)
            self.workdir = workdir or INSIDE_WORKDIR
            home, tmp = INSIDE_HOME, "/tmp"
        else:
            host = {name: root / name for name in PLACES}
            if workdir:  # a fixed host directory: proctor makes it, so it may remove it
                if os.path.lexists(workdir):
                    raise SetupError(f"workdir {workdir} already exists; proctor only uses (and "
                                     "later deletes) a fixed workdir it creates itself")
                host["work"] = Path(workdir)
                self._made_workdir = True
            self.workdir = str(host["work"])
            home, tmp = str(host["home"]), str(host["tmp"])
            # (inside prefix, host dir), longest prefix first, for the path view and snapshots.
            self.places = sorted(((str(host[n]), host[n]) for n in PLACES),
                                 key=lambda p: len(p[0]), reverse=True)
        self.hosts_file: Path | None = None
        self.env = {"PATH": SYSTEM_PATH, **env, "HOME": home, "TMPDIR": tmp, "PWD": self.workdir,
                    "PROCTOR_WORKDIR": self.workdir}
        if prepare:
            self._prepare()

    def _prepare(self) -> None:
        """The host side without isolation: directories, the hosts file, the cgroup
        (blocking file system work, done off the event loop by `start`). The disk limit is
        measured after the agent (snapshot): no file system per trial, which would cost each
        unpooled trial a mount."""
        for _, d in self.places:
            d.mkdir(parents=True, exist_ok=True)
        self.private.mkdir(exist_ok=True)
        self.hosts_file = hostsfile.write_hosts_file(self.hosts, self.private)
        self.cgroup = cgroups.TrialCgroup.create(f"proctor-{os.getpid()}-{self.trial_id}",
                                                 self.resources)

    # -- lifecycle ---------------------------------------------------------------------

    async def start(self, spec: SandboxSpec, pool: BoxPool | None = None) -> None:
        """Without isolation: directories and limits. Isolated: a box from the pool, made
        this trial's (limits, service names, IPC), and forwarders to the trial's services."""
        if not self.isolated:
            await asyncio.to_thread(self._prepare)
            return
        assert pool is not None
        self.pool = pool
        shape = Shape(self.workdir, tuple(p for p in self.readonly_paths if os.path.exists(p)))
        run_env = {"PROCTOR_RUN_ID": spec.env.get("PROCTOR_RUN_ID", "")}
        slot = await pool.acquire(shape, run_env, self.resources, self.hosts)
        self.slot, self.box, self.cgroup = slot, slot.box, slot.cgroup
        # No process of a trial is left in a box it gets (placefiles.py `held`).
        self.held, slot.held, self._quiet = slot.held, None, True
        self.capabilities = BOXED if slot.disk_bytes is not None else BOXED_SHARED_DISK
        self.disk_enforced = slot.disk_bytes is not None
        if os.geteuid() == 0:  # files proctor puts in the box belong to the agent's uid
            self.owner = (slot.box.uid, slot.box.gid)
        if slot.disk_bytes is None and self.resources.disk_bytes:
            # No file system of its own (no root): no single file past the limit, and the
            # total is measured after the agent (snapshot).
            with contextlib.suppress(OSError):
                resource.prlimit(slot.box.spawner_pid, resource.RLIMIT_FSIZE,
                                 (self.resources.disk_bytes, resource.RLIM_INFINITY))
        self.private, self.places = slot.private, slot.places
        self.forwarder = Forwarder()
        self.endpoints = list(spec.endpoints)
        for address in spec.endpoints:
            await self.expose(*address)

    async def close(self) -> None:
        """Kill everything still running, stop forwarders, remove the tree (unless kept;
        isolated, the box goes back to the pool, wiped)."""
        for pgid in self._groups:
            proc.kill_group(pgid)
        self._groups.clear()
        if self.forwarder is not None:
            await self.forwarder.close()
        if self.slot is not None and self.pool is not None:
            slot, self.slot, self.box = self.slot, None, None
            await self.pool.release(slot, keep=self.root if self.keep else None,
                                    held=self.held)
            self._forget_traces()  # its tracers ended with the trial's processes
            return
        await asyncio.to_thread(self._remove)

    def _forget_traces(self) -> None:
        for source in self._traces:
            release(source)
        self._traces.clear()

    def _remove(self) -> None:
        if self.cgroup is not None:  # waits until the kernel has reaped every task
            self.cgroup.remove()
        self._forget_traces()
        if not self.keep:
            shutil.rmtree(self.root, ignore_errors=True)
            if self._made_workdir:
                shutil.rmtree(self.workdir, ignore_errors=True)

    async def keep_processes(self) -> int:
        raise RuntimeError("the local backend stops what the agent left running; a task "
                           "whose servers must serve its tests runs on --backend docker")

    async def kill_processes(self) -> int:
        """Everything the agent left running (daemons, setsid, double forks) is killed."""
        if self.slot is not None:
            runs = self._runs
            killed = await self.slot.kill_processes()
            self._quiet = runs == self._runs  # unless a command was started meanwhile
            return killed
        if self.cgroup is None or not self.cgroup.pids():
            return 0
        return await asyncio.to_thread(self.cgroup.kill_all)

    def fault(self) -> str | None:
        """A limit the trial hit, or a recording that was lost, in words."""
        if self.cgroup is not None and (why := self.cgroup.fault()):
            return why
        return super().fault()

    # -- commands ----------------------------------------------------------------------

    async def exec(self, command: str, *, timeout: float, env: dict[str, str] | None = None,
                   cwd: str | None = None, stdin: bytes | None = None,
                   trace: bool = False, capture: int | None = None,
                   user: str | None = None) -> ExecResult:
        """Run `command`; with `trace`, every process it starts is recorded (`execs`), and with
        `capture` (bytes per process) also what they write to fd 1 and 2 (the tracer's).
        `user` means nothing here: a local trial has one user."""
        self._touched()
        self._quiet, self._runs = False, self._runs + 1
        env = {**self.env, **env} if env else self.env
        trace = trace or capture is not None
        trace_file = self._trace_file() if trace else None
        if self.box is not None:  # started by the box's spawner (traced: under its tracer)
            res = await self._exec_in_box(command, env, cwd, timeout, stdin, trace_file, capture)
        else:
            argv = ["/bin/sh", "-c", command]
            if trace_file is not None:
                assert isinstance(trace_file, Path)
                argv = tracer_argv(trace_file, capture=capture) + argv
            if self.hosts_file is not None:
                argv = hostsfile.wrap(argv, self.hosts_file)  # outside the tracer: not the agent's
            argv = self._limits_prefix() + argv  # outermost: everything runs inside the limits
            res = await proc.run(argv, timeout=timeout, cwd=cwd or self.workdir, env=env,
                                 stdin=stdin, limit=self.output_limit, on_start=self._groups.add,
                                 feed=self.on_output)
        if trace_file is not None and not res.error and self._take_trace(res, trace_file):
            self._traces.remove(trace_file)  # finished: read_trace released it
        return res

    def _trace_file(self) -> TraceSource:
        """Where the next traced command's trace goes: for the box's tracer a memfd passed to
        it (no file to make, name and remove per command), else a file in the private
        directory (the tracer a plain command is wrapped in writes to a path)."""
        source: TraceSource
        if self.box is not None:
            source = TraceFd.take(self.box.spare_traces)
        else:
            self._trace_n += 1
            source = self.private / f"trace-{self.trial_id}-{self._trace_n}"
        self._traces.append(source)
        return source

    async def _exec_in_box(self, command: str, env: dict[str, str], cwd: str | None,
                           timeout: float, stdin: bytes | None, trace: TraceSource | None,
                           capture: int | None) -> ExecResult:
        assert self.box is not None and not isinstance(trace, Path)
        trace_fd = None if trace is None else trace.fd
        res = await self.box.spawner.run(
            ["/bin/sh", "-c", command], env=env, cwd=cwd or self.workdir, timeout=timeout,
            stdin=stdin, limit=self.output_limit, feed=self.on_output, trace_fd=trace_fd,
            capture=capture_limits(capture) if capture else None,
            as_bytes=None if self.cgroup is not None else self.resources.memory_bytes)
        if res.error:
            self._faults.append(res.error)
        return res

    def _limits_prefix(self) -> list[str]:
        """A wrapper that puts the command in the trial's cgroup (or, without cgroups, under
        an address-space limit) before it runs. A wrapper process rather than code between
        fork and exec: that would force a full fork() of proctor for every command."""
        if self.cgroup is not None:
            return self.cgroup.attach_argv()
        if self.resources.memory_bytes and shutil.which("prlimit"):
            return ["prlimit", f"--as={self.resources.memory_bytes}", "--"]
        return []

    # -- files -------------------------------------------------------------------------

    # Reads on the agent's behalf (checks, an external agent's own files): in a box, opened
    # by the box's spawner with the agent's rights, in the box's view, and the descriptor
    # passed back: a link to a file the agent cannot read is not read for it either.

    async def _open(self, path: str, how: int = OPEN_READ) -> tuple[int, int]:
        assert self.box is not None
        full = posixpath.normpath(posixpath.join(self.workdir, path))
        try:
            return await self.box.spawner.open(full, how)
        except SpawnerLost as e:
            raise OSError(errno.EIO, f"the sandbox lost its process starter ({e})", path) from None

    async def _open_to_stat(self, path: str, how: int) -> tuple[int, int] | None:
        """`_open`, None if `path` is absent."""
        try:
            return await self._open(path, how)
        except OSError as e:
            if e.errno in (errno.ENOENT, errno.ENOTDIR):
                return None
            raise  # EACCES (a directory the agent locked), ELOOP, a lost box: not absent

    async def read_file(self, path: str, limit: int | None = None) -> bytes:
        fd = self._open_host(path) if self.box is None else (await self._open(path))[0]
        return await read_fd(fd, path, limit)

    async def stat(self, path: str) -> Entry | None:
        if self.box is None:
            return self._stat_host(path)
        opened = await self._open_to_stat(path, OPEN_PATH)
        if opened is None:
            return None
        try:
            return entry_of(os.fstat(opened[0]))
        finally:
            os.close(opened[0])

    async def read_if_file(self, path: str, limit: int | None = None) -> tuple[Entry, bytes | None] | None:
        if self.box is None:
            return await super().read_if_file(path, limit)
        opened = await self._open_to_stat(path, OPEN_FILE)
        if opened is None:
            return None
        fd, unread = opened
        try:
            st = os.fstat(fd)
        except OSError:
            os.close(fd)
            raise
        entry = entry_of(st)
        if entry.kind != "file" or unread:
            os.close(fd)
            if unread:
                raise UnreadableFile(unread, os.strerror(unread), path)
            return entry, None
        try:
            return entry, await read_fd(fd, path, limit, st)  # closes it
        except OSError as e:
            raise UnreadableFile(e.errno, e.strerror, path) from None

    async def list_dir(self, path: str) -> list[str]:
        fd = (self._open_host(path, directory=True) if self.box is None
              else (await self._open(path))[0])
        return list_fd(fd)

    # -- checks that execute something ---------------------------------------------------

    def grader_path(self, name: str) -> str:
        """Where a file given to `grade` (`files`) is, as the check's command sees it."""
        if self.slot is not None:
            return f"{grader.TOOLS}/files/{name}"
        return str(self.private / "grader" / "files" / name)

    async def grade(self, argv: Sequence[str], *, timeout: float,
                    env: dict[str, str] | None = None, cwd: str | None = None,
                    stdin: bytes | None = None, files: dict[str, bytes | Path] | None = None,
                    readonly: Sequence[str] = (), host: bool = False) -> ExecResult:
        """A check's command, in the grader box beside the trial's (sandbox/grader.py):
        the trial's files read-only, its own HOME and /tmp, its own uid, the trial's
        services only. Not isolated (`--isolation none`) there is no grader box: the command
        runs like the agent's, as proctor's user, with the safe git first on PATH. `host`
        (the host's tools) changes nothing here: this sandbox has the host's tools."""
        self._touched()  # its box sees the places read-only; forgotten all the same
        if self.slot is not None:
            extra = tuple(sorted({p for p in readonly if os.path.exists(p)}))
            run_env = {"PROCTOR_RUN_ID": self.env.get("PROCTOR_RUN_ID", "")}
            box = await grader.for_slot(self.slot, extra, self.resources, run_env)
            res = await box.run(argv, env=box.env(self.env, env), cwd=cwd or self.workdir,
                                timeout=timeout, stdin=stdin, files=files,
                                endpoints=self.endpoints, resources=self.resources,
                                limit=self.output_limit)
            if (why := box.fault()) is not None:
                res.error = res.error or why
            return res
        tools = self.private / "grader"
        await asyncio.to_thread(grader.unisolated_tools, tools, files or {})
        path = f"{tools / 'bin'}:" + (env or {}).get("PATH", self.env.get("PATH", SYSTEM_PATH))
        try:
            return await self.exec(shlex.join(argv), timeout=timeout, cwd=cwd, stdin=stdin,
                                   env={**(env or {}), "PATH": path})
        finally:
            await asyncio.to_thread(shutil.rmtree, tools / "files", True)

    async def expose(self, host: str, port: int) -> tuple[str, int]:
        if self.box is None or self.forwarder is None:
            return host, port
        sock = await self.box.spawner.listen(host, port)
        await self.forwarder.forward(sock, (host, port))
        return host, port

    async def serve_inside(self, host: str, port: int, handler: Handler) -> None:
        """Serve `handler` at host:port inside the box for this trial (the egress proxy)."""
        if self.slot is None:
            raise RuntimeError("serve_inside needs an isolated sandbox")
        await self.slot.serve(host, port, handler)
