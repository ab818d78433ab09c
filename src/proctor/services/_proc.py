"""Server processes: each in its own process group (proctor.proc.start), as an unprivileged
user when proctor is root, killed with proctor if proctor itself dies, and always reaped;
their directories, removed at exit and swept after a crash."""

from __future__ import annotations

import atexit
import os
import pwd
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from proctor import proc
from proctor.errors import SetupError
from proctor.proc import ExecResult

_DIRS: set[Path] = set()  # server directories not yet removed
OWNER_FILE = "owner"


@dataclass(frozen=True)
class RunAs:
    """The user a database server runs as."""
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
        timeout: float = 120, stdin: bytes | None = None) -> ExecResult:
    """Run a short helper (initdb, psql) to completion, as the server user."""
    return proc.run_sync(argv, env=env, timeout=timeout, stdin=stdin,
                         user=run_as.uid if run_as else None,
                         group=run_as.gid if run_as else None)


def spawn(argv: list[str], *, run_as: RunAs | None, env: dict[str, str] | None = None,
          log: Path) -> subprocess.Popen[bytes]:
    """Start a server as the server user, its output appended to `log`; it gets SIGKILL if
    proctor dies. `proc.stop` it."""
    try:
        return proc.start(argv, env=env, log=log, user=run_as.uid if run_as else None,
                          group=run_as.gid if run_as else None, die_with_parent=True)
    except FileNotFoundError as e:
        raise SetupError(f"cannot run {argv[0]}: {e.strerror}") from e


@atexit.register
def _remove_leftovers() -> None:
    # A run that ended without removing them (a bug, an unhandled exception).
    for d in list(_DIRS):
        shutil.rmtree(d, ignore_errors=True)
    _DIRS.clear()
