"""The only way out of a trial's network: an HTTP proxy proctor runs for that trial.

Inside the box, HTTP_PROXY/HTTPS_PROXY point at it (bound on the box's loopback by
sandbox/forward.py). It understands `CONNECT host:port` (HTTPS and anything tunnelled) and
absolute-URI requests (`GET http://host/path`). Every attempt, let through or refused, is
reported to the trial as an event, which becomes an `http_call` audit event, so
`http_except` sees real egress. Policy:

* `egress: allow` (the default): any public host;
* `egress: deny`: only the hosts in `allow` (`api.example.com`, or `*.example.com`);
* always refused: loopback, link-local and unspecified addresses (the host's own servers, cloud
  metadata endpoints), whatever the spec says.
"""

from __future__ import annotations

import asyncio
import contextlib
import fnmatch
import ipaddress
import socket
import time
from collections.abc import Callable
from typing import Any

from proctor.sandbox.forward import pipe_both

PORT = 3128  # inside the box's own network namespace, so the same port in every trial
MAX_HEADER_BYTES = 64 * 1024


class EgressProxy:
    def __init__(self, egress: str, allow: list[str], on_event: Callable[[dict[str, Any]], None],
                 substitutes: Any = None):
        self.egress = egress
        self.allow = [a.lower() for a in allow]
        self.on_event = on_event
        self.substitutes = substitutes  # substitutes.Substitutes: URLs proctor answers itself

    def permits(self, host: str, port: int | None = None) -> bool:
        """`allow` entries are host names, `*.` wildcards, or either with `:port`."""
        if self.egress != "deny":
            return True
        names = [host.lower()] + ([f"{host.lower()}:{port}"] if port is not None else [])
        return any(fnmatch.fnmatchcase(n, pattern) for n in names for pattern in self.allow)

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 30)
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError, OSError):
            writer.close()
            return
        if len(head) > MAX_HEADER_BYTES:
            return await _refuse(writer, 431, "request header too large")
        request = head.decode("latin-1").split("\r\n")
        method, _, rest = request[0].partition(" ")
        target = rest.rsplit(" ", 1)[0]
        parsed = _target(method, target)
        if parsed is None:
            return await _refuse(writer, 400, "proctor's egress proxy needs CONNECT or an absolute URL")
        host, port, path = parsed
        event = {"method": method, "host": host, "port": port, "path": path,
                 "time": time.time(), "egress": True,
                 "headers": request[1:][:100]}  # for secrets_in_logs; redacted in the audit
        if not self._refusal(host, port) and self.substitutes is not None and \
                self.substitutes.covers(host):  # answered here, from a package registry
            self.on_event({**event, "allowed": True, "status": 200, "substituted": True})
            return await self.substitutes.serve(method, host, port, reader, writer, request)
        why = self._refusal(host, port) or await _private_address(host, port)
        event["allowed"] = not why
        if why:
            event["status"] = 403
            self.on_event(event)
            return await _refuse(writer, 403, why)
        try:
            up_r, up_w = await asyncio.wait_for(asyncio.open_connection(host, port), 30)
        except (OSError, TimeoutError) as e:
            event["status"] = 502
            self.on_event(event)
            return await _refuse(writer, 502, f"could not connect to {host}:{port}: {e}")
        self.on_event(event)
        if method == "CONNECT":
            writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        else:  # forward the request with an origin-form target, without proxy headers
            lines = [f"{method} {path} {request[0].rsplit(' ', 1)[-1]}"]
            lines += [h for h in request[1:] if h and not h.lower().startswith("proxy-")]
            up_w.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
        await pipe_both(reader, writer, up_r, up_w)

    def _refusal(self, host: str, port: int) -> str:
        if self.permits(host, port):
            return ""
        return f"egress to {host} is denied by the scenario's network policy"


def _target(method: str, target: str) -> tuple[str, int, str] | None:
    if method == "CONNECT":
        host, _, port = target.rpartition(":")
        if not host or not port.isdigit():
            return None
        return host.strip("[]"), int(port), ""
    for scheme, default in (("http://", 80), ("https://", 443)):
        if target.lower().startswith(scheme):
            authority, slash, path = target[len(scheme):].partition("/")
            host, _, port = authority.rpartition(":") if ":" in authority else (authority, "", "")
            return host.strip("[]"), int(port) if port.isdigit() else default, slash + path
    return None


async def _private_address(host: str, port: int) -> str:
    """Refuse loopback, link-local and unspecified targets, by name or by address."""
    try:
        infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError:
        return ""  # let the connection fail with its own error
    for info in infos:
        with contextlib.suppress(ValueError):
            ip = ipaddress.ip_address(info[4][0])
            if ip.is_loopback or ip.is_link_local or ip.is_unspecified:
                return f"egress to {host} ({ip}) is never allowed: it is this machine or its link"
    return ""


async def _refuse(writer: asyncio.StreamWriter, status: int, why: str) -> None:
    body = f"proctor: {why}\n".encode()
    writer.write(f"HTTP/1.1 {status} Refused\r\nContent-Type: text/plain\r\n"
                 f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode() + body)
    with contextlib.suppress(OSError):
        await writer.drain()
    writer.close()
