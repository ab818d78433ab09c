"""A container that *is* the task's environment (a Harbor task's), not proctor's places in it.

DockerSandbox (container.py) runs every trial in proctor's shape: a read-only image, four
bind-mounted writable places, the agent as uid 65534. A Harbor task's image is its whole
world instead: files live where the Dockerfile put them (`/app`), the agent works as the
image's user (root, usually) in its WORKDIR, installs packages, and the image's ENTRYPOINT
starts whatever the task needs (a daemon, /etc/hosts entries). So here:

* the container keeps its ENTRYPOINT (its command is a long sleep, as Harbor's compose file
  has it), its USER, its Env (PATH) and its WORKDIR (or task.toml's `workdir`), and a
  writable root file system; no network (`--network none`), endpoints and the egress proxy
  as for every docker trial;
* files are read and written through `/proc/<init>/root` on the host, with symlinks resolved
  inside the container's view (placefiles.py's path view over one place, `/`);
* a snapshot is `docker diff` (what changed from the image, whatever the storage driver), each
  changed file known by size, mtime, ctime and inode (ctime cannot be set back);
* what the ENTRYPOINT started before the agent, and what the agent left running when it was
  done (`keep_processes`: a server its task asked for), keep serving the verifier, as under
  Harbor; none of it holds CAP_SYS_PTRACE, so none of it can reach the keeper, the tracers or
  the verifier (container.py's launcher), and the verifier's tests, trace and reward live in a
  mount namespace of its own (verifier.py); everything a check started is killed after it;
* what the agent wrote anywhere is seen: the container's own layer, and the files Docker
  mounts over it (/etc/hosts, /etc/resolv.conf, /etc/hostname) and /dev/shm;
* names the image's own /etc/hosts points at loopback are reached directly, not through the
  egress proxy (NO_PROXY), as they would be in Harbor;
* the CA certificates of proctor's installer substitutes and this machine's own extra CAs
  are trusted inside (docs/harbor.md#downloads-at-verify-time).
"""

from __future__ import annotations

import asyncio
import os
import posixpath
import shutil
import stat as stat_mod
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from proctor import proc
from proctor.dockercli import RUN_LABEL, TRIAL_LABEL, docker, image_config
from proctor.sandbox import files
from proctor.sandbox.base import Entry, SandboxSpec, Snapshot
from proctor.sandbox.docker.container import (
    _REMOVED_ON_EXIT,
    CONTAINER,
    LAUNCH,
    PRIVATE,
    TRACER,
    DockerSandbox,
    _drop,
    _own_hostname,
    _proctor_programs,
)
from proctor.sandbox.docker.processes import started
from proctor.sandbox.docker.verifier import VERIFIER_DIR
from proctor.sandbox.placefiles import SNAPSHOT_TIMEOUT_S

if TYPE_CHECKING:
    from proctor.sandbox.docker.verifier import Verification

# How long the ENTRYPOINT may take to hand over to the keeper (exec "$@") and what it started
# to settle, as on an idle machine: the wait is stretched by the time they spent waiting for a
# CPU (a loaded machine, a low `cpus`), up to SETTLE_WALL_S.
SETTLE_S = 10.0
SETTLE_WALL_S = 60.0
LOOPBACK = ("127.", "::1", "0.0.0.0")
# Empty tmpfs in the container's namespace: mount points no agent process can rename away
# (an image's ENTRYPOINT may still chmod or write them; nothing reads what is written there),
# over which the verifier binds its own in a namespace of its own.
PRIVATE_MOUNTS = ("/tests", "/logs/verifier")
# What Harbor makes for every task: the agent's logs, and what it publishes (collected
# after the trial: spec/harbor.py adds it to the task's artifacts).
HARBOR_LOGS = ("/logs/agent", "/logs/artifacts")
MOUNTED = ("/etc/hosts", "/etc/resolv.conf", "/etc/hostname")  # Docker's, over the layer
SHM = "/dev/shm"
PROCTOR_PATHS = (PRIVATE, TRACER, LAUNCH, VERIFIER_DIR, *PRIVATE_MOUNTS)


class ImageSandbox(DockerSandbox):
    """See the module docstring."""

    capabilities = CONTAINER  # the image is the environment

    @classmethod
    async def make(cls, spec: SandboxSpec, image: str,
                   configs: dict[str, dict[str, Any]] | None = None) -> ImageSandbox:
        """`configs`: the image configs already read (a run's: its images are made ready
        before any trial and do not change during it)."""
        configs = {} if configs is None else configs
        if image not in configs:
            configs[image] = await image_config(image)
        return cls(spec, image, configs[image])

    def __init__(self, spec: SandboxSpec, image: str, config: dict[str, Any]):
        super().__init__(spec, image)
        self.config = config
        want = spec.image_env
        self.workdir = want.workdir or config.get("WorkingDir") or "/"
        self.image_user = str(config.get("User") or "0")  # checks run as it by default
        self.agent_user = str(want.user) if want.user is not None else self.image_user
        image_env = dict(e.split("=", 1) for e in config.get("Env") or [] if "=" in e)
        # The image's environment first (its PATH), then the trial's; HOME, PWD follow the user.
        self.env = {**image_env, **{k: v for k, v in spec.env.items() if k != "PATH"},
                    "PWD": self.workdir, "PROCTOR_WORKDIR": self.workdir}
        self.env.pop("TMPDIR", None)
        self.places = []  # the container's root, once it runs
        self.upper: Path | None = None  # its own layer on the host (overlay2), for snapshots
        self.lowers: list[Path] = []  # the image's layers under it (overlay2)
        self._users: dict[str, tuple[int, int, str]] = {}
        self.userns = False  # a root agent in a user namespace of its own (start)
        self.userns_of: int | None = None  # ... the keeper's (its pid in the container)
        self.spec = spec  # what a separate verifier's container is made from (separate.py)
        # A separate verifier's container keeps its image's /tests (no agent runs there).
        self.private_mounts: tuple[str, ...] = PRIVATE_MOUNTS

    def _make_dirs(self) -> None:
        for d in (self.private, self.root / "verifier"):
            d.mkdir(parents=True, exist_ok=True)
            d.chmod(0o700)

    def _run_argv(self, spec: SandboxSpec) -> list[str]:
        r = self.resources
        argv = ["run", "-d", *_REMOVED_ON_EXIT, "--init", "--network", "none",
                "--label", f"{RUN_LABEL}={self.run_id}", "--label", f"{TRIAL_LABEL}={self.trial_id}",
                "--cap-add", "SYS_PTRACE", *_own_hostname(), *_proctor_programs(self.private),
                # A root agent runs in a user namespace of its own (launch drop), which
                # Docker's profile would refuse it; proctor's launcher filters every command
                # as that profile does (launch.c).
                "--security-opt", "seccomp=unconfined",
                "-v", f"{self.root / 'verifier'}:{VERIFIER_DIR}"]
        for path in self.private_mounts:
            argv += ["--tmpfs", f"{path}:mode=0755,size=64m"]
        for path in spec.readonly_paths:
            if os.path.exists(path):
                argv += ["-v", f"{path}:{path}:ro"]
        if r.memory_bytes:
            argv += ["--memory", str(r.memory_bytes), "--memory-swap", str(r.memory_bytes)]
        if r.cpus:
            argv += ["--cpus", f"{r.cpus:g}"]
        if r.pids:
            argv += ["--pids-limit", str(r.pids)]
        for name, address in sorted(self.hosts.items()):
            argv += ["--add-host", f"{name}:{address}"]
        if (self.image_user or "0").partition(":")[0] in ("0", "root"):
            # The image's own ENTRYPOINT runs, in the user namespace every command of a root
            # agent's then shares (launch.c, `drop`), where the host allows one.
            return [*argv, "--entrypoint", LAUNCH, self.image,
                    "drop", "--agent", "--userns-if-allowed", "--",
                    *(self.config.get("Entrypoint") or []), "sleep", "2147483647"]
        return [*argv, self.image, "sleep", "2147483647"]  # the image's own ENTRYPOINT runs

    async def start(self, spec: SandboxSpec) -> None:
        await asyncio.to_thread(self._make_dirs)
        await self._launch(self._run_argv(spec))
        self.places = [("/", Path(f"/proc/{self.pid}/root"))]
        await self._cover(VERIFIER_DIR)
        self.upper, self.lowers = _layers(self.info)
        await asyncio.to_thread(self._settle)
        self.userns_of = await asyncio.to_thread(self._keepers_userns)
        if self.userns_of is None:
            assert self.container is not None
            self.userns = await _userns_here(self.container)
        uid, gid, home = await asyncio.to_thread(self._user, self.agent_user)
        self.uid, self.gid = uid, gid
        self.owner = (uid, gid)
        self.env["HOME"] = home
        await asyncio.to_thread(self._prepare_inside)
        self.spared = frozenset((p, started(p)) for p in self._processes())
        await self._connect(spec)

    async def _cover(self, path: str) -> None:
        """An empty read-only tmpfs over `path` in the container's namespace, before anything
        but the ENTRYPOINT runs there (launch.c's `cover`)."""
        res = await proc.run([shutil.which("nsenter") or "nsenter", f"--target={self.pid}",
                              "--mount", "--pid", "--root", "--wd", "--", LAUNCH,
                              "cover", path], timeout=60)
        if res.exit_code != 0:
            raise OSError(f"could not cover {path} in the container: "
                          f"{(res.stderr or res.stdout).strip()[-300:]}")

    def _settle(self) -> None:
        """Wait (a little) until the ENTRYPOINT has handed over to the keeper (`exec "$@"`)
        and the daemons it started in the background have settled (none running or in a
        disk wait, twice in a row: a server still importing has not bound its port yet), so
        what it sets up (/etc/hosts, daemons) is there before anything runs. The bound is
        SETTLE_S plus the time they waited for a CPU: with many trials on few cores a
        server's start takes longer, and the agent's first command must not race it."""
        start = time.monotonic()
        seen: dict[int, float] = {}  # each process's run-queue wait when first seen
        stalled = 0.0

        def waiting(pids: list[int]) -> bool:
            nonlocal stalled
            for pid in pids:
                delay = _run_delay(pid)
                stalled = max(stalled, delay - seen.setdefault(pid, delay))
            return time.monotonic() - start < min(SETTLE_S + stalled, SETTLE_WALL_S)

        while waiting([self.keeper]):
            try:
                if Path(f"/proc/{self.keeper}/comm").read_text().strip() == "sleep":
                    break
            except OSError:
                return
            time.sleep(0.05)
        quiet = 0
        while waiting(left := self._processes()):
            if not left:  # nothing in the background: nothing can start later either
                return
            quiet = 0 if any(_state(pid) in "RD" for pid in left) else quiet + 1
            if quiet == 2:
                return
            time.sleep(0.02)

    def _keepers_userns(self) -> int | None:
        """The keeper's pid in the container if it runs in a user namespace of its own (it
        asked for one before it ran anything: see `_run_argv`), else None."""
        try:
            if os.readlink(f"/proc/{self.keeper}/ns/user") == os.readlink("/proc/self/ns/user"):
                return None
            status = Path(f"/proc/{self.keeper}/status").read_text()
        except OSError:
            return None
        nspid = next((ln.split()[-1] for ln in status.splitlines() if ln.startswith("NSpid:")), "")
        return int(nspid) if nspid.isdigit() else None

    def _prepare_inside(self) -> None:
        """The working directory exists; Harbor's /logs/agent and /logs/artifacts exist,
        writable by every user (Harbor mounts them and `chmod 777`s them); extra CA
        certificates are trusted; names the image maps to loopback bypass the egress proxy."""
        work = self._map(self.workdir)
        if work is not None and not work.exists():
            work.mkdir(parents=True, exist_ok=True)
            os.chown(work, self.uid, self.gid)
        for path in HARBOR_LOGS:
            host = self._map(path)
            if host is not None:
                host.mkdir(parents=True, exist_ok=True)
                host.chmod(0o777)
        from proctor.sandbox.docker import trust

        trust.install(self)
        bundle = self.host_path(trust.BUNDLE)
        if bundle is not None and bundle.is_file():  # uv, requests and curl read this one
            for name in ("SSL_CERT_FILE", "REQUESTS_CA_BUNDLE"):
                self.env.setdefault(name, trust.BUNDLE)
        direct = ["localhost", "127.0.0.1", *self.hosts, *self.hosts.values(), *self._loopback_names()]
        for name in ("NO_PROXY", "no_proxy"):
            self.env[name] = ",".join(dict.fromkeys(direct))

    def _loopback_names(self) -> list[str]:
        try:
            text = (self._map("/etc/hosts") or Path("/nonexistent")).read_text(errors="replace")
        except OSError:
            return []
        names = []
        for line in text.splitlines():
            words = line.split("#", 1)[0].split()
            if len(words) > 1 and words[0].startswith(LOOPBACK):
                names += words[1:]
        return names

    def _user(self, user: str) -> tuple[int, int, str]:
        """(uid, gid, home) of a user of the image, by name or number (`1000:1000`)."""
        if user in self._users:
            return self._users[user]
        name, _, group = user.partition(":")
        entry = None
        try:
            passwd = (self._map("/etc/passwd") or Path("/nonexistent")).read_text(errors="replace")
        except OSError:
            passwd = ""
        for line in passwd.splitlines():
            f = line.split(":")
            if len(f) >= 7 and (f[0] == name or (name.isdigit() and f[2] == name)):
                entry = (int(f[2]), int(f[3]), f[5] or "/")
                break
        if entry is None:
            if not name.isdigit():
                raise OSError(f"user {name!r} is not in the image's /etc/passwd")
            entry = (int(name), int(name), "/" if name != "0" else "/root")
        if group.isdigit():
            entry = (entry[0], int(group), entry[2])
        self._users[user] = entry
        return entry

    def _as_agent(self, command: str, user: str | None) -> list[str]:
        uid, gid, _ = self._user(user) if user is not None else (self.uid, self.gid, "")
        return _drop(uid, gid, ["/bin/sh", "-c", command], caps=True, userns=self.userns,
                     userns_of=self.userns_of)

    async def verify(self, tests: list[Path], script: str, *, env: dict[str, str],
                     user: str | None, timeout: float) -> Verification:
        """Harbor's verifier, apart from everything the agent left (verifier.py)."""
        from proctor.sandbox.docker import verifier

        uid, gid, home = await asyncio.to_thread(self._user, user or self.image_user or "0")
        return await verifier.run(self, tests, script, env=env, uid=uid, gid=gid, home=home,
                                  timeout=timeout)

    async def exec(self, command: str, *, timeout: float, env: dict[str, str] | None = None,
                   cwd: str | None = None, stdin: bytes | None = None, trace: bool = False,
                   capture: int | None = None, user: str | None = None) -> Any:
        if user is not None:
            uid, gid, home = await asyncio.to_thread(self._user, user)
            env = {"HOME": home, **(env or {})}
        return await super().exec(command, timeout=timeout, env=env, cwd=cwd, stdin=stdin,
                                  trace=trace, capture=capture, user=user)

    async def snapshot(self, deadline: float | None = None) -> Snapshot:
        """What changed from the image, each changed entry by size, mtime, ctime and inode,
        and the files Docker mounts over the image and /dev/shm, which no layer holds.
        Raises FilesLimit (naming it) past the entry limit or `deadline` (monotonic): never a
        partial view."""
        budget = files.Budget(deadline or time.monotonic() + SNAPSHOT_TIMEOUT_S)
        listing = await self._listing(budget)
        return await asyncio.to_thread(self._entries, listing, budget)

    async def changes(self, deadline: float | None = None) -> dict[str, str]:
        """Every path the container changed from its image, absolute: "added", "changed"
        (it was in the image) or "deleted" (tampering.py reads it)."""
        budget = files.Budget(deadline or time.monotonic() + SNAPSHOT_TIMEOUT_S)
        kinds = {"A": "added", "C": "changed", "D": "deleted"}
        return {path: kinds[kind] for kind, path in await self._listing(budget)
                if not _proctors(path)}

    async def _listing(self, budget: files.Budget) -> list[tuple[str, str]]:
        """(A|C|D, path) of every changed path: the container's own layer walked on the host
        (overlay2: a whiteout is a deletion, a path in a lower layer a change), else `docker
        diff` (any storage driver, slower)."""
        assert self.container is not None
        if self.upper is not None:
            return await asyncio.to_thread(self._walk_upper, self.upper, budget)
        left = max(1.0, budget.deadline - time.monotonic())
        res = await proc.run(["docker", "diff", self.container], timeout=left)
        if res.timed_out:
            budget.check_time()
        if res.exit_code != 0:
            raise OSError(f"docker diff: {res.stderr.strip()[-300:]}")
        return [(line[0], line[2:]) for line in res.stdout.splitlines() if line[1:2] == " "]

    def _walk_upper(self, upper: Path, budget: files.Budget) -> list[tuple[str, str]]:
        out: list[tuple[str, str]] = []
        stack = [upper]
        while stack:
            try:
                entries = list(os.scandir(stack.pop()))
            except OSError:
                continue
            for e in entries:
                budget.tick()
                path = "/" + e.path[len(str(upper)):].lstrip("/")
                try:
                    st = e.stat(follow_symlinks=False)
                except OSError:
                    continue
                if stat_mod.S_ISCHR(st.st_mode) and st.st_rdev == 0:  # an overlay whiteout
                    out.append(("D", path))
                    continue
                was = any(os.path.lexists(f"{lower}{path}") for lower in self.lowers)
                out.append(("C" if was else "A", path))
                if e.is_dir(follow_symlinks=False):
                    stack.append(Path(e.path))
        return out

    def _entries(self, listing: list[tuple[str, str]], budget: files.Budget) -> Snapshot:
        out: Snapshot = {}
        for kind, path in listing:
            budget.tick()
            if not path or _proctors(path) or path.startswith(("/proc/", "/sys/", "/dev/")):
                continue
            rel = _shown(path, self.workdir)
            if kind == "D":
                out[rel] = Entry("other", 0, "deleted")
                continue
            if (entry := self._entry(path)) is not None:
                out[rel] = entry
        for path in [*MOUNTED, *self._shm(budget)]:  # no layer holds these
            if (entry := self._entry(path)) is not None:
                out[_shown(path, self.workdir)] = entry
        return out

    def _entry(self, path: str) -> Entry | None:
        host = self._map(path)
        try:
            st = os.lstat(host) if host is not None else None
        except OSError:
            st = None
        if st is None:
            return None
        if stat_mod.S_ISDIR(st.st_mode):
            return Entry("dir", 0, "")
        if stat_mod.S_ISLNK(st.st_mode):
            return Entry("symlink", st.st_size, "-> " + os.readlink(str(host)))
        if stat_mod.S_ISREG(st.st_mode):
            return Entry("file", st.st_size, f"{st.st_mtime_ns}:{st.st_ctime_ns}:{st.st_ino}")
        return Entry("other", 0, "")

    def _shm(self, budget: files.Budget) -> list[str]:
        """Every path under /dev/shm (a tmpfs of the container's), read without following
        links."""
        out: list[str] = []
        stack = [SHM]
        while stack:
            top = stack.pop()
            host = self._map(top)
            try:
                entries = list(os.scandir(host)) if host is not None else []
            except OSError:
                continue
            for e in entries:
                budget.tick()
                out.append(f"{top}/{e.name}")
                if e.is_dir(follow_symlinks=False):
                    stack.append(f"{top}/{e.name}")
        return out

    def real_path(self, path: str, *, executable: bool = False) -> str | None:
        """`path` with every link resolved as the container sees it, if it is a file there
        (`executable`: with an execute bit)."""
        try:
            host = self.host_path(path)
            st = os.stat(host) if host is not None else None
        except OSError:
            return None
        if host is None or st is None or not stat_mod.S_ISREG(st.st_mode) or (
                executable and not st.st_mode & 0o111):
            return None
        root = str(self.places[0][1])
        return "/" + str(host)[len(root):].lstrip("/")

    async def export(self) -> Path:
        host = self._map(self.workdir)
        assert host is not None
        return host


def _shown(path: str, workdir: str) -> str:
    """Workspace paths relative to it, others absolute, as snapshots name them."""
    prefix = workdir.rstrip("/") + "/"
    if workdir != "/" and path.startswith(prefix):
        return path[len(prefix):]
    return posixpath.normpath(path)


def _layers(info: dict[str, Any]) -> tuple[Path | None, list[Path]]:
    """The container's writable layer on the host and the image's layers under it, when the
    storage driver is overlay2 (from its `docker inspect`)."""
    driver = info.get("GraphDriver") or {}
    data = driver.get("Data") or {}
    upper, lower = data.get("UpperDir") or "", data.get("LowerDir") or ""
    if driver.get("Name") != "overlay2" or not upper or not Path(upper).is_dir():
        return None, []
    return Path(upper), [Path(p) for p in lower.split(":") if p]


def _proctors(path: str) -> bool:
    """proctor's own mount points in the container (none of them the agent's to write)."""
    return any(path == p or path.startswith(p + "/") for p in PROCTOR_PATHS)


_USERNS: dict[str, bool] = {}  # by engine: asked once per process


async def _userns_here(container: str) -> bool:
    """Whether commands in the engine's containers may have a user namespace of their own (a
    host's AppArmor policy may refuse it: Ubuntu 24.04's, unless allowed). Where not, a root
    agent keeps Docker's default capabilities but CAP_SYS_PTRACE and CAP_MKNOD, and proctor
    says so once."""
    engine = os.environ.get("DOCKER_HOST", "")
    if engine not in _USERNS:
        res = await docker("exec", "-u", "0", container, LAUNCH, "userns", timeout=60)
        _USERNS[engine] = res.exit_code == 0
        if not _USERNS[engine]:
            print("proctor: warning: containers here may not have a user namespace of their own "
                  f"({(res.stderr or res.stdout).strip()[-200:]}): a root agent in a task's image "
                  "keeps Docker's default capabilities but CAP_SYS_PTRACE and CAP_MKNOD "
                  "(docs/security.md, \"Harbor tasks\")", file=sys.stderr, flush=True)
    return _USERNS[engine]


def _run_delay(pid: int) -> float:
    """Seconds process `pid` has been runnable but not running (waiting for a CPU, or held by
    its cgroup's CPU limit): /proc/PID/schedstat's second field; 0 if unknown."""
    try:
        return int(Path(f"/proc/{pid}/schedstat").read_text().split()[1]) / 1e9
    except (OSError, IndexError, ValueError):
        return 0.0


def _state(pid: int) -> str:
    """A process's state letter (R running, D disk wait, S sleeping...; X once it is gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return "X"
    return stat[stat.rindex(")") + 2:][:1] or "X"
