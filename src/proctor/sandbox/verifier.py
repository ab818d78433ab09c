"""A Harbor verifier apart from everything the agent left (docs/security.md, "Harbor tasks").

The verifier runs in the trial's container: it sees the files the agent made wherever it made
them and reaches the servers the agent left running, as under Harbor. But it runs in a mount
namespace of its own (`launch run --verify`, started from the host by nsenter into the
container's namespaces, in its cgroups: `docker exec` cannot hold the capability a new mount
namespace takes without handing it to the container), in which `/tests`, `/logs/verifier` and its HOME are fresh tmpfs that no process of the agent's
can see or write (in the container's own namespace those paths are empty read-only mount
points, which cannot be renamed away); its trace is there too. Its processes hold
CAP_SYS_PTRACE, which no process of the agent's does, so none of those can trace them or
open their /proc entries. proctor, on the host, writes the tests and reads the reward
through the launcher's descriptors of those tmpfs (/proc/PID/fd/N), never by a path in the
container, which an agent's process could have swapped for a link.

The programs the verifier runs are still the container's: what the agent changed among
them is found by checks/_tamper.py from the trace.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from proctor import proc
from proctor.proc import ExecResult
from proctor.sandbox.docker import EXEC_MARK, LAUNCH, TRACER, _has
from proctor.sandbox.trace import tracer_argv

if TYPE_CHECKING:
    from proctor.sandbox.dockerenv import ImageSandbox

FD_DIR, FD_TESTS, FD_LOGS = 4, 5, 6  # launch.c's descriptors of its tmpfs
# On the host: into each of the container's cgroups (its limits hold for the verifier), then
# nsenter into its namespaces, which runs proctor's launcher there.
_JOIN = 'while [ "$1" != -- ]; do echo $$ > "$1" || exit 125; shift; done; shift; exec "$@"'
HANDOFF_S = 30.0  # for the launcher to make its namespace, and to let go once read
MAX_FILES = 100  # of /logs/verifier, read back
MAX_FILE_BYTES = 20_000_000


@dataclass
class Verification:
    """What a verifier did: its command's result (output, status, trace) and the regular
    files it left in /logs/verifier."""

    result: ExecResult
    files: dict[str, bytes] = field(default_factory=dict)


async def run(sb: ImageSandbox, tests: list[Path], script: str, *, env: dict[str, str],
              uid: int, gid: int, timeout: float) -> Verification:
    """`bash /tests/SCRIPT` as uid:gid, with `tests` (later ones over earlier ones) at
    /tests, in the verifier's own namespace (module docstring)."""
    from proctor.sandbox.dockerenv import VERIFIER_DIR

    assert sb.container is not None
    sb._execs += 1
    n = sb._execs
    mark = f"{EXEC_MARK}={n}".encode()
    full = {**sb.env, "HOME": f"{VERIFIER_DIR}/home", **env, EXEC_MARK: str(n)}
    drop = [LAUNCH, "drop", "--keep-ptrace",
            *(["--uid", str(uid), "--gid", str(gid)] if uid != 0 else []), "--"]
    inner = [LAUNCH, "run", "--verify", VERIFIER_DIR, "--cwd", sb.workdir, "--",
             *tracer_argv(Path(VERIFIER_DIR, "trace"), TRACER), *drop,
             "bash", f"/tests/{script}"]
    nsenter = shutil.which("nsenter") or "nsenter"
    enter = ["/bin/sh", "-c", _JOIN, "join", *_cgroup_procs(sb.pid), "--", nsenter,
             f"--target={sb.pid}", "--mount", "--uts", "--ipc", "--net", "--pid", "--cgroup",
             "--", *inner]
    job = asyncio.ensure_future(proc.run(enter, timeout=timeout + 2 * HANDOFF_S, env=full,
                                         limit=sb.output_limit))
    pid, files, timed_out, own_ns = 0, {}, False, ""
    trace_copy = sb.private / f"verifier-trace-{n}"
    try:
        pid, own_ns = await _launcher(sb, mark, job)
        await asyncio.to_thread(_hand_over, pid, tests, uid, gid)
        timed_out = not await _until_exit(pid, job, timeout)
        if timed_out:  # everything of the verifier's but the launcher, which then reports
            await asyncio.to_thread(_kill_namespace, sb, own_ns, keep=pid)
            await _until_exit(pid, job, HANDOFF_S)
        files = await asyncio.to_thread(_read_logs, pid)
        await asyncio.to_thread(_copy, f"/proc/{pid}/fd/{FD_DIR}/trace", trace_copy)
    finally:
        if pid:
            await asyncio.to_thread(_let_go, pid)
        res = await job
        if own_ns:
            await asyncio.to_thread(_kill_namespace, sb, own_ns)
    res.timed_out = res.timed_out or timed_out
    if trace_copy.exists():
        sb._take_trace(res, trace_copy, (os.path.basename(LAUNCH),))
    elif not res.error:
        res.error = f"the verifier did not start: {(res.stderr or res.stdout).strip()[-500:]}"
    return Verification(res, files)


async def _launcher(sb: ImageSandbox, mark: bytes, job: asyncio.Future[ExecResult]
                    ) -> tuple[int, str]:
    """The launcher's host pid and mount namespace, once it has made its tmpfs."""
    init_ns = os.readlink(f"/proc/{sb.pid}/ns/mnt")
    deadline = time.monotonic() + HANDOFF_S
    while time.monotonic() < deadline and not job.done():
        for pid in await asyncio.to_thread(sb._processes):
            try:
                ns = os.readlink(f"/proc/{pid}/ns/mnt")
                ready = ns != init_ns and os.path.exists(f"/proc/{pid}/fd/{FD_LOGS}")
            except OSError:
                continue
            if ready and _has(pid, mark):
                return pid, ns
        await asyncio.sleep(0.01)
    res = await job if job.done() else None
    why = (res.stderr or res.stdout).strip()[-500:] if res else "it did not answer in time"
    raise OSError(f"the verifier's namespace could not be made: {why}")


def _cgroup_procs(pid: int) -> list[str]:
    """The cgroup.procs files of every cgroup process `pid` is in (v1 and v2)."""
    out: list[str] = []
    try:
        lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
    except OSError:
        return out
    for line in lines:
        _, controllers, path = line.split(":", 2)
        for c in controllers.split(",") if controllers else [""]:
            if c.startswith("name="):
                continue
            procs = Path("/sys/fs/cgroup", c, path.lstrip("/"), "cgroup.procs")
            if procs.is_file() and str(procs) not in out:
                out.append(str(procs))
    return out


def _hand_over(pid: int, tests: list[Path], uid: int, gid: int) -> None:
    """The tests into the launcher's /tests, a HOME for the verifier's user, then go."""
    fds = f"/proc/{pid}/fd"
    for d in tests:
        if d.is_dir():
            shutil.copytree(d, f"{fds}/{FD_TESTS}", symlinks=True, dirs_exist_ok=True)
    home = f"{fds}/{FD_DIR}/home"
    os.mkdir(home, 0o700)
    os.chown(home, uid, gid)
    with open(f"{fds}/{FD_DIR}/go", "x"):
        pass


async def _until_exit(pid: int, job: asyncio.Future[ExecResult], timeout: float) -> bool:
    """Whether the verifier's command ended (the launcher wrote its status) in time."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if os.path.exists(f"/proc/{pid}/fd/{FD_DIR}/exit"):
            return True
        if job.done():
            return False
        await asyncio.sleep(0.02)
    return False


def _read_logs(pid: int) -> dict[str, bytes]:
    """/logs/verifier's regular files, through the launcher's descriptor of its tmpfs."""
    top = f"/proc/{pid}/fd/{FD_LOGS}"
    out: dict[str, bytes] = {}
    try:
        names = sorted(os.listdir(top))[:MAX_FILES]
    except OSError:
        return out
    for name in names:
        try:
            fd = os.open(f"{top}/{name}", os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            continue
        try:
            if os.path.isfile(f"/proc/self/fd/{fd}"):
                with os.fdopen(os.dup(fd), "rb") as f:
                    out[name] = f.read(MAX_FILE_BYTES)
        finally:
            os.close(fd)
    return out


def _copy(src: str, dest: Path) -> None:
    with contextlib.suppress(OSError):  # no trace: the verifier did not start
        shutil.copyfile(src, dest)


def _let_go(pid: int) -> None:
    with contextlib.suppress(OSError), open(f"/proc/{pid}/fd/{FD_DIR}/done", "x"):
        pass  # (gone already: nothing to let go)


def _kill_namespace(sb: ImageSandbox, ns: str, keep: int = 0) -> int:
    """Kill every process of the verifier's namespace (but `keep`)."""
    def members() -> list[int]:
        out = []
        for pid in sb._processes():
            try:
                if pid != keep and os.readlink(f"/proc/{pid}/ns/mnt") == ns:
                    out.append(pid)
            except OSError:
                continue
        return out
    return proc.kill_until_gone(members)
