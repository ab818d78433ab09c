"""http_mock: a built-in HTTP responder per trial, on a loopback address of its own, that
answers from `routes` and records what it was asked.

Per trial it is one listening socket and an aiohttp low-level server on proctor's event loop:
about a millisecond to start, nothing to install.
"""

from __future__ import annotations

import asyncio
import fnmatch
import json
import re
import time
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from proctor.errors import SetupError
from proctor.model import ServiceDef
from proctor.services import _net
from proctor.services.base import RecordedRequest, ServiceContext, ServiceHandle

PROBE_HEADER = "X-Proctor-Probe"  # proctor's own readiness probes carry it; never recorded
BODY_LIMIT = 16 * 1024 * 1024  # bytes of a request body kept


def env_name(service: str) -> str:
    """`smtp` -> SMTP_URL, `my-api` -> MY_API_URL."""
    return re.sub(r"[^A-Za-z0-9_]", "_", service).upper() + "_URL"


@dataclass(frozen=True)
class Reply:
    """What an HTTP mock route answers."""
    status: int
    body: bytes
    text: str  # what `response_body` records
    headers: dict[str, str]


def _reply(status: int, response: Any, headers: dict[str, Any] | None) -> Reply:
    hdrs = {str(k): str(v) for k, v in (headers or {}).items()}
    lower = {k.lower() for k in hdrs}
    if response is None:
        text = ""
    elif isinstance(response, str):
        text = response
        if "content-type" not in lower:
            hdrs["Content-Type"] = "text/plain; charset=utf-8"
    else:  # a mapping, list, number or bool: sent as JSON
        text = json.dumps(response)
        if "content-type" not in lower:
            hdrs["Content-Type"] = "application/json"
    return Reply(int(status), text.encode(), text, hdrs)


@dataclass(frozen=True)
class Route:
    """An HTTP mock route: the method and path it answers, and its reply."""
    method: str | None  # None or "*": any method
    path: str  # exact, or a glob when it has `*`; compared with the query when it has `?`
    reply: Reply

    def matches(self, method: str, path: str, path_qs: str) -> bool:
        if self.method not in (None, "*") and self.method != method:
            return False
        target = path_qs if "?" in self.path else path
        if "*" in self.path:
            return fnmatch.fnmatchcase(target, self.path)
        return target == self.path


def parse_config(name: str, config: dict[str, Any]) -> tuple[list[Route], Reply, bool]:
    routes = []
    for i, r in enumerate(config.get("routes") or []):
        if not isinstance(r, dict) or not r.get("path"):
            raise SetupError(f"service {name!r}: routes[{i}] needs a path")
        method = str(r["method"]).upper() if r.get("method") else None
        routes.append(Route(method, str(r["path"]),
                            _reply(r.get("status", 200), r.get("response"), r.get("headers"))))
    default = config.get("default_response", 404)
    if isinstance(default, dict):
        fallback = _reply(default.get("status", 404), default.get("response"),
                          default.get("headers"))
    else:
        fallback = _reply(int(default), None, None)
    return routes, fallback, bool(config.get("record", False))


async def _read_body(request: web.BaseRequest) -> bytes:
    chunks, size = [], 0
    while size < BODY_LIMIT:
        chunk = await request.content.read(65536)
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)[:BODY_LIMIT]


@dataclass
class MockHandle(ServiceHandle):
    """A trial's HTTP mock: its routes, its server, what it recorded."""
    routes: list[Route] = field(default_factory=list, repr=False)
    fallback: Reply | None = field(default=None, repr=False)
    record: bool = False
    recorded: list[RecordedRequest] = field(default_factory=list, repr=False)
    _server: Any = field(default=None, repr=False)  # asyncio.Server
    _web: Any = field(default=None, repr=False)  # aiohttp low-level server

    async def serve(self, request: web.BaseRequest) -> web.Response:
        body = await _read_body(request)
        path, method = request.path, request.method.upper()
        reply = next((r.reply for r in self.routes if r.matches(method, path, request.path_qs)),
                     None)
        if reply is None:
            reply = self.fallback or _reply(404, None, None)
            if not reply.body:
                reply = _reply(reply.status, {"error": f"no route for {method} {path}"},
                               reply.headers)
        if PROBE_HEADER not in request.headers:  # kept even without `record`: see calls()
            headers: dict[str, str] = {}
            for k, v in request.headers.items():
                headers[k] = f"{headers[k]}, {v}" if k in headers else v
            self.recorded.append({
                "method": method, "path": path, "query": request.query_string,
                "headers": headers, "body": body.decode("utf-8", errors="replace"),
                "time": time.time(), "status": reply.status, "response_body": reply.text,
            })
        return web.Response(status=reply.status, body=reply.body, headers=reply.headers)

    def records_requests(self) -> bool:
        return self.record

    async def requests(self) -> list[RecordedRequest]:
        return list(self.recorded) if self.record else []

    async def calls(self) -> list[RecordedRequest]:
        return list(self.recorded)

    async def begin_recording(self) -> None:
        """What happened before the agent started (wait_for probes, setup) is not the
        agent's doing: forget it."""
        self.recorded.clear()

    async def release(self) -> None:
        server, self._server = self._server, None
        if server is None:
            return
        server.close()
        if self._web is not None:
            await self._web.shutdown(timeout=1)  # closes kept-alive connections too
        await server.wait_closed()


class HttpMockService:
    def __init__(self, defn: ServiceDef, ctx: ServiceContext):
        self.name = defn.name
        self.defn = defn
        self.ctx = ctx
        self.routes, self.fallback, self.record = parse_config(defn.name, defn.config)

    async def start(self) -> None:
        """Nothing runs per run: every trial gets its own server."""

    async def provision(self, trial_id: str) -> ServiceHandle:
        sock = _net.listening_socket(80)
        host, port = sock.getsockname()[:2]
        url = f"http://{host}:{port}"
        handle = MockHandle(name=self.name, kind="http_mock", host=host, port=port, url=url,
                            env={env_name(self.name): url}, routes=self.routes,
                            fallback=self.fallback, record=self.record)
        handle._web = web.Server(handle.serve, access_log=None)
        loop = asyncio.get_running_loop()
        try:
            handle._server = await loop.create_server(handle._web, sock=sock)
        except BaseException:
            sock.close()
            raise
        return handle

    async def stop(self) -> None:
        """Trial servers are closed by their handles' release()."""
