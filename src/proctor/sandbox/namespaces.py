"""The isolation boundary of the local backend: a bubblewrap box around every command.

`Box.start` launches `bwrap` with private mount, PID, network, IPC, UTS and cgroup
namespaces; its first process is proctor's spawner (spawner.c, driven by sandbox/spawn.py),
which starts each command on request as a fork of itself, without privileges (no
capabilities, no-new-privs, keyrings refused; as root, also a uid of its own). Commands that
must be traced from outside (command and external agents) enter the same namespaces with
`nsenter` under proctor's tracer instead. So:

* the filesystem is what the mounts say: system directories read-only, the trial's workspace,
  HOME, TMPDIR and /dev/shm writable, the box's own root and /dev read-only, nothing else of
  the host (no run directory, no spec directory, no proctor installation, no home directory,
  no other trial);
* the agent sees only its own processes in /proc, and when the box goes, the kernel kills
  every process in its PID namespace, whatever it did (setsid, double fork);
* the network namespace has only loopback: services are reached through forwarders proctor
  binds inside (listening sockets the spawner opens there), and nothing else.

A box serves one trial after another (sandbox/pool.py). If proctor dies, the spawner reads EOF
on its socket and exits, and `--die-with-parent` fires: the box dies with it.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from proctor.errors import SetupError
from proctor.sandbox import native
from proctor.sandbox.spawn import Spawner, SpawnerLost

AGENT_UID = 65534  # "nobody": as root, every command runs as this uid, owning nothing of the host
START_TIMEOUT_S = 10.0
_SYSTEM_RO = ("/usr", "/etc", "/opt")
_SYSTEM_LINKS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")


@dataclass(frozen=True)
class Mount:
    host: Path
    inside: str
    writable: bool = True


def missing() -> str | None:
    """Why namespaces cannot be used here (what is missing and how to get it), or None."""
    return _probe()


@functools.cache
def _probe() -> str | None:
    for tool, package in (("bwrap", "bubblewrap"), ("nsenter", "util-linux"),
                          ("setpriv", "util-linux")):
        if shutil.which(tool) is None:
            return (f"`{tool}` is not installed (Debian/Ubuntu: apt-get install {package}); "
                    "or run without isolation: --isolation none")
    # The system directories only, as a box has them: binding all of / would also bind every
    # mount of the moment (a container's overlay being set up), which can fail by chance.
    argv = [shutil.which("bwrap") or "bwrap", *_unshare_flags(), "--ro-bind", "/usr", "/usr",
            *_links(), "--proc", "/proc", "--", "true"]
    try:
        r = subprocess.run(argv, capture_output=True, timeout=20, text=True)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"bubblewrap could not start: {e}"
    if r.returncode != 0:
        why = r.stderr.strip().splitlines()[-1] if r.stderr.strip() else f"exit {r.returncode}"
        return (f"bubblewrap cannot create namespaces for this user ({why}); enable "
                "unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1) or "
                "run as root, or run without isolation: --isolation none")
    return None


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
    # (mapped to the caller): bubblewrap then makes one user namespace owning all the others,
    # which nsenter can enter; commands still run with every capability dropped (setpriv).
    if os.geteuid() == 0:
        return flags
    return ["--unshare-user", "--uid", "0", "--gid", "0", *flags]


class Box:
    """One bubblewrap sandbox whose first process is proctor's spawner (spawner.c)."""

    def __init__(self, proc: subprocess.Popen, pid: int, spawner_pid: int, spawner: Spawner,
                 uid: int = AGENT_UID):
        self.proc = proc
        self.pid = pid  # the box's init (PID 1 inside), as the host sees it
        self.spawner_pid = spawner_pid  # as the host sees it
        self.spawner = spawner
        self.uid = uid if os.geteuid() == 0 else os.geteuid()
        self.gid = uid if os.geteuid() == 0 else os.getegid()
        self._ns = os.stat(f"/proc/{pid}/ns/pid").st_ino
        self.userns = os.stat(f"/proc/{pid}/ns/user").st_ino != os.stat("/proc/self/ns/user").st_ino
        self._prefix = self._enter_prefix()

    @classmethod
    async def start(cls, mounts: list[Mount], *, workdir: str, hosts_file: Path | None,
                    env: dict[str, str], uid: int = AGENT_UID) -> Box:
        """`uid`: as root, the uid (and gid) every command runs as (a grader box's own)."""
        argv = [shutil.which("bwrap") or "bwrap", *_unshare_flags(), "--die-with-parent",
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
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        program = os.open(native.binary("spawner"), os.O_RDONLY)  # run as /proc/self/fd/N
        info_r, info_w = os.pipe()
        ids = (uid, uid) if os.geteuid() == 0 else (-1, -1)
        argv += ["--chdir", workdir, "--info-fd", str(info_w), "--",
                 f"/proc/self/fd/{program}", str(theirs.fileno()), str(ids[0]), str(ids[1])]
        # A plain Popen: the box must outlive any event loop hiccup.
        try:
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.PIPE, env=env, start_new_session=True,
                                    pass_fds=(info_w, theirs.fileno(), program))
        finally:
            os.close(info_w)
            os.close(program)
            theirs.close()
        spawner = Spawner(ours, asyncio.get_running_loop())
        try:
            pid = await asyncio.wait_for(asyncio.to_thread(_read_child_pid, info_r),
                                         START_TIMEOUT_S)
            try:  # the pid arrives before the mounts are done; the spawner speaks after
                await spawner.ready(START_TIMEOUT_S)
            except (SpawnerLost, TimeoutError):
                raise SetupError("could not build the sandbox: " + _stderr(proc)) from None
            spawner_pid = _children(pid)[0]
        except BaseException:
            spawner.close()
            proc.kill()
            proc.wait()
            _close_pipes(proc)
            raise
        finally:
            os.close(info_r)
        return cls(proc, pid, spawner_pid, spawner, uid)

    def _enter_prefix(self) -> list[str]:
        # The spawner's namespaces, not init's: its IPC namespace is the current trial's.
        ns = ["-m", "-p", "-n", "-i", "-u", "-r", "-w"]
        if os.path.exists(f"/proc/{self.pid}/ns/cgroup"):
            ns.append("-C")
        if self.userns:
            ns += ["-U", "--preserve-credentials"]
        nsenter = [shutil.which("nsenter") or "nsenter", "-t", str(self.spawner_pid), *ns]
        if os.geteuid() == 0:
            # Changing from uid 0 to AGENT_UID clears every capability, and every mount in
            # the box is nosuid (bubblewrap's default), so no setuid binary or file
            # capability can give one back. One exec fewer than setpriv.
            return [*nsenter, "-S", str(self.uid), "-G", str(self.gid), "--"]
        # In a user namespace, entering gives every capability in it: drop them all.
        return [*nsenter, "--", shutil.which("setpriv") or "setpriv", "--no-new-privs",
                "--bounding-set=-all", "--inh-caps=-all", "--"]

    def wrap(self, argv: list[str]) -> list[str]:
        """`argv` entered from outside (for the tracer, which must stay outside): inside the
        box, without privileges, in the box's workdir."""
        return [*self._prefix, *argv]

    @property
    def wrapper_programs(self) -> tuple[str, str]:
        """What a trace of a wrapped command starts with (proctor's doing, not the agent's)."""
        return ("nsenter", "setpriv")

    def alive(self) -> bool:
        return self.spawner.lost is None and self.proc.poll() is None

    def processes(self) -> list[int]:
        """Host pids of every process in the box but its init and spawner."""
        out = []
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit():
                continue
            pid = int(entry.name)
            if pid in (self.pid, self.spawner_pid):
                continue
            try:
                if os.stat(f"/proc/{pid}/ns/pid").st_ino == self._ns:
                    out.append(pid)
            except OSError:
                continue
        return out

    def kill_processes(self) -> int:
        """SIGKILL everything running in the box (the agent's leftovers); the box stays."""
        killed = 0
        for _ in range(20):
            pids = self.processes()
            if not pids:
                break
            for pid in pids:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
                    killed += 1
        return killed

    def stopped(self) -> bool:
        """Whether the spawner was stopped (SIGSTOP by an agent of the same uid)."""
        try:
            stat = Path(f"/proc/{self.spawner_pid}/stat").read_text()
        except OSError:
            return False
        return stat[stat.rindex(")") + 2:][:1] in ("T", "t")

    def wake(self) -> None:
        """An agent running as the spawner's uid (no root) may have stopped it: resume it."""
        with contextlib.suppress(OSError):
            os.kill(self.spawner_pid, signal.SIGCONT)

    async def close(self) -> None:
        self.spawner.close()
        # Killing the init of a PID namespace kills every process in it.
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGKILL)
        self.proc.kill()
        # bwrap's exit waits for the kernel to tear the namespaces down: not on the loop.
        await asyncio.to_thread(self.proc.wait)
        _close_pipes(self.proc)


def _spawner_caps() -> list[str]:
    """What the spawner keeps: as root, changing to the agent's uid and signalling its
    commands; everywhere, a fresh IPC namespace per trial (SYS_ADMIN), low ports for
    forwarders, and (in a user namespace) dropping the bounding set in each command."""
    caps = ["CAP_SYS_ADMIN", "CAP_NET_BIND_SERVICE", "CAP_SETPCAP"]
    if os.geteuid() == 0:
        caps += ["CAP_SETUID", "CAP_SETGID", "CAP_KILL"]
    return [arg for cap in caps for arg in ("--cap-add", cap)]


def visible_system_path(inside: str, extra: list[str]) -> bool:
    """Whether a path (as the box sees it) is one of the host's read-only system paths."""
    return any(inside == p or inside.startswith(p.rstrip("/") + "/")
               for p in (*_SYSTEM_RO, *_SYSTEM_LINKS, *extra))


def _read_child_pid(fd: int) -> int:
    data = b""
    while b"}" not in data:
        chunk = os.read(fd, 4096)
        if not chunk:
            raise SetupError("could not build the sandbox: bubblewrap exited early")
        data += chunk
    return int(json.loads(data[: data.index(b"}") + 1])["child-pid"])


def _children(pid: int) -> list[int]:
    text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    return [int(p) for p in text.split()] or [-1]


def _stderr(proc: subprocess.Popen) -> str:
    proc.kill()
    _, err = proc.communicate(timeout=5)
    return err.decode(errors="replace").strip()[-2000:] or "bubblewrap exited"


def _close_pipes(proc: subprocess.Popen) -> None:
    for pipe in (proc.stdin, proc.stdout, proc.stderr):
        if pipe is not None:
            with contextlib.suppress(OSError):
                pipe.close()
