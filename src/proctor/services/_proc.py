"""Server processes: each in its own process group, as an unprivileged user when proctor is
root, killed with proctor if proctor itself dies, and always reaped."""

from __future__ import annotations

import atexit
import contextlib
import os
import pwd
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from proctor.errors import SetupError
from proctor.proc import kill_group

_SETPRIV = shutil.which("setpriv")
_LIVE: dict[int, subprocess.Popen[bytes]] = {}  # pid (= pgid) -> process not yet reaped
_DIRS: set[Path] = set()  # server directories not yet removed
OWNER_FILE = "owner"


@dataclass(frozen=True)
class RunAs:
    uid: int
    gid: int
    name: str


def server_user(preferred: str) -> RunAs | None:
    """Who a database server runs as. PostgreSQL and MariaDB refuse to run as root, so as
    root we use the account their Debian package creates (`postgres`, `mysql`), else
    `nobody`; as anyone else, ourselves (None)."""
    if os.geteuid() != 0:
        return None
    for name in (preferred, "nobody"):
        try:
            pw = pwd.getpwnam(name)
        except KeyError:
            continue
        return RunAs(pw.pw_uid, pw.pw_gid, name)
    raise SetupError(f"proctor runs as root and there is no user {preferred!r} or 'nobody' "
                     "to run the database server as; create one (useradd --system "
                     f"{preferred})")


def owned_dir(path: Path, run_as: RunAs | None, mode: int = 0o700) -> Path:
    """Create `path` (fresh) owned by the server user."""
    path.mkdir(parents=True, exist_ok=False)
    if run_as is not None:
        os.chown(path, run_as.uid, run_as.gid)
    path.chmod(mode)
    return path


def remove_dir(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)
    _DIRS.discard(path)


def track_dir(path: Path) -> Path:
    """Remove `path` at exit if nobody did before. An `owner` file names this process, so a
    later run can tell the directory of a crashed run (`sweep_stale`)."""
    _DIRS.add(path)
    (path / OWNER_FILE).write_text(str(os.getpid()))
    return path


def sweep_stale(parent: Path) -> None:
    """Remove server directories (`proctor-*` with an `owner` file) whose owning process is
    gone: a run killed with SIGKILL cannot clean up, and /dev/shm is memory."""
    try:
        entries = list(parent.glob("proctor-*"))
    except OSError:
        return
    for d in entries:
        try:
            pid = int((d / OWNER_FILE).read_text())
        except (OSError, ValueError):
            continue
        if not _pid_alive(pid):
            shutil.rmtree(d, ignore_errors=True)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def is_tmpfs(path: Path) -> bool:
    """Is `path` on a tmpfs (memory)? The longest mount point containing it decides."""
    try:
        with open("/proc/mounts") as f:
            mounts = [(p[1], p[2]) for p in (line.split() for line in f) if len(p) > 2]
    except OSError:
        return False
    target = str(path.resolve())
    best = max((m for m in mounts if target == m[0] or target.startswith(m[0].rstrip("/") + "/")),
               key=lambda m: len(m[0]), default=("", ""))
    return best[1] == "tmpfs"


def roomy_tmpfs(path: Path, need: int = 1 << 30) -> bool:
    """Is `path` a tmpfs with at least `need` bytes free?"""
    if not is_tmpfs(path):
        return False
    try:
        st = os.statvfs(path)
    except OSError:
        return False
    return st.f_bavail * st.f_frsize >= need


def reachable_by(path: Path, run_as: RunAs | None) -> bool:
    """Can the server user traverse every directory down to `path`?"""
    if run_as is None:
        return True
    for p in [path, *path.parents]:
        try:
            st = p.stat()
        except FileNotFoundError:
            continue
        if st.st_uid == run_as.uid:
            ok = st.st_mode & 0o100
        elif st.st_gid == run_as.gid:
            ok = st.st_mode & 0o010
        else:
            ok = st.st_mode & 0o001
        if not ok:
            return False
    return True


def run(argv: list[str], *, run_as: RunAs | None, env: dict[str, str] | None = None,
        timeout: float = 120, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    """Run a short helper (initdb, psql) to completion, as the server user."""
    p = spawn(argv, run_as=run_as, env=env, stdout=subprocess.PIPE,
              stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL)
    try:
        out, _ = p.communicate(stdin, timeout=timeout)
    except BaseException:
        kill(p, grace=0)
        raise
    finally:
        _LIVE.pop(p.pid, None)
    return subprocess.CompletedProcess(argv, p.returncode, out, b"")


def spawn(argv: list[str], *, run_as: RunAs | None, env: dict[str, str] | None = None,
          stdout: int | object = subprocess.DEVNULL, log: Path | None = None,
          stdin: int = subprocess.DEVNULL) -> subprocess.Popen[bytes]:
    """Start argv in a new process group. With setpriv (util-linux) it gets SIGKILL when the
    thread that started it exits, so a crashed proctor leaves no server behind."""
    prefix = [_SETPRIV, "--pdeathsig", "KILL", "--"] if _SETPRIV else []
    out = open(log, "ab") if log is not None else stdout  # noqa: SIM115 - handed to the child
    try:
        p = subprocess.Popen(
            prefix + argv, stdin=stdin, stdout=out, stderr=subprocess.STDOUT,
            process_group=0, env=env, close_fds=True,
            user=run_as.uid if run_as else None, group=run_as.gid if run_as else None,
            extra_groups=[] if run_as else None,
        )
    except FileNotFoundError as e:
        raise SetupError(f"cannot run {argv[0]}: {e.strerror}") from e
    finally:
        if log is not None:
            out.close()  # type: ignore[union-attr]
    _LIVE[p.pid] = p
    return p


def kill(p: subprocess.Popen[bytes], *, sig: int = signal.SIGTERM, grace: float = 5.0) -> None:
    """Signal the whole group, wait up to `grace` s, then SIGKILL it; always reap."""
    if p.poll() is None and grace > 0:
        kill_group(p.pid, sig)
        with contextlib.suppress(subprocess.TimeoutExpired):
            p.wait(grace)
    kill_group(p.pid, signal.SIGKILL)  # the leader and any straggling children
    p.wait()
    _LIVE.pop(p.pid, None)
    # Wait for stragglers of the group (backends) so the process table is clean on return.
    deadline = time.monotonic() + 2
    while time.monotonic() < deadline and _group_alive(p.pid):
        time.sleep(0.01)


def forget(p: subprocess.Popen[bytes]) -> None:
    """The process exited on its own and was reaped by the caller."""
    _LIVE.pop(p.pid, None)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


@atexit.register
def _kill_leftovers() -> None:
    # A run that ended without stop() (a bug, an unhandled exception): no orphan servers.
    for p in list(_LIVE.values()):
        kill_group(p.pid, signal.SIGKILL)
        with contextlib.suppress(Exception):
            p.wait(2)
    _LIVE.clear()
    for d in list(_DIRS):
        shutil.rmtree(d, ignore_errors=True)
    _DIRS.clear()
