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


class ContainerHandle(ServiceHandle):
    container: str = ""
    servers: list[asyncio.base_events.Server]

    async def release(self) -> None:
        for s in getattr(self, "servers", []):
            s.close()
        if self.container:
            await docker("rm", "-f", "-v", self.container, timeout=ENGINE_TIMEOUT_S)
            self.container = ""


class ContainerService:
    def __init__(self, defn: ServiceDef, ctx: ServiceContext):
        self.name = defn.name
        self.image = str(defn.config.get("image") or "")
        self.env = {str(k): str(v) for k, v in (defn.config.get("env") or {}).items()}
        self.ports = [int(p) for p in defn.config.get("ports") or []]
        self.run_id = ctx.run_id

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
        argv = ["run", "-d", *labels, "--label", f"proctor.service={self.name}",
                "--network", "none"]
        for k in self.env:
            argv += ["-e", k]  # values from the client's environment, not in an argv
        # Shielded: on Ctrl-C what the engine made is still known, then removed.
        res = await _shielded([*argv, self.image], handle, env={**_client_env(), **self.env})
        if res.exit_code != 0:
            await handle.release()
            raise ServiceError(f"could not start {self.image}: {res.stderr.strip()[-300:]}")
        try:
            pid = await self._pid(handle.container)
            host, ports = await self._listen(handle, pid)
        except BaseException:
            await handle.release()
            raise
        port = ports[0]
        p = _prefix(self.name)
        handle.host, handle.port, handle.url = host, port, f"http://{host}:{port}"
        handle.env = {f"{p}_HOST": host, f"{p}_PORT": str(port), f"{p}_URL": handle.url}
        handle.credentials = {"image": self.image, "ports": ports, "container": handle.container}
        return handle

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
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
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
