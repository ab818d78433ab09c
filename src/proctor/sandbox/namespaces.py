"""The isolation boundary of the local backend: a bubblewrap box around every command.

`Box.start` launches `bwrap` with private mount, PID, network, IPC, UTS and cgroup
namespaces; its first process is proctor's spawner (spawner.c, driven by sandbox/spawn.py),
which starts each command on request as a fork of itself, without privileges (no
capabilities, no-new-privs, keyrings refused; as root, also a uid of its own). It is the only
way in: a traced command (command and external agents) is started by the spawner too, under a
tracer the spawner forks beside it, out of the agent's sight. Each trial's commands get PID,
mount (for its /proc), network and IPC namespaces of their own inside the box, under an init
that reaps what they orphan (spawner.c). So:

* the filesystem is what the mounts say: system directories read-only, the trial's workspace,
  HOME, TMPDIR and /dev/shm writable, the box's own root and /dev read-only, nothing else of
  the host (no run directory, no spec directory, no proctor installation, no home directory,
  no other trial);
* the agent sees only its own trial's processes in /proc (pids start afresh each trial), and
  when the trial ends, the kernel kills every process in its PID namespace, whatever it did
  (setsid, double fork);
* the network namespace has only loopback: services are reached through forwarders proctor
  binds inside (listening sockets the spawner opens there), and nothing else.

A box serves one trial after another (sandbox/pool.py). If proctor dies, the spawner reads EOF
on its socket and exits, and `--die-with-parent` fires: the box dies with it.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import shutil
import signal
import stat
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from proctor import proc
from proctor.errors import SetupError
from proctor.fieldwise import FrozenFieldwise
from proctor.sandbox import boxstart, native
from proctor.sandbox.spawn import Spawner, SpawnerLost

if TYPE_CHECKING:
    from proctor.sandbox.trace import TraceFd

AGENT_UID = 65534  # "nobody": as root, every command runs as this uid, owning nothing of the host
START_TIMEOUT_S = 10.0
CLOSE_TIMEOUT_S = 10.0  # a box's bubblewrap reaps its init and exits; killed if it has not
_SYSTEM_RO = ("/usr", "/etc", "/opt")
_SYSTEM_LINKS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")


@dataclass(frozen=True, eq=False, repr=False)
class Mount(FrozenFieldwise):
    """A host path bound into the box, and whether the trial may write it."""
    host: Path
    inside: str
    writable: bool = True


def missing() -> str | None:
    """Why namespaces cannot be used here (what is missing and how to get it), or None."""
    return _probe()


@functools.cache
def _probe() -> str | None:
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return ("`bwrap` is not installed (Debian/Ubuntu: apt-get install bubblewrap); "
                "or run without isolation: --isolation none")
    mark = _probe_mark(bwrap)
    if mark is not None and os.path.exists(mark):
        return None  # this very bwrap made a box for this user since the machine booted
    # The system directories only, as a box has them: binding all of / would also bind every
    # mount of the moment (a container's overlay being set up), which can fail by chance.
    argv = [bwrap, *_unshare_flags(), "--as-pid-1",
            "--ro-bind", "/usr", "/usr", *_links(), "--proc", "/proc", "--", "true"]
    r = proc.run_sync(argv, timeout=20)
    if r.exit_code is None:
        return f"bubblewrap could not start: {r.stderr.strip()}"
    if r.exit_code != 0:
        why = r.stderr.strip().splitlines()[-1] if r.stderr.strip() else f"exit {r.exit_code}"
        return (f"bubblewrap cannot create namespaces for this user ({why}); enable "
                "unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1) or "
                "run as root, or run without isolation: --isolation none")
    if mark is not None:
        with contextlib.suppress(OSError):
            mark.parent.mkdir(parents=True, exist_ok=True)
            mark.touch()
    return None


# What the kernel lets a user do with namespaces: a change in any asks bwrap again.
_USERNS_LIMITS = ("kernel/unprivileged_userns_clone", "kernel/apparmor_restrict_unprivileged_userns",
                  *(f"user/max_{ns}_namespaces" for ns in
                    ("user", "mnt", "pid", "net", "ipc", "uts", "cgroup")))


def _probe_mark(bwrap: str) -> Path | None:
    """Where a probe that succeeded is remembered ($PROCTOR_CACHE/bwrap-probe/KEY), KEY
    naming all its answer depends on: the kernel's boot, the user, its namespaces,
    capabilities and seccomp filter, the kernel's namespace limits, and the bwrap binary
    itself. A failure is never remembered, and a remembered success only saves the
    probe: a box that cannot be built still fails when it is started."""
    from proctor.sandbox.cache import cache_dir

    try:
        st = os.stat(bwrap)
        key = [_text("/proc/sys/kernel/random/boot_id"), str(os.geteuid()), str(os.getegid()),
               bwrap, f"{st.st_dev} {st.st_ino} {st.st_size} {st.st_mtime_ns} {st.st_ctime_ns} "
               f"{st.st_mode} {st.st_uid}",
               *(str(os.stat(f"/proc/self/ns/{ns}").st_ino) for ns in ("user", "mnt", "pid")),
               *(_text(f"/proc/sys/{limit}") for limit in _USERNS_LIMITS),
               *(line for line in _text("/proc/self/status").splitlines()
                 if line.startswith(("Cap", "NoNewPrivs", "Seccomp")))]
    except OSError:
        return None
    import hashlib

    return cache_dir() / "bwrap-probe" / hashlib.sha256("\n".join(key).encode()).hexdigest()[:32]


def _text(path: str) -> str:
    """A /proc file's text, "" when there is none (a limit this kernel does not have)."""
    try:
        with open(path) as f:
            return f.read().strip()
    except FileNotFoundError:
        return ""


@functools.cache
def _own_installation() -> tuple[str, ...]:
    """proctor's package and virtualenv, where they lie inside a directory the box shows
    (installed under /usr/local or /opt): hidden under an empty read-only tmpfs."""
    import proctor

    paths = [Path(proctor.__file__).resolve().parent]
    if sys.prefix != sys.base_prefix:  # a virtualenv (never a system Python's own prefix)
        paths.append(Path(sys.prefix).resolve())
    return tuple(str(p) for p in paths if visible_system_path(str(p), []) and p.is_dir())


def _links() -> list[str]:
    """/bin, /lib, ... as the host has them: links into /usr, or directories."""
    argv: list[str] = []
    for link in _SYSTEM_LINKS:
        if os.path.islink(link):
            argv += ["--symlink", os.readlink(link), link]
        elif os.path.isdir(link):
            argv += ["--ro-bind", link, link]
    return argv


def _unshare_flags() -> list[str]:
    flags = ["--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts",
             "--unshare-cgroup-try"]
    # As root no user namespace is needed (and none is wanted: commands drop to AGENT_UID,
    # which a user namespace mapping only root could not represent). Otherwise uid 0 inside
    # (mapped to the caller): bubblewrap then makes one user namespace owning all the others;
    # commands still run with every capability dropped (spawner.c).
    if os.geteuid() == 0:
        return flags
    return ["--unshare-user", "--uid", "0", "--gid", "0", *flags]


class Box:
    """One bubblewrap sandbox whose first process is proctor's spawner (spawner.c)."""

    def __init__(self, bwrap: subprocess.Popen[bytes], spawner_pid: int, spawner: Spawner,
                 uid: int = AGENT_UID):
        self.bwrap = bwrap
        self.spawner_pid = spawner_pid  # the box's PID 1, as the host sees it
        self.spawner = spawner
        self.uid = uid if os.geteuid() == 0 else os.geteuid()
        self.gid = uid if os.geteuid() == 0 else os.getegid()
        self.closed = False
        self.spare_traces: list[TraceFd] = []  # emptied trace memfds (trace.recycle)

    @classmethod
    async def start(cls, mounts: list[Mount], *, workdir: str, hosts_file: Path | None,
                    env: dict[str, str], uid: int = AGENT_UID,
                    join: Callable[[int], None] | None = None,
                    taken: tuple[boxstart.Launched, int] | None = None) -> Box:
        """`uid`: as root, the uid (and gid) every command runs as (a grader box's own);
        `join(pid)`: puts the spawner in its cgroup (TrialCgroup.attach), done before the box
        is returned, while bubblewrap builds its mounts: the kernel's move waits a grace
        period (~10 ms on cgroup v1), better spent beside the build than after it.
        `taken`: this very box, made at start-up (boxstart.claim), and its spawner's pid."""
        if taken is None:
            argv = command(mounts, workdir=workdir, hosts_file=hosts_file, uid=uid)
            launched, pid = boxstart.launch(argv, env, str(native.binary("spawner"))), None
        else:
            launched, pid = taken
        proc.adopt(launched.bwrap)
        bwrap, info_r = launched.bwrap, launched.info
        spawner = Spawner(launched.sock, asyncio.get_running_loop())
        try:
            if pid is None:
                pid = await asyncio.wait_for(asyncio.to_thread(_read_child_pid, info_r),
                                             START_TIMEOUT_S)  # the spawner's
            joining = asyncio.ensure_future(asyncio.to_thread(join, pid)) if join else None
            try:  # the pid arrives before the mounts are done; the spawner speaks after
                await spawner.ready(START_TIMEOUT_S)
            except (SpawnerLost, TimeoutError):
                raise SetupError("could not build the sandbox: " + _stderr(bwrap)) from None
            finally:
                joined = [] if joining is None else \
                    await asyncio.gather(joining, return_exceptions=True)
            if joined and isinstance(joined[0], BaseException):
                raise joined[0]
        except BaseException:
            spawner.close()
            if pid is not None and bwrap.poll() is None:  # as close(): bwrap reaps its init
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
                await asyncio.to_thread(_reap, bwrap)
            else:
                await asyncio.to_thread(proc.stop, bwrap, grace=0)
            _close_pipes(bwrap)
            raise
        finally:
            os.close(info_r)
        return cls(bwrap, pid, spawner, uid)

    def alive(self) -> bool:
        return not self.closed and self.spawner.lost is None and self.bwrap.poll() is None

    async def close(self) -> None:
        if self.closed:  # its pid may be another process's by now
            return
        self.closed = True
        self.spawner.close()
        while self.spare_traces:
            self.spare_traces.pop().close()
        # Killing the init of a PID namespace (the spawner) kills every process in it;
        # bubblewrap reaps it and exits (killing bubblewrap too would leave the spawner a
        # zombie of PID 1's). Its exit waits for the kernel to tear the namespaces down: not
        # on the loop.
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.spawner_pid, signal.SIGKILL)
        await asyncio.to_thread(_reap, self.bwrap)
        _close_pipes(self.bwrap)


def command(mounts: list[Mount], *, workdir: str, hosts_file: Path | None,
            uid: int = AGENT_UID) -> list[str]:
    """A box's whole command line, its descriptors named by boxstart.INFO, PROGRAM and SOCK:
    what `Box.start` launches, and what a box started early must have been started with."""
    ids = (uid, uid) if os.geteuid() == 0 else (-1, -1)
    return [*_box_argv(mounts, hosts_file), "--chdir", workdir, "--info-fd", boxstart.INFO,
            "--", boxstart.PROGRAM, boxstart.SOCK, str(ids[0]), str(ids[1])]


def _box_argv(mounts: list[Mount], hosts_file: Path | None) -> list[str]:
    """bubblewrap's arguments for a box: its namespaces and mounts (the spawner's own after)."""
    # --as-pid-1: the spawner is the box's init and reaps in it; bubblewrap's own init
    # would be reparented to the host's PID 1 (and left a zombie there) when it exits.
    argv = [shutil.which("bwrap") or "bwrap", *_unshare_flags(), "--as-pid-1",
            "--die-with-parent",
            "--new-session", "--cap-drop", "ALL", *_spawner_caps(), "--hostname", "sandbox"]
    for path in _SYSTEM_RO:
        if os.path.isdir(path):
            argv += ["--ro-bind", path, path]
    argv += _links()
    for path in _own_installation():  # under /usr or /opt when installed there
        argv += ["--perms", "0555", "--tmpfs", path, "--remount-ro", path]
    if hosts_file is not None:
        argv += ["--ro-bind", str(hosts_file), "/etc/hosts"]
    argv += ["--proc", "/proc", "--dev", "/dev"]
    made = {"/", "/proc", "/dev", *_SYSTEM_RO, *_SYSTEM_LINKS}
    for m in mounts:
        # bwrap makes missing parents 0700, which the unprivileged agent cannot cross.
        for parent in reversed(Path(m.inside).parents):
            if str(parent) not in made:
                argv += ["--perms", "0755", "--dir", str(parent)]
                made.add(str(parent))
        argv += ["--bind" if m.writable else "--ro-bind", str(m.host), m.inside]
        made.add(m.inside)
    # Without these an agent that is root in a user namespace could write to the box's
    # own root and /dev, out of sight of the snapshots (and into the next trial's way).
    argv += ["--remount-ro", "/dev", "--remount-ro", "/"]
    return argv


def _spawner_caps() -> list[str]:
    """What the spawner keeps: each trial's namespaces (SYS_ADMIN; SYS_CHROOT to go back to
    the box's mounts; NET_ADMIN to bring a new loopback up), low ports for forwarders,
    dropping the bounding set in each command, and tracing its traced commands (SYS_PTRACE:
    they start as its forks, not yet dumpable); as root also changing to the agent's uid and
    signalling its commands. In a user namespace (no root) these hold only inside it."""
    caps = ["CAP_SYS_ADMIN", "CAP_SYS_CHROOT", "CAP_NET_ADMIN", "CAP_NET_BIND_SERVICE",
            "CAP_SETPCAP", "CAP_SYS_PTRACE"]
    if os.geteuid() == 0:
        caps += ["CAP_SETUID", "CAP_SETGID", "CAP_KILL"]
    return [arg for cap in caps for arg in ("--cap-add", cap)]


def visible_system_path(inside: str, extra: list[str]) -> bool:
    """Whether a path (as the box sees it) is one of the host's read-only system paths."""
    return any(inside == p or inside.startswith(p.rstrip("/") + "/")
               for p in (*_SYSTEM_RO, *_SYSTEM_LINKS, *extra))


MAX_LINKS = 40  # as the kernel: a longer chain of symlinks is ELOOP


def shown_program(path: str, covered: tuple[str, ...] = ()) -> bool:
    """Whether every box is sure to show `path` (absolute, as the box sees it) as it is on
    this host: a regular file that any uid may execute, reached (symlinks followed step by
    step) only through the host's read-only system paths, never through proctor's own
    hidden installation or a place in `covered` (paths mounted over in the box), and
    through directories any uid may cross. False means only: not sure."""
    hidden = (*_own_installation(), "/etc/hosts", *covered)
    todo = [p for p in path.split("/") if p]
    here, links = "/", 0
    while todo:
        part = todo.pop(0)
        if part in (".", ""):
            continue
        step = os.path.dirname(here) if part == ".." else os.path.join(here, part)
        if not visible_system_path(step, []) or _under(step, hidden):
            return False
        try:
            st = os.lstat(step)
        except OSError:
            return False
        if stat.S_ISLNK(st.st_mode):
            links += 1
            if links > MAX_LINKS:
                return False
            target = os.readlink(step)
            todo = [p for p in target.split("/") if p] + todo
            here = "/" if target.startswith("/") else here
            continue
        if not st.st_mode & stat.S_IXOTH:  # a directory no uid can cross, a file no uid runs
            return False
        if not todo:
            return stat.S_ISREG(st.st_mode)
        if not stat.S_ISDIR(st.st_mode):
            return False
        here = step
    return False


def _under(path: str, tops: tuple[str, ...]) -> bool:
    return any(path == t or path.startswith(t.rstrip("/") + "/") for t in tops)


def _read_child_pid(fd: int) -> int:
    pid = boxstart.read_pid(fd)
    if pid is None:
        raise SetupError("could not build the sandbox: bubblewrap exited early")
    return pid


def _reap(bwrap: subprocess.Popen[bytes]) -> None:
    """Wait for a box's bubblewrap to exit (it reaps its init first); kill it if it hangs."""
    try:
        bwrap.wait(timeout=CLOSE_TIMEOUT_S)
        proc.forget(bwrap)
    except subprocess.TimeoutExpired:
        proc.stop(bwrap, grace=0)


def _stderr(bwrap: subprocess.Popen[bytes]) -> str:
    bwrap.kill()
    _, err = bwrap.communicate(timeout=5)
    return err.decode(errors="replace").strip()[-2000:] or "bubblewrap exited"


def _close_pipes(bwrap: subprocess.Popen[bytes]) -> None:
    for pipe in (bwrap.stdin, bwrap.stdout, bwrap.stderr):
        if pipe is not None:
            with contextlib.suppress(OSError):
                pipe.close()
