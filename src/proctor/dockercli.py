"""The container engine's command line: the one way proctor calls `docker`.

Every call goes through proctor.proc (its own process group, output capped, killed at its
timeout): `docker` / `docker_ok` in the event loop, `docker_sync` outside one (image builds,
sweeps, a service's image). The sandbox backend, its image builder and the image services
all use these, so an engine that hangs or is missing is handled in one place.
"""

from __future__ import annotations

import asyncio
import re
import shutil
from typing import IO, Any

from proctor import proc
from proctor.proc import ExecResult

ENGINE_TIMEOUT_S = 20.0  # a daemon that has not answered by then is as good as absent
DOCKER_TIMEOUT_S = 120.0  # one engine call (create, remove); images are built beforehand
RUN_LABEL, TRIAL_LABEL = "proctor.run", "proctor.trial"
# The client's closing advice, never the reason: `Run 'docker run --help' for more
# information`, `See 'docker run --help'.`; dropped so docker's own error line is what is said.
_ADVICE = re.compile(r"^(Run|See) 'docker [^']*--help'")


def engine_problem(docker: str = "docker") -> str | None:
    """Why no container engine can be used here, or None when the daemon answers."""
    binary = shutil.which(docker)
    if binary is None:
        return f"no container engine: `{docker}` is not on PATH (install a Docker engine, e.g. Debian's docker.io, and start dockerd)"
    done = proc.run_sync([binary, "version", "--format", "{{.Server.Version}}"],
                         timeout=ENGINE_TIMEOUT_S)
    if done.timed_out:
        return f"the container engine did not answer within {ENGINE_TIMEOUT_S:g} s"
    if done.exit_code != 0 or not done.stdout.strip():
        # The client prints why (daemon not running, permission denied on the socket) last.
        lines = [ln for ln in done.stderr.splitlines() if ln.strip()]
        why = lines[-1].strip() if lines else f"`docker version` exited {done.exit_code}"
        return f"the container engine is not usable: {why}"
    return None


async def docker(*args: str, timeout: float = DOCKER_TIMEOUT_S, stdin: bytes | None = None,
                 env: dict[str, str] | None = None, binary: bool = False,
                 limit: int = 1_000_000, feed: proc.Feed | None = None) -> ExecResult:
    """`docker ARGS...` in the event loop (`binary`: stdout's bytes in `stdout_bytes`; `limit`
    and `feed` as proc.run's: a trial's command through `docker exec`)."""
    return await proc.run(["docker", *args], timeout=timeout, stdin=stdin, env=env,
                          binary=binary, limit=limit, feed=feed)


async def docker_ok(*args: str, timeout: float = DOCKER_TIMEOUT_S) -> str:
    """stdout of a docker call that must succeed (OSError with the engine's reason if not)."""
    return ok(await docker(*args, timeout=timeout), args)


def docker_sync(*args: str, timeout: float = DOCKER_TIMEOUT_S,
                stdin: bytes | IO[bytes] | None = None, cwd: str | None = None) -> ExecResult:
    """`docker ARGS...` outside an event loop (blocking)."""
    return proc.run_sync(["docker", *args], timeout=timeout, stdin=stdin, cwd=cwd)


def is_advice(line: str) -> bool:
    """`Run 'docker build --help' for more information`: the client's, never the reason."""
    return bool(_ADVICE.match(line.strip()))


def said(text: str) -> str:
    """Docker's own error line in a failed call's output (`Range of CPUs is from 0.01 to
    2.00, ...`), not the client's advice after it; '' when there is none."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip() and not is_advice(ln)]
    if not lines:
        return ""
    return re.sub(r"^docker: (Error response from daemon: )?", "", lines[-1])


def ok(res: ExecResult, args: tuple[str, ...]) -> str:
    """The stdout of a call that succeeded; OSError with docker's own error line if not."""
    if res.exit_code != 0:
        why = said(res.stderr) or said(res.stdout) or (
            "timed out" if res.timed_out else f"exited {res.exit_code}")
        raise OSError(f"docker {args[0]}: {why}")
    return res.stdout.strip()


async def finish(coro: Any) -> Any:
    """Await `coro` to its end even if we are cancelled meanwhile (then re-raise): what the
    engine is asked to create or remove must not be left half-known on Ctrl-C."""
    job = asyncio.ensure_future(coro)
    try:
        return await asyncio.shield(job)
    except asyncio.CancelledError:
        await job
        raise


def sweep(run_id: str) -> int:
    """Remove every container (and its anonymous volumes) and network a run left behind;
    returns how many. Nothing to do, and no error, where no engine answers."""
    if shutil.which("docker") is None:
        return 0
    removed = 0
    for kind, rm in (("container", ["rm", "-f", "-v"]), ("network", ["network", "rm"])):
        ls = docker_sync(kind, "ls", *(["-a"] if kind == "container" else []), "-q",
                         "--filter", f"label={RUN_LABEL}={run_id}", timeout=ENGINE_TIMEOUT_S)
        ids = ls.stdout.split() if ls.exit_code == 0 else []
        if ids:
            docker_sync(*rm, *ids)
            removed += len(ids)
    return removed
