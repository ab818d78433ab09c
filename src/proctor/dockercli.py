"""The container engine's command line: the one way proctor calls `docker`.

Every call goes through proctor.proc (its own process group, output capped, killed at its
timeout): `docker` / `docker_ok` in the event loop, `docker_sync` outside one (image builds,
sweeps, a service's image). The sandbox backend, its image builder and the image services
all use these, so an engine that hangs or is missing is handled in one place.

A trial's critical path (its container made, started, inspected, its commands run, the
container removed, its image's config) and the engine's capacity, asked once a run, go to the
engine's API socket instead when this process's client would talk to it (`api`): one HTTP
request in-process instead of starting the client, ~17 ms of CPU a call. Where the client is
pointed elsewhere (DOCKER_HOST, a context) or the socket does not answer, they run `docker`
as before.
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
from typing import IO, Any

from proctor import engineapi, proc
from proctor.engineapi import api_socket
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
    if docker == "docker" and _pings():  # the engine the client would ask answers: no client
        return None
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


async def api(method: str, path: str, timeout: float = DOCKER_TIMEOUT_S,
              body: object = None) -> tuple[int, bytes] | None:
    """(HTTP status, body) of one request to the engine's API socket (`api_socket`); None
    when there is none, it does not answer in `timeout`, or the answer is not HTTP (the
    caller then runs `docker`). `body`: sent as JSON."""
    where = api_socket()
    if where is None:
        return None
    writer = None
    try:
        reader, writer = await asyncio.wait_for(asyncio.open_unix_connection(where),
                                                ENGINE_TIMEOUT_S)
        writer.write(engineapi.request(method, path, body))
        raw = await asyncio.wait_for(reader.read(), timeout)
    except (OSError, TimeoutError):
        return None
    finally:
        if writer is not None:
            writer.close()
    return engineapi.answer(raw)


def _pings() -> bool:
    """Whether the engine answers `GET /_ping` on the socket the client would use (~1 ms
    in-process instead of ~20 ms of a client's start); False sends the caller to the client,
    which says why not in its own words."""
    got = api_sync("GET", "/_ping", ENGINE_TIMEOUT_S)
    return got is not None and got[0] == 200 and got[1].strip() == b"OK"


def api_sync(method: str, path: str, timeout: float = ENGINE_TIMEOUT_S) -> tuple[int, bytes] | None:
    """`api` outside an event loop (blocking)."""
    return engineapi.call(method, path, timeout)


def _engine_said(status: int, body: bytes) -> str:
    try:
        return str(json.loads(body).get("message") or f"HTTP {status}")
    except (ValueError, AttributeError):
        return f"HTTP {status}"


async def inspect(container: str) -> dict[str, Any]:
    """`docker inspect CONTAINER` (its State, GraphDriver...); OSError with the engine's
    reason if it fails."""
    from urllib.parse import quote

    got = await api("GET", f"/containers/{quote(container, safe='')}/json", ENGINE_TIMEOUT_S)
    if got is None:
        out = await docker_ok("inspect", "--format", "{{json .}}", container)
        return dict(json.loads(out or "{}"))
    status, body = got
    if status != 200:
        raise OSError(f"docker inspect: {_engine_said(status, body)}")
    return dict(json.loads(body))


async def remove(container: str) -> None:
    """`docker rm -f -v CONTAINER`: killed, removed with its anonymous volumes (what is
    already gone is no error)."""
    from urllib.parse import quote

    got = await api("DELETE", f"/containers/{quote(container, safe='')}?force=1&v=1")
    if got is None:
        await docker("rm", "-f", "-v", container)


async def image_config(image: str) -> dict[str, Any]:
    """An image's Config (Entrypoint, Env, User, WorkingDir...), as `docker image inspect`
    gives it; OSError if the engine has no such image."""
    from urllib.parse import quote

    got = await api("GET", f"/images/{quote(image, safe='/:@')}/json", ENGINE_TIMEOUT_S)
    if got is None:
        res = await docker("image", "inspect", "-f", "{{json .Config}}", image, timeout=60)
        if res.exit_code != 0:
            raise OSError(f"docker image inspect {image}: {res.stderr.strip()[-300:]}")
        return json.loads(res.stdout.strip() or "{}") or {}
    status, body = got
    if status != 200:
        raise OSError(f"docker image inspect {image}: {_engine_said(status, body)}")
    return json.loads(body).get("Config") or {}


def image_id(image: str, timeout: float = 60.0) -> str | None:
    """The image's id if the engine has it (`docker image inspect -f {{.Id}}`), asked of
    the API socket where the client would use it (blocking; once per image and run)."""
    from urllib.parse import quote

    got = api_sync("GET", f"/images/{quote(image, safe='/:@')}/json", timeout)
    if got is None or got[0] not in (200, 404):  # no socket, or an answer to word: the client
        done = docker_sync("image", "inspect", "-f", "{{.Id}}", image, timeout=timeout)
        return done.stdout.strip() if done.exit_code == 0 else None
    status, body = got
    if status == 404:  # no such image here
        return None
    return str(json.loads(body).get("Id") or "") or None


async def run_detached(argv: list[str]) -> str:
    """`docker ARGV…` (`run -d …`, as the client takes it): the new container's id. Through
    the API socket, create then start, where the client would use it and `argv` holds only
    what `create_request` translates; else, or where the engine lacks the image (the client pulls
    it), the client. A container made but not started is removed (OSError, the engine's
    reason)."""
    body = create_request(argv)
    got = None if body is None else await api("POST", "/containers/create", body=body)
    if got is None or got[0] == 404:
        return (await docker_ok(*argv))[:64]
    status, data = got
    if status != 201:
        raise OSError(f"docker run: {_engine_said(status, data)}")
    container = str(json.loads(data)["Id"])
    started = await api("POST", f"/containers/{container}/start")
    if started is None or started[0] not in (204, 304):
        await remove(container)
        raise OSError("docker run: " + (_engine_said(*started) if started is not None
                                        else "the engine did not answer"))
    return container


_FLAGS = {"--network", "--label", "--user", "--workdir", "--cap-add", "--hostname", "--add-host",
          "-v", "--memory", "--memory-swap", "--cpus", "--pids-limit", "--ulimit",
          "--entrypoint", "--security-opt", "--tmpfs"}


def create_request(argv: list[str]) -> dict[str, Any] | None:
    """The engine's create request for `run -d [OPTIONS] IMAGE [COMMAND…]`, for the options
    proctor's containers use (container.py, taskenv.py); None for anything else."""
    if argv[:2] != ["run", "-d"]:
        return None
    host: dict[str, Any] = {"Binds": [], "CapAdd": [], "ExtraHosts": [], "SecurityOpt": [],
                            "Tmpfs": {}, "Ulimits": []}
    config: dict[str, Any] = {"Labels": {}, "HostConfig": host, "AttachStdin": False,
                              "AttachStdout": False, "AttachStderr": False, "Tty": False,
                              "OpenStdin": False}
    i = 2
    try:
        while i < len(argv) and argv[i].startswith("-"):
            flag = argv[i]
            if flag == "--init":
                host["Init"] = True
            elif flag == "--read-only":
                host["ReadonlyRootfs"] = True
            elif flag == "--rm":
                host["AutoRemove"] = True
            elif flag not in _FLAGS or i + 1 >= len(argv) or not _option(
                    flag, argv[i + 1], config, host):
                return None
            else:
                i += 1
            i += 1
    except ValueError:
        return None
    if i >= len(argv):
        return None
    config["Image"], config["Cmd"] = argv[i], argv[i + 1:]
    return config


_SETTINGS = {"--user": "User", "--workdir": "WorkingDir", "--hostname": "Hostname"}
_LISTS = {"--add-host": "ExtraHosts", "-v": "Binds", "--security-opt": "SecurityOpt"}
_NUMBERS = {"--memory": "Memory", "--memory-swap": "MemorySwap", "--pids-limit": "PidsLimit"}


def _option(flag: str, value: str, config: dict[str, Any], host: dict[str, Any]) -> bool:
    """One `flag value` of `docker run` into the create request; False where the client
    would do more than pass it on."""
    if flag == "--network":
        host["NetworkMode"] = value
    elif flag == "--label":
        name, _, text = value.partition("=")
        config["Labels"][name] = text
    elif flag in _SETTINGS:
        if flag == "--hostname" and "." in value:
            return False  # the client splits a domain off it
        config[_SETTINGS[flag]] = value
    elif flag == "--cap-add":  # as the client names it
        value = value.upper()
        host["CapAdd"].append(value if value.startswith("CAP_") else f"CAP_{value}")
    elif flag in _LISTS:
        host[_LISTS[flag]].append(value)
    elif flag in _NUMBERS:
        host[_NUMBERS[flag]] = int(value)
    elif flag == "--cpus":
        host["NanoCpus"] = round(float(value) * 1e9)
    elif flag == "--ulimit":
        name, _, limits = value.partition("=")
        soft, _, hard = limits.partition(":")
        host["Ulimits"].append({"Name": name, "Soft": int(soft), "Hard": int(hard or soft)})
    elif flag == "--entrypoint":
        config["Entrypoint"] = [value]
    elif flag == "--tmpfs":
        path, _, options = value.partition(":")
        host["Tmpfs"][path] = options
    return True


async def exec_in(container: str, argv: list[str], *, env: dict[str, str], workdir: str,
                  user: str, timeout: float, stdin: bytes | None = None,
                  limit: int = 1_000_000, feed: proc.Feed | None = None) -> ExecResult | None:
    """`docker exec [-i] -w WORKDIR -u USER -e… CONTAINER ARGV…` through the API socket: its
    result as proc.run gives the client's (first `limit` bytes of each stream, `feed` sees
    every byte, `timed_out` past `timeout`: the caller kills what it started inside, as
    after the client). None where the socket is not the client's or the engine refuses the
    exec (the caller runs the client, which says why as before)."""
    import time

    if api_socket() is None:
        return None
    started, t0 = time.time(), time.monotonic()
    made = await api("POST", f"/containers/{container}/exec", ENGINE_TIMEOUT_S, body={
        "AttachStdin": stdin is not None, "AttachStdout": True, "AttachStderr": True,
        "Tty": False, "Env": [f"{k}={v}" for k, v in env.items()], "Cmd": argv,
        "WorkingDir": workdir, "User": user})
    if made is None or made[0] != 201:
        return None
    run = str(json.loads(made[1])["Id"])
    out = proc.Capture(asyncio.get_running_loop(), limit, feed)
    try:
        timed_out = await _attached(run, stdin, out, t0 + timeout)
    except (OSError, TimeoutError, asyncio.IncompleteReadError) as e:
        return ExecResult(None, out.text(1), out.text(2), time.monotonic() - t0, started,
                          error=f"the engine's stream of the command broke: {e!r}")
    if timed_out is None:
        return None  # never started: the client says why
    code = None if timed_out else await _exit_code(run)
    note = f"\nproctor: timed out after {timeout:g}s" if timed_out else ""
    return ExecResult(exit_code=code, stdout=out.text(1), stderr=out.text(2) + note,
                      duration_s=time.monotonic() - t0, started_at=started, timed_out=timed_out,
                      truncated=out.dropped[1] > 0 or out.dropped[2] > 0)


async def _attached(run: str, stdin: bytes | None, out: proc.Capture,
                    deadline: float) -> bool | None:
    """Start exec `run` attached: stdin sent, then its end; each frame of output into `out`
    until the stream ends (False) or `deadline` (monotonic) passes (True). None when the
    engine did not start it (nothing ran: the client may); raises (OSError...) once it may
    have run."""
    import struct
    import time

    where = api_socket()
    if where is None:
        return None
    try:
        reader, writer = await asyncio.wait_for(asyncio.open_unix_connection(where),
                                                ENGINE_TIMEOUT_S)
    except (OSError, TimeoutError):
        return None
    try:
        body = b'{"Detach":false,"Tty":false}'
        writer.write(f"POST /exec/{run}/start HTTP/1.1\r\nHost: docker\r\nConnection: Upgrade"
                     f"\r\nUpgrade: tcp\r\nContent-Type: application/json\r\nContent-Length: "
                     f"{len(body)}\r\n\r\n".encode() + body)
        # Asked: from here on it may have run (the engine's answer lost), so never None.
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), ENGINE_TIMEOUT_S)
        if head.split(b" ", 2)[1:2] not in ([b"101"], [b"200"]):
            return None  # refused: not started
        if stdin is not None:
            writer.write(stdin)
            await writer.drain()
            if writer.can_write_eof():
                writer.write_eof()

        async def relay() -> None:
            while True:
                try:
                    frame = await reader.readexactly(8)
                except asyncio.IncompleteReadError:
                    return
                data = await reader.readexactly(struct.unpack(">I", frame[4:])[0])
                if frame[0] in (1, 2):
                    out.pipe_data_received(frame[0], data)

        try:
            await asyncio.wait_for(relay(), max(0.0, deadline - time.monotonic()))
        except TimeoutError:
            return True
        return False
    finally:
        writer.close()


async def _exit_code(run: str) -> int | None:
    """The exit code of exec `run` once the engine has noted it (as its stream ends)."""
    for _ in range(100):
        got = await api("GET", f"/exec/{run}/json", ENGINE_TIMEOUT_S)
        state = json.loads(got[1]) if got is not None and got[0] == 200 else {}
        if not state.get("Running"):
            code = state.get("ExitCode")
            return int(code) if code is not None else None
        await asyncio.sleep(0.01)
    return None
