"""The docker backend: one container per trial, from the task's image (see docs/docker.md).

The container runs with no network of its own (`--network none`): like the local backend's
box, it has only loopback, and proctor binds each endpoint the trial may reach (its services,
a model proxy, the egress proxy) *inside* the container's network namespace (forward.py). So
nothing is named or published on the host: no fixed container names, no host ports, no
networks to collide at any concurrency, and the network policy is the egress proxy's, as on
the local backend.

The writable places (workspace, HOME, /tmp, /dev/shm) are host directories under the trial's
`root`, bind-mounted into the container, so files, snapshots and `export` are read on the
host through the places' path view both backends share (placefiles.py; symlinks resolved as
the container sees them);
any other path is read with `docker exec`. Commands run as uid 65534, as on the local
backend (proctor runs as root with this backend: it enters the containers' network
namespaces). Every container carries the labels
`proctor.run=<run id>` and `proctor.trial=<trial id>`; `sweep` removes a killed run's.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import posixpath
import shutil
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from proctor import proc
from proctor.dockercli import (
    RUN_LABEL,
    TRIAL_LABEL,
    create_request,
    docker,
    exec_in,
    finish,
    inspect,
    remove,
    run_detached,
)
from proctor.sandbox import grader
from proctor.sandbox.base import Capabilities, Entry, ExecResult, SandboxSpec
from proctor.sandbox.cgroup import limit_hit
from proctor.sandbox.docker import grade as docker_grade
from proctor.sandbox.docker import processes
from proctor.sandbox.forward import Forwarder, Handler, listen_inside
from proctor.sandbox.namespaces import AGENT_UID
from proctor.sandbox.placefiles import INSIDE_WORKDIR, SYSTEM_PATH, PlaceFiles, list_fd, read_fd
from proctor.sandbox.pool import INSIDE_HOME, Shape
from proctor.sandbox.trace import tracer, tracer_argv

PRIVATE = "/.proctor"  # the trial's private host dir inside (traces); not a writable place
EXEC_MARK = "PROCTOR_EXEC"  # in every command's environment: what a timeout kills
# The tracer inside the container (trace.py's, built static, mounted read-only): it runs as
# root there, around the command that drops to the agent's uid.
TRACER = "/.proctor-exectrace"
# proctor's launcher (launch.c, static, mounted read-only): docker exec starts it as root
# around every command, so nothing the agent could change in the container (its /bin/sh, its
# setpriv, a library) runs before proctor's own code. It relays the command's output until
# the command exits (then for at most 0.2 s: a daemon the command left cannot hold docker
# exec open), and, as the traced command's first program, drops to the command's
# privileges: no CAP_SYS_PTRACE for any agent process, so none can trace the container's
# keeper, a tracer or a verifier, all of which hold it.
LAUNCH = "/.proctor-launch"
_CLIENT_VARS = ("DOCKER_HOST", "DOCKER_CONFIG", "DOCKER_CONTEXT")  # where the client goes


CONTAINER = Capabilities(isolated=True, traced=True, host_files=True, grader_box=True,
                         serves_inside=True, image_services=True, image_environment=True,
                         installs_packages=True, engine_images=True,
                         needs_root=True)


class DockerSandbox(PlaceFiles):
    """A trial's container. File access goes through the bind-mounted places on the host
    (placefiles.py's path view); commands and paths outside the places go through the engine."""

    capabilities = replace(CONTAINER, image_environment=False)  # proctor's places in the image

    def __init__(self, spec: SandboxSpec, image: str):
        super().__init__(spec.root, trial_id=spec.trial_id, output_limit=spec.output_limit,
                         keep=spec.keep, resources=spec.resources, hosts=spec.hosts,
                         isolated=True, on_output=spec.on_output)
        self.workdir = spec.workdir or INSIDE_WORKDIR
        self.places = sorted(((inside, spec.root / name) for name, inside in
                              Shape(self.workdir).places().items()),
                             key=lambda p: len(p[0]), reverse=True)
        self.env = {"PATH": SYSTEM_PATH, **spec.env, "HOME": INSIDE_HOME, "TMPDIR": "/tmp",
                    "PWD": self.workdir, "PROCTOR_WORKDIR": self.workdir}
        self.image = image
        self.run_id = spec.env.get(proc.RUN_ID_VAR, "")
        self.container: str | None = None
        self.info: dict[str, Any] = {}  # `docker inspect` of the container once started
        self.pid = 0  # the container's init, as the host sees it (network namespace)
        self.keeper = 0  # the long-running process that keeps the container up (host pid)
        self.uid = self.gid = AGENT_UID
        self.owner = (self.uid, self.gid)
        self._execs = 0
        self._init: int | None = None  # a pidfd of the container's init, once started
        self._cgroup: dict[str, Path] = {}
        self.host_graders: dict[tuple[str, ...], Any] = {}  # runs_in: host (grade.py)
        self.served: list[tuple[str, int, Handler]] = []  # serve_inside's (the egress proxy)

    # -- lifecycle ---------------------------------------------------------------------

    async def start(self, spec: SandboxSpec) -> None:
        await asyncio.to_thread(self._make_dirs)
        await self._launch(self._run_argv(spec))
        await self._connect(spec)

    def _run_argv(self, spec: SandboxSpec) -> list[str]:
        """`docker run` arguments of the trial's container."""
        r = self.resources
        argv = ["run", "-d", *_REMOVED_ON_EXIT, "--init", "--network", "none",
                "--label", f"{RUN_LABEL}={self.run_id}", "--label", f"{TRIAL_LABEL}={self.trial_id}",
                # The keeper as root (with CAP_SYS_PTRACE): out of reach of the agent's uid,
                # which could otherwise trace it and outlive the kill through it.
                "--user", "0:0", "--workdir", self.workdir,
                # Only the places are writable, as in the local box: every write the agent
                # can make is in the snapshot (no /var/tmp or /run/lock on the side).
                "--read-only",
                # For the tracer (root inside): reading the args of a process that has just
                # changed uid. No agent process holds it (launch drop).
                "--cap-add", "SYS_PTRACE", *_own_hostname(),
                *_proctor_programs(self.private),
                "-v", f"{self.root / 'grader'}:{grader.TOOLS}"]  # checks' tools and scratch
        for inside, host in sorted(self.places, key=lambda p: p[0].count("/")):
            argv += ["-v", f"{host}:{inside}"]
        for path in spec.readonly_paths:  # an agent's program, a client config: same path, ro
            if os.path.exists(path):
                argv += ["-v", f"{path}:{path}:ro"]
        for i, closed in enumerate(_closed_ancestors(spec.readonly_paths)):
            # e.g. /root (0700) on the way to a pyenv interpreter: an empty, root-owned but
            # traversable directory there lets the agent's uid reach the mount, nothing else.
            # (A tmpfs would copy the image's 0700 up.)
            over = self.private / f"over-{i}"
            over.mkdir(mode=0o755, exist_ok=True)  # made already by headstart
            argv += ["-v", f"{over}:{closed}"]
        if r.memory_bytes:  # no swap beyond the limit: the limit is the trial's memory
            argv += ["--memory", str(r.memory_bytes), "--memory-swap", str(r.memory_bytes)]
        if r.cpus:
            argv += ["--cpus", f"{r.cpus:g}"]
        if r.pids:
            argv += ["--pids-limit", str(r.pids)]
        if r.disk_bytes:  # no file past the disk limit; the total is measured (disk.py)
            argv += ["--ulimit", f"fsize={r.disk_bytes}:{r.disk_bytes}"]
        for name, address in sorted(self.hosts.items()):
            argv += ["--add-host", f"{name}:{address}"]
        # docker-init reaps orphans; its one child (the keeper) holds the container up.
        return [*argv, "--entrypoint", "sleep", self.image, "2147483647"]

    async def _launch(self, argv: list[str]) -> None:
        body = create_request(argv)
        # The container begun at start-up when it is this very one (headstart.py); the run's
        # first container is remembered for the next identical run.
        job = asyncio.ensure_future(_made(body, argv, self.run_id, self.root.parent))
        # Not cancelled half-way (Ctrl-C): a container the engine made must be known to be removed.
        try:
            self.container = await asyncio.shield(job)
        except asyncio.CancelledError:
            with contextlib.suppress(Exception):
                self.container = await job
            raise
        try:
            self.info = await inspect(self.container)
        except OSError:  # already exited, and removed by the engine (--rm)
            self.info = {}
        state = self.info.get("State") or {}
        if state.get("Running") is not True:
            logs = await docker("logs", "--tail", "5", self.container)
            said = (logs.stderr or logs.stdout).strip()[-300:] if logs.exit_code == 0 else ""
            raise OSError(f"the container of image {self.image} did not start: " + (
                said or f"it exited at once ({_exited(state)}) and the engine removed it"))
        self.pid = int(state["Pid"])
        self._init = processes.pidfd_of(self.pid, self.container)
        self.keeper = await asyncio.to_thread(self._keeper_pid)
        self._cgroup = await asyncio.to_thread(processes.cgroup_dirs, self.pid)

    async def _connect(self, spec: SandboxSpec) -> None:
        """The trial's endpoints, reachable inside at their own addresses."""
        self.forwarder = Forwarder()
        for address in _with_every_port(spec.endpoints, self.hosts):
            await self.expose(*address)

    def _make_dirs(self) -> None:
        for _, d in self.places:
            d.mkdir(parents=True, exist_ok=True)
            os.chown(d, self.uid, self.gid)
        docker_grade.make_tools(self.root / "grader")
        self.private.mkdir(parents=True, exist_ok=True)
        self.private.chmod(0o700)  # only root inside (the tracer) writes here

    def _keeper_pid(self) -> int:
        """The init's only child at start, as the host numbers it (waiting the moment the
        init may take to fork it: killing the keeper would stop the container)."""
        for _ in range(500):
            try:
                children = Path(f"/proc/{self.pid}/task/{self.pid}/children").read_text().split()
            except OSError:
                break
            if children:
                return int(children[0])
            time.sleep(0.01)
        raise OSError(f"the container of image {self.image} did not start its keeper process")

    spared: frozenset[tuple[int, str]] = frozenset()  # (pid, start time): never killed

    def _processes(self) -> list[int]:
        """Host pids of every process in the container but its init and keeper, and those
        `spared` (proctor runs as root: cheaper than a `docker exec` per kill)."""
        try:
            ns = os.readlink(f"/proc/{self.pid}/ns/pid")
        except OSError:
            return []
        out = []
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit() or int(entry.name) in (self.pid, self.keeper):
                continue
            try:
                if os.readlink(f"/proc/{entry.name}/ns/pid") == ns and not (
                        self.spared
                        and (int(entry.name), processes.started(int(entry.name))) in self.spared):
                    out.append(int(entry.name))
            except OSError:
                continue
        return out

    def _kill(self, mark: bytes | None = None) -> int:
        """SIGKILL the container's processes (only those whose environment holds `mark`)
        until none is left (proc.kill_until_gone). Blocking: off the event loop."""
        def marked() -> list[int]:
            return [pid for pid in self._processes() if mark is None or processes.has(pid, mark)]
        return proc.kill_until_gone(marked)

    async def close(self) -> None:
        await finish(self._close())

    async def _close(self) -> None:
        graders, self.host_graders = list(self.host_graders.values()), {}
        for box in graders:
            await box.close()
        if self.forwarder is not None:
            await self.forwarder.close()
        if self.container is not None:
            # The container's init killed: its processes with it, and the engine removes
            # the container (--rm) on its own, so the trial does not wait ~0.1 s for that.
            # Without a handle on the init (never started), the removal is awaited.
            if not processes.killed(self._init):
                await remove(self.container)
            self.container = None
        if self._init is not None:
            os.close(self._init)
            self._init = None
        if not self.keep:
            await asyncio.to_thread(shutil.rmtree, self.root, True)

    async def kill_processes(self) -> int:
        if self.container is None:
            return 0
        return await asyncio.to_thread(self._kill)

    async def keep_processes(self) -> int:
        """What runs now keeps running; `kill_processes` spares it from now on. None of it
        holds CAP_SYS_PTRACE (launch drop), so none of it can reach the keeper, a tracer or
        grading, which hold it."""
        running = await asyncio.to_thread(self._processes)
        self.spared = self.spared | {(p, processes.started(p)) for p in running}
        return len(running)

    def fault(self) -> str | None:
        return super().fault() or limit_hit(self._cgroup, self.resources)

    # -- commands ----------------------------------------------------------------------

    def _as_agent(self, command: str, user: str | None) -> list[str]:
        """The command as the agent's uid (`user` means something only for an image that is
        the task's environment: taskenv.py)."""
        return _drop(self.uid, self.gid, ["/bin/sh", "-c", command])

    async def exec(self, command: str, *, timeout: float, env: dict[str, str] | None = None,
                   cwd: str | None = None, stdin: bytes | None = None,
                   trace: bool = False, capture: int | None = None,
                   user: str | None = None) -> ExecResult:
        """`user` means something only where the image is the environment (taskenv.py)."""
        return await self.run_as(self.uid, command, timeout=timeout, env=env, cwd=cwd,
                                 stdin=stdin, trace=trace, capture=capture, user=user)

    async def grade(self, argv: Sequence[str], *, timeout: float,
                    env: dict[str, str] | None = None, cwd: str | None = None,
                    stdin: bytes | None = None, files: dict[str, bytes | Path] | None = None,
                    readonly: Sequence[str] = (), host: bool = False) -> ExecResult:
        """A check's command: in the container as the grader's uid (grade.py)."""
        return await docker_grade.grade(self, argv, timeout=timeout, env=env, cwd=cwd,
                                        stdin=stdin, files=files, readonly=readonly, host=host)

    def grader_path(self, name: str) -> str:
        return f"{grader.TOOLS}/files/{name}"

    async def run_as(self, uid: int, command: str, *, timeout: float,
                     env: dict[str, str] | None = None, cwd: str | None = None,
                     stdin: bytes | None = None, trace: bool = False,
                     capture: int | None = None, user: str | None = None) -> ExecResult:
        """`sh -c command` in the container as `uid` (the agent's, or the grader's; `user`:
        an image's user by name, for an image that is the task's environment)."""
        assert self.container is not None
        trace = trace or capture is not None
        self._execs += 1
        mark = f"{EXEC_MARK}={self._execs}"
        full = {**self.env, **(env or {}), EXEC_MARK: str(self._execs)}
        # Values travel in the client's own environment (`-e NAME`), never in an argv.
        argv = ["exec", *(["-i"] if stdin is not None else []),
                "-w", cwd or self.workdir, "-u", "0"]
        for name in full:
            argv += ["-e", name]
        argv.append(self.container)
        # The launcher and the tracer run as root inside; the command as `uid`.
        inner = (self._as_agent(command, user) if uid == self.uid
                 else _drop(uid, uid, ["/bin/sh", "-c", command]))
        trace_file = None
        if trace:
            trace_file = self.private / f"trace-{self._execs}"
            inner = [*tracer_argv(Path(PRIVATE, trace_file.name), TRACER, capture), *inner]
        inner = [LAUNCH, "run", "--", *inner]
        client_env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **full}
        for name in (*_CLIENT_VARS, "HOME"):
            if name in os.environ and name not in (env or {}):
                client_env.setdefault(name, os.environ[name])
        res = None
        if not set(_CLIENT_VARS) & set(env or {}):  # through the API socket where it is the client's
            res = await exec_in(self.container, inner, env=full, workdir=cwd or self.workdir,
                                user="0", timeout=timeout, stdin=stdin,
                                limit=self.output_limit, feed=self.on_output)
        if res is None:
            res = await docker(*argv, *inner, timeout=timeout, env=client_env, stdin=stdin,
                               limit=self.output_limit, feed=self.on_output)
        if res.timed_out:  # the client died; what it started in the container did not
            await asyncio.to_thread(self._kill, mark.encode())
        if trace_file is not None:
            self._take_trace(res, trace_file, (posixpath.basename(LAUNCH),))  # removed once finished
        return res

    async def expose(self, host: str, port: int) -> tuple[str, int]:
        """Bind host:port inside the container's network namespace, piped to the host's."""
        if self.forwarder is None:
            return host, port
        sock = await listen_inside(self.pid, host, port)
        await self.forwarder.forward(sock, (host, port))
        return host, port

    async def serve_inside(self, host: str, port: int, handler: Handler) -> None:
        if self.forwarder is None:
            raise RuntimeError("serve_inside needs a started container")
        sock = await listen_inside(self.pid, host, port)
        await self.forwarder.serve(sock, handler)
        self.served.append((host, port, handler))  # a separate verifier's container serves them too

    # -- files: the places on the host, anything else through the engine ---------------

    def _inside(self, path: str) -> str:
        return posixpath.normpath(posixpath.join(self.workdir, path))

    async def _probe(self, script: str, path: str) -> tuple[int | None, bytes]:
        """(exit code, stdout bytes) of a script run inside with $1 = path, as the agent's
        uid: what the agent cannot read, proctor does not read for it."""
        assert self.container is not None
        res = await docker("exec", "-u", f"{self.uid}:{self.gid}", self.container, "/bin/sh", "-c", script, "probe",
                           path, timeout=60, binary=True)
        return res.exit_code, res.stdout_bytes or b""

    def _as_agent_may(self, path: str, want: int = 0) -> bool:
        """Whether `path`, in the places, is there for the agent's uid: every directory on
        the way searchable by it, and the path itself allowing `want` (os.R_OK...). proctor
        reads the places as root on the host: what the agent locked away (chmod 000) is
        not seen for it, and cannot be told absent (docs/checks.md)."""
        host = self.host_path(path)
        assert host is not None
        place = next(h for _, h in self.places if host == h or h in host.parents)
        uid, gid = self.owner or (0, 0)
        if uid == 0:
            return True
        steps = [d for d in host.parents if d == place or place in d.parents][::-1]
        checks = [(d, os.X_OK) for d in steps] + ([(host, want)] if want else [])
        for where, bit in checks:
            st = os.stat(where)
            shift = 6 if st.st_uid == uid else 3 if st.st_gid == gid else 0
            if not (st.st_mode >> shift) & bit:
                return False
        return True

    def _host_or_locked(self, path: str, want: int = 0) -> bool:
        """Whether `path` is read on the host (in the places); PermissionError when the
        agent's uid could not reach it there."""
        if self.host_path(path) is None:
            return False
        try:
            allowed = self._as_agent_may(path, want)
        except FileNotFoundError:
            return True  # absent: the host read says so
        if not allowed:
            raise PermissionError(errno.EACCES, "the agent cannot reach it", path)
        return True

    async def read_file(self, path: str, limit: int | None = None) -> bytes:
        if self._host_or_locked(path, os.R_OK):
            return await read_fd(self._open_host(path), path, limit)
        head = f"head -c {limit + 1}" if limit is not None else "cat"
        code, out = await self._probe('[ -d "$1" ] && exit 21; [ -e "$1" ] || exit 2; '
                                      f'{head} -- "$1" || exit 13', self._inside(path))
        if code == 0:
            return out
        code = {2: errno.ENOENT, 21: errno.EISDIR}.get(code or 0, errno.EACCES)
        raise {errno.ENOENT: FileNotFoundError, errno.EISDIR: IsADirectoryError}.get(
            code, PermissionError)(code, os.strerror(code), path)

    async def stat(self, path: str) -> Entry | None:
        if self._host_or_locked(path):
            return self._stat_host(path)
        code, out = await self._probe('stat -L -c "%F %s" -- "$1"', self._inside(path))
        if code != 0:
            return None
        kind, _, size = out.decode(errors="replace").strip().rpartition(" ")
        kinds = {"regular file": "file", "regular empty file": "file", "directory": "dir",
                 "symbolic link": "symlink"}
        return Entry(kinds.get(kind, "other"), int(size or 0), "")  # type: ignore[arg-type]

    async def list_dir(self, path: str) -> list[str]:
        if self._host_or_locked(path, os.R_OK):
            return list_fd(self._open_host(path, directory=True))
        code, out = await self._probe('cd -- "$1" || exit 2; for f in * .*; do case "$f" in '
                                      '.|..) continue;; esac; [ -e "$f" ] || [ -L "$f" ] || '
                                      'continue; [ -d "$f" ] && echo "$f/" || echo "$f"; done',
                                      self._inside(path))
        if code != 0:
            raise FileNotFoundError(errno.ENOENT, "no such directory in the sandbox", path)
        return sorted(out.decode(errors="replace").splitlines())


def _with_every_port(endpoints: list[tuple[str, int]],
                     hosts: dict[str, str]) -> list[tuple[str, int]]:
    """The endpoints, plus every other port listening on a service's own loopback address
    (an image service's second and later `ports`: the trial names only the first). Such an
    address is private to one service (services/_net.py), so all it serves is that service."""
    out = list(dict.fromkeys(endpoints))
    own = {a for a in hosts.values() if a.startswith("127.") and a != "127.0.0.1"}
    if not own:
        return out
    try:
        lines = Path("/proc/net/tcp").read_text().splitlines()[1:]
    except OSError:
        return out
    for line in lines:
        fields = line.split()
        if len(fields) < 4 or fields[3] != "0A":  # LISTEN
            continue
        addr_hex, port_hex = fields[1].split(":")
        address = ".".join(str(b) for b in reversed(bytes.fromhex(addr_hex)))
        if address in own and (address, int(port_hex, 16)) not in out:
            out.append((address, int(port_hex, 16)))
    return out


async def _made(body: dict[str, Any] | None, argv: list[str], run_id: str, scratch: Path) -> str:
    """The container of `argv`: the one begun at start-up if it was made with this request
    (headstart.claim), else made now; the run's first request remembered (headstart)."""
    from proctor import headstart

    early = await asyncio.to_thread(headstart.claim, body)
    headstart.remember(body, run_id, scratch)
    return early if early is not None else await run_detached(argv)


# Every trial container is removed by the engine once it stops (HostConfig.AutoRemove):
# closing a trial only kills its init; a crashed or killed run's are the janitor's, as before.
_REMOVED_ON_EXIT = ("--rm",)


def _exited(state: dict[str, Any]) -> str:
    code, error = state.get("ExitCode"), state.get("Error")
    return error or (f"exit code {code}" if code is not None else "no state left")


def _closed_ancestors(paths: list[str]) -> list[str]:
    """The outermost directories on the way to `paths` that others may not traverse here
    (and so, likely, in the image: /root)."""
    out: list[str] = []
    for path in paths:
        parts = [p for p in Path(path).parts[1:-1]]
        for i in range(1, len(parts) + 1):
            ancestor = "/" + "/".join(parts[:i])
            try:
                closed = not os.stat(ancestor).st_mode & 0o001
            except OSError:
                break
            if closed:
                if ancestor not in out:
                    out.append(ancestor)
                break
    return out


def _own_hostname() -> list[str]:
    """`docker run` arguments for a hostname that resolves, as on Docker's bridge (whose
    /etc/hosts maps it to the container's address): with no network of its own Docker leaves
    it out, and getaddrinfo(gethostname()) fails (gloo, a JVM, sudo wait on it)."""
    import secrets

    name = secrets.token_hex(6)  # as Docker names it: 12 hex digits
    return ["--hostname", name, "--add-host", f"{name}:127.0.1.1"]


def _proctor_programs(private: Path) -> list[str]:
    """`docker run` mounts of proctor's own programs (read-only) and private directory."""
    from proctor.sandbox import native

    return ["-v", f"{private}:{PRIVATE}", "-v", f"{tracer()}:{TRACER}:ro",
            "-v", f"{native.binary('launch')}:{LAUNCH}:ro"]


def _drop(uid: int, gid: int, argv: list[str], *, caps: bool = False,
          userns: bool = False, userns_of: int | None = None) -> list[str]:
    """`argv` as the agent's uid:gid through proctor's launcher: no supplementary groups, no
    new privileges, and (unless `caps`, for an image's own non-root user) an empty bounding
    set, so setuid programs stay unprivileged, as in the local box. Root keeps Docker's
    default capabilities, as under Harbor, but neither CAP_SYS_PTRACE nor CAP_MKNOD; with
    `userns`, only in a user namespace of its own, none in the container's; `userns_of`, the
    one of that process (the container's pid of the keeper: launch.c)."""
    if uid == 0:
        ns = (["--userns-of", str(userns_of)] if userns_of is not None
              else ["--userns"] if userns else [])
        return [LAUNCH, "drop", "--agent", *ns, "--", *argv]
    return [LAUNCH, "drop", "--agent", "--uid", str(uid), "--gid", str(gid),
            *([] if caps else ["--no-caps"]), "--", *argv]
