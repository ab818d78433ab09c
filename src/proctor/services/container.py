"""`image: X` services: one container per trial, from any image, reached by name.

Each trial gets its own container (fresh state, nothing shared between trials), labelled
`proctor.run=<run id>` like the trial's own, with the declared `env` and no network at all
(`--network none`: only its own loopback), no container name and no published port, so
nothing collides at any concurrency and the service reaches nothing: not the host (a Docker
bridge, even an internal one, lets a container open connections to every host service
listening on all addresses), not another trial's service, not the outside. proctor listens
for it on a loopback address of its own with the service's `ports` (see _net.py) and pipes
each connection to the same port on the container's loopback, through a socket made inside
the container's network namespace (netns.py): from here on the service is an endpoint like
a database, so the sandbox shows it under its name (`curl http://web:8000`) on either
backend, and `wait_for` runs in the sandbox as usual.

A side container of a Harbor task (spec/compose.py) may also have a `command`, an
`entrypoint`, a compose `healthcheck` (Docker's own, awaited before the trial starts) and an
`egress` policy: then it shares the network namespace of a small keeper container in which
proctor listens on 127.0.0.1:3128 before the service starts, and HTTP(S)_PROXY point there;
the trial attaches its egress proxy (`ContainerHandle.serve_egress`), so the service reaches
what the task's network policy allows (a `uv run` fetching its dependencies) and nothing
else, recorded like the agent's own egress.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shutil
import socket
from typing import Any

from proctor import netns, proc
from proctor.dockercli import RUN_LABEL, TRIAL_LABEL, docker, docker_sync
from proctor.errors import ServiceError, SetupError
from proctor.model import ServiceDef
from proctor.services import _net
from proctor.services.base import ServiceContext, ServiceHandle

ENGINE_TIMEOUT_S = 120.0
PULL_TIMEOUT_S = 1800.0


def _prefix(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]", "_", name).upper()


def _docker_sync(*args: str, timeout: float = ENGINE_TIMEOUT_S) -> proc.ExecResult:
    if shutil.which("docker") is None:
        raise SetupError("image services run in containers: no `docker` on PATH (install a "
                         "Docker engine, e.g. Debian's docker.io)")
    done = docker_sync(*args, timeout=timeout)
    if done.timed_out:
        raise SetupError(f"`docker {args[0]}` did not answer within {timeout:g} s")
    return done


EGRESS_PORT = 3128  # as the trial's own (sandbox/egress.py)
HEALTH_POLL_S = 0.5
HEALTH_WAIT_S = 300.0


class ContainerHandle(ServiceHandle):
    container: str = ""
    keeper: str = ""  # the container whose network namespace the service shares (egress)
    servers: list[asyncio.base_events.Server]
    _egress: _Switch | None = None

    _service: ContainerService | None = None

    reaches_out = True

    def serve_egress(self, handler: Any) -> None:
        """The trial's egress proxy answers the service's HTTP(S)_PROXY (if it has one)."""
        if self._egress is not None:
            self._egress.attach(handler)

    async def ready(self) -> None:
        """Its healthcheck passes (ServiceError if it never does); after serve_egress, as a
        service may need the network to become healthy."""
        if self._service is not None and self._service.health:
            await self._service._healthy(self.container)

    async def release(self) -> None:
        for s in getattr(self, "servers", []):
            s.close()
        if self._egress is not None:
            await self._egress.close()
        for attr in ("container", "keeper"):
            if getattr(self, attr):
                await docker("rm", "-f", "-v", getattr(self, attr), timeout=ENGINE_TIMEOUT_S)
                setattr(self, attr, "")


class _Switch:
    """Connections wait for the handler the trial attaches (at most a minute)."""

    def __init__(self) -> None:
        self.handler: Any = None
        self.ready = asyncio.Event()
        self.live: set[asyncio.Task[Any]] = set()

    def attach(self, handler: Any) -> None:
        self.handler = handler
        self.ready.set()

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self.live.add(task)
        try:
            await asyncio.wait_for(self.ready.wait(), 60)
            await self.handler(reader, writer)
        except (TimeoutError, asyncio.CancelledError):
            writer.close()
        finally:
            self.live.discard(task)

    async def close(self) -> None:
        """End every connection still open (the service's, when the trial ends)."""
        for task in list(self.live):
            task.cancel()
        if self.live:
            await asyncio.gather(*self.live, return_exceptions=True)


class ContainerService:
    def __init__(self, defn: ServiceDef, ctx: ServiceContext):
        self.name = defn.name
        self.image = str(defn.config.get("image") or "")
        self.env = {str(k): str(v) for k, v in (defn.config.get("env") or {}).items()}
        self.ports = [int(p) for p in defn.config.get("ports") or []]
        self.run_id = ctx.run_id
        self.command = [str(c) for c in defn.config.get("command") or []]
        self.entrypoint = [str(c) for c in defn.config.get("entrypoint") or []]
        self.health = defn.config.get("healthcheck") or None
        self.egress = bool(defn.config.get("egress"))

    async def start(self) -> None:
        """The image is local (pulled if not) and its ports known, before any trial."""
        await asyncio.to_thread(self._ready)

    def _ready(self) -> None:
        where = f"service {self.name!r}"
        done = _docker_sync("image", "inspect", "-f", "{{json .Config.ExposedPorts}}", self.image)
        if done.exit_code != 0:
            pull = _docker_sync("pull", "-q", self.image, timeout=PULL_TIMEOUT_S)
            if pull.exit_code != 0:
                tail = (pull.stderr or pull.stdout).strip().splitlines()[-3:]
                raise SetupError(f"{where}: image {self.image!r} is not local and could not be "
                                 f"pulled: {' '.join(tail)}")
            done = _docker_sync("image", "inspect", "-f", "{{json .Config.ExposedPorts}}",
                                self.image)
        if not self.ports:  # the image's own EXPOSE lines
            exposed = json.loads(done.stdout.strip() or "null") or {}
            self.ports = sorted(int(p.split("/")[0]) for p in exposed if p.endswith("/tcp"))
        if not self.ports:
            raise SetupError(f"{where}: image {self.image!r} exposes no TCP port; give `ports:`")

    async def provision(self, trial_id: str) -> ServiceHandle:
        labels = ["--label", f"{RUN_LABEL}={self.run_id}", "--label", f"{TRIAL_LABEL}={trial_id}"]
        handle = ContainerHandle(name=self.name, kind="container", host="", port=0, url="")
        handle.servers = []
        network = ["--network", "none"]
        env = dict(self.env)
        if self.egress:
            network = await self._keeper(handle, labels)
            url = f"http://127.0.0.1:{EGRESS_PORT}"
            env = {"HTTP_PROXY": url, "HTTPS_PROXY": url, "http_proxy": url, "https_proxy": url,
                   "NO_PROXY": "localhost,127.0.0.1", "no_proxy": "localhost,127.0.0.1", **env}
        argv = ["run", "-d", *labels, "--label", f"proctor.service={self.name}",
                *network, *self._health_args()]
        for k in env:
            argv += ["-e", k]  # values from the client's environment, not in an argv
        if self.entrypoint:
            argv += ["--entrypoint", self.entrypoint[0]]
        tail = [*self.entrypoint[1:], *self.command]
        # Shielded: on Ctrl-C what the engine made is still known, then removed.
        res = await _shielded([*argv, self.image, *tail], handle, env={**_client_env(), **env})
        if res.exit_code != 0:
            await handle.release()
            raise ServiceError(f"could not start {self.image}: {res.stderr.strip()[-300:]}")
        try:
            pid = await self._pid(handle.container)
            host, ports = await self._listen(handle, pid)
            handle._service = self
        except BaseException:
            await handle.release()
            raise
        port = ports[0]
        p = _prefix(self.name)
        handle.host, handle.port, handle.url = host, port, f"http://{host}:{port}"
        handle.env = {f"{p}_HOST": host, f"{p}_PORT": str(port), f"{p}_URL": handle.url}
        handle.credentials = {"image": self.image, "ports": ports, "container": handle.container}
        return handle

    async def _keeper(self, handle: ContainerHandle, labels: list[str]) -> list[str]:
        """A container holding the network namespace the service will share, with proctor's
        egress listener bound in it before the service's first request."""
        argv = ["docker", "run", "-d", *labels, "--label", f"proctor.service={self.name}-net",
                "--network", "none", "--entrypoint", "sleep", self.image, "2147483647"]
        res = await proc.run(argv, timeout=ENGINE_TIMEOUT_S, env=_client_env())
        if res.exit_code != 0:
            raise ServiceError(f"could not start the network keeper of {self.name}: "
                               f"{res.stderr.strip()[-300:]}")
        handle.keeper = res.stdout.strip()
        pid = await self._pid(handle.keeper)
        sock = await asyncio.to_thread(
            netns.run_in, pid, lambda: socket.create_server(("127.0.0.1", EGRESS_PORT)))
        switch = handle._egress = _Switch()
        handle.servers.append(await asyncio.start_server(switch.handle, sock=sock))
        return ["--network", f"container:{handle.keeper}"]

    def _health_args(self) -> list[str]:
        h = self.health
        if not h or not h.get("command"):
            return []
        return ["--health-cmd", str(h["command"]),
                "--health-interval", f"{float(h.get('interval', 30)):g}s",
                "--health-timeout", f"{float(h.get('timeout', 30)):g}s",
                "--health-retries", str(int(h.get("retries", 3))),
                "--health-start-period", f"{float(h.get('start_period', 0)):g}s"]

    async def _healthy(self, container: str) -> None:
        """Docker's own healthcheck says healthy (compose's `condition: service_healthy`).
        A service Docker calls unhealthy while it still runs is given until the deadline (at
        least HEALTH_WAIT_S): on a loaded machine a slow start is not a broken one."""
        h = self.health or {}
        limit = float(h.get("start_period", 0)) + (int(h.get("retries", 3)) + 1) * (
            float(h.get("interval", 30)) + float(h.get("timeout", 30))) + 10
        deadline = asyncio.get_running_loop().time() + max(limit, HEALTH_WAIT_S)
        while True:
            res = await proc.run(["docker", "inspect", "-f",
                                  "{{.State.Running}} {{.State.Health.Status}}", container],
                                 timeout=ENGINE_TIMEOUT_S)
            running, _, status = res.stdout.strip().partition(" ")
            if status == "healthy":
                return
            if running != "true" or asyncio.get_running_loop().time() > deadline:
                logs = await proc.run(["docker", "logs", "--tail", "5", container], timeout=30)
                raise ServiceError(f"{self.name} never became healthy ({status or running}): "
                                   f"{(logs.stderr or logs.stdout).strip()[-400:]}")
            await asyncio.sleep(HEALTH_POLL_S)

    async def _pid(self, container: str) -> int:
        """The container's init as the host numbers it: its network namespace is the way in."""
        res = await docker("inspect", "-f", "{{.State.Running}} {{.State.Pid}}", container,
                           timeout=ENGINE_TIMEOUT_S)
        running, _, pid = res.stdout.strip().partition(" ")
        if running != "true" or not pid.isdigit() or pid == "0":
            logs = await docker("logs", "--tail", "5", container, timeout=30)
            raise ServiceError(f"{self.image} exited at start: "
                               f"{(logs.stderr or logs.stdout).strip()[-300:]}")
        return int(pid)

    async def _listen(self, handle: ContainerHandle, pid: int) -> tuple[str, list[int]]:
        """One loopback address of our own with the service's ports, each piped to the
        container (without private loopback addresses: 127.0.0.1 and free ports)."""
        for _ in range(20):
            own = _net.private_loopback_ok()
            host = _net.random_loopback() if own else _net.FALLBACK_HOST
            try:
                for port in self.ports:
                    handle.servers.append(await asyncio.start_server(
                        _piper(pid, port), host, port if own else 0))
                return host, [s.sockets[0].getsockname()[1] for s in handle.servers]
            except OSError:  # raced with another server for this address: another one
                for s in handle.servers:
                    s.close()
                handle.servers.clear()
        raise ServiceError(f"no loopback address free for ports {self.ports}")

    async def stop(self) -> None:
        """Trial containers are removed by their handles' release()."""


async def _shielded(argv: list[str], handle: ContainerHandle,
                    env: dict[str, str] | None = None) -> proc.ExecResult:
    """Run the engine command that makes the container; its id goes on the handle, so
    release() removes it, even when the trial is cancelled meanwhile."""
    job = asyncio.ensure_future(docker(*argv, timeout=ENGINE_TIMEOUT_S, env=env))
    cancelled = False
    try:
        res = await asyncio.shield(job)
    except asyncio.CancelledError:
        res, cancelled = await job, True
    if res.exit_code == 0:
        handle.container = res.stdout.strip()
    if cancelled:
        await handle.release()
        raise asyncio.CancelledError
    return res


def _piper(pid: int, port: int) -> Any:
    """Each connection piped to `port` on the loopback of the container whose init is `pid`."""
    async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            sock = await asyncio.to_thread(netns.run_in, pid, socket.socket)
            sock.setblocking(False)
            try:
                await asyncio.get_running_loop().sock_connect(sock, ("127.0.0.1", port))
            except BaseException:
                sock.close()
                raise
            up_r, up_w = await asyncio.open_connection(sock=sock)
        except OSError:
            writer.close()
            return
        try:
            await asyncio.gather(_copy(reader, up_w), _copy(up_r, writer))
        finally:
            for w in (writer, up_w):
                w.close()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await pipe(reader, writer)
        except asyncio.CancelledError:
            # Cancelled (the loop's end): the task ends normally. Python 3.11's stream server
            # calls task.exception() in a done-callback, which raises for a cancelled task
            # and reaches the loop's exception handler (as sandbox/forward.py's Forwarder).
            writer.close()

    return handle


async def _copy(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
    try:
        while data := await r.read(65536):
            w.write(data)
            await w.drain()
    except (OSError, asyncio.IncompleteReadError):
        pass
    finally:
        with contextlib.suppress(OSError, RuntimeError):
            if w.can_write_eof():
                w.write_eof()


def _client_env() -> dict[str, str]:
    keep = ("PATH", "HOME", "DOCKER_HOST", "DOCKER_CONFIG", "DOCKER_CONTEXT")
    return {k: os.environ[k] for k in keep if k in os.environ}
