"""A Harbor verifier apart from everything the agent left (docs/security.md, "Harbor tasks").

The verifier runs in the trial's container: it sees the files the agent made wherever it made
them and reaches the servers the agent left running, as under Harbor. But it runs in a mount
namespace of its own (`launch run --verify`, started from the host by nsenter into the
container's namespaces, in its cgroups: `docker exec` cannot hold the capability a new mount
namespace takes without handing it to the container). There, `/tests` and `/logs/verifier`
are host directories of proctor's (bound from `/.proctor-verifier`, which the container's own
namespace sees only as an empty read-only cover), and no process of the agent's can see or
write them: none holds CAP_SYS_PTRACE or CAP_MKNOD, which the verifier's
tracer and processes do, so none can open their /proc entries. Its trace goes to a file its
own processes cannot open either (the launcher's descriptor, reached by the tracer alone).

The programs the verifier runs, and its HOME, are the container's, as under Harbor (a test
that writes ~/.bashrc and starts an interactive shell through the agent's terminal server
must find it there): what the agent changed among them that the verifier ran or would read
is found by checks/_tamper.py, from the trace.
"""

from __future__ import annotations

import os
import shutil
import stat
from dataclasses import dataclass, field
from pathlib import Path

from proctor import proc
from proctor.proc import ExecResult
from proctor.sandbox.docker.container import EXEC_MARK, LAUNCH, TRACER, DockerSandbox
from proctor.sandbox.docker.processes import cgroup_dirs
from proctor.sandbox.trace import tracer_argv

# The verifier's own (tests, logs, HOME, trace), a host directory covered by an empty
# read-only tmpfs in the container's namespace (taskenv.py).
VERIFIER_DIR = "/.proctor-verifier"
MAX_FILES = 100  # of /logs/verifier, read back
MAX_FILE_BYTES = 20_000_000
# On the host: into each of the container's cgroups (its limits hold for the verifier), then
# nsenter into its namespaces, which runs proctor's launcher there.
_JOIN = 'while [ "$1" != -- ]; do echo $$ > "$1" || exit 125; shift; done; shift; exec "$@"'


@dataclass
class Verification:
    """What a verifier did: its command's result (output, status, trace) and the regular
    files it left in /logs/verifier."""

    result: ExecResult
    files: dict[str, bytes] = field(default_factory=dict)


async def run(sb: DockerSandbox, tests: list[Path], script: str, *, env: dict[str, str],
              uid: int, gid: int, home: str, timeout: float) -> Verification:
    """/tests/SCRIPT (executable, as Harbor makes it) run by `bash -c` as uid:gid (whose HOME is `home`, as under Harbor), with `tests`
    (later ones over earlier ones) at /tests, in the verifier's own namespace (module
    docstring)."""
    import asyncio

    assert sb.container is not None
    sb._execs += 1
    n = sb._execs
    here = sb.root / "verifier" / str(n)  # VERIFIER_DIR/N inside
    await asyncio.to_thread(_prepare, here, tests, script)
    full = {**sb.env, "HOME": home, **env, EXEC_MARK: str(n)}
    drop = [LAUNCH, "drop", *(["--uid", str(uid), "--gid", str(gid)] if uid != 0 else []), "--"]
    inner = [LAUNCH, "run", "--verify", f"{VERIFIER_DIR}/{n}", "--cwd", sb.workdir, "--",
             *tracer_argv(Path("@TRACE@"), TRACER), *drop, "bash", "-c", f"/tests/{script}"]
    enter = ["/bin/sh", "-c", _JOIN, "join", *_cgroup_procs(sb.pid), "--",
             shutil.which("nsenter") or "nsenter", f"--target={sb.pid}", "--mount", "--root", "--wd", "--uts",
             "--ipc", "--net", "--pid", "--cgroup", "--", *inner]
    try:
        res = await proc.run(enter, timeout=timeout, env=full, limit=sb.output_limit)
    finally:  # what the verifier left running: every process outside the container's own
        await asyncio.to_thread(_kill_verifier_processes, sb)  # mount namespace
    files = await asyncio.to_thread(_read_logs, here / "logs")
    trace = here / "trace"
    if trace.is_file():
        sb._take_trace(res, trace, (os.path.basename(LAUNCH),))
    elif not res.error:
        res.error = f"the verifier did not start: {(res.stderr or res.stdout).strip()[-500:]}"
    if not sb.keep:
        await asyncio.to_thread(shutil.rmtree, here, True)
    return Verification(res, files)


def _prepare(here: Path, tests: list[Path], script: str) -> None:
    """The verifier's tests and logs, on the host. The script is made executable and run
    directly, as Harbor runs it (`chmod +x`, then `bash -c /tests/test.sh`): its shebang
    picks the interpreter, and one without a shebang is run by bash (bash's fallback when
    the kernel refuses to execute it)."""
    for name, mode in (("tests", 0o755), ("logs", 0o777)):
        (here / name).mkdir(parents=True)
        os.chmod(here / name, mode)
    for d in tests:
        if d.is_dir():
            shutil.copytree(d, here / "tests", symlinks=True, dirs_exist_ok=True)
    found = here / "tests" / script
    if found.is_file() and not found.is_symlink():
        found.chmod(found.stat().st_mode | 0o111)


def _cgroup_procs(pid: int) -> list[str]:
    """The cgroup.procs files of every cgroup process `pid` is in (v1 and v2)."""
    files = {d / "cgroup.procs" for d in cgroup_dirs(pid, every=True).values()}
    return sorted(str(f) for f in files if f.is_file())


def _read_logs(logs: Path) -> dict[str, bytes]:
    """/logs/verifier's regular files (no link, no device or FIFO the verifier made)."""
    out: dict[str, bytes] = {}
    try:
        names = sorted(os.listdir(logs))[:MAX_FILES]
    except OSError:
        return out
    for name in names:
        try:
            if not stat.S_ISREG(os.lstat(logs / name).st_mode):
                continue
            fd = os.open(logs / name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError:
            continue
        with os.fdopen(fd, "rb") as f:
            if stat.S_ISREG(os.fstat(fd).st_mode):
                out[name] = f.read(MAX_FILE_BYTES)
    return out


def _kill_verifier_processes(sb: DockerSandbox) -> int:
    """Kill every process of the container in a mount namespace other than its own (the
    verifier's: the agent's and the image's processes are all in the container's)."""
    try:
        own = os.readlink(f"/proc/{sb.pid}/ns/mnt")
    except OSError:
        return 0

    def members() -> list[int]:
        out = []
        for pid in sb._processes():
            try:
                if os.readlink(f"/proc/{pid}/ns/mnt") != own:
                    out.append(pid)
            except OSError:
                continue
        return out
    return proc.kill_until_gone(members)
