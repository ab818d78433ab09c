"""The container engine's HTTP API over its unix socket, at its plainest: where the socket is
(as the `docker` client would find it), a request's bytes, an answer's status and body, and
one blocking call. Standard library only: `headstart` uses it before the rest of proctor is
imported, `dockercli` for everything it asks the engine in-process."""

from __future__ import annotations

import json
import os

SOCKET = "/var/run/docker.sock"  # the engine's API, where the client finds it by default


def api_socket() -> str | None:
    """The engine's unix socket if `docker` here would talk to it: DOCKER_HOST unset or
    unix://, no context chosen (DOCKER_CONTEXT, the client config's currentContext); None
    when the client decides."""
    host = os.environ.get("DOCKER_HOST", "")
    if os.environ.get("DOCKER_CONTEXT") or (host and not host.startswith("unix://")):
        return None
    config = os.path.join(os.environ.get("DOCKER_CONFIG") or
                          os.path.expanduser("~/.docker"), "config.json")
    try:
        with open(config, "rb") as f:
            if json.load(f).get("currentContext") not in (None, "", "default"):
                return None
    except (OSError, ValueError, AttributeError):
        pass
    path = host[len("unix://"):] if host else SOCKET
    return path if os.path.exists(path) else None


def request(method: str, path: str, body: object = None) -> bytes:
    """One HTTP/1.1 request, the connection closed after it; `body` sent as JSON."""
    data = b"" if body is None else json.dumps(body).encode()
    kind = "Content-Type: application/json\r\n" if data else ""
    return (f"{method} {path} HTTP/1.1\r\nHost: docker\r\nConnection: close\r\n{kind}"
            f"Content-Length: {len(data)}\r\n\r\n").encode() + data


def answer(raw: bytes) -> tuple[int, bytes] | None:
    """(status, body) of a whole HTTP/1.1 answer; None when it is not one."""
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    try:
        status = int(lines[0].split()[1])
    except (IndexError, ValueError):
        return None
    if any(ln.lower().replace(" ", "") == "transfer-encoding:chunked" for ln in lines[1:]):
        body = _unchunked(body)
    return status, body


def call(method: str, path: str, timeout: float, body: object = None
         ) -> tuple[int, bytes] | None:
    """(status, body) of one request to `api_socket()`, blocking; None when there is no
    socket, it does not answer in `timeout`, or the answer is not HTTP."""
    import socket

    where = api_socket()
    if where is None:
        return None
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(timeout)
            sock.connect(where)
            sock.sendall(request(method, path, body))
            parts = []
            while chunk := sock.recv(65536):
                parts.append(chunk)
    except OSError:  # socket.timeout included
        return None
    return answer(b"".join(parts))


def _unchunked(body: bytes) -> bytes:
    out: list[bytes] = []
    at = 0
    while True:
        end = body.find(b"\r\n", at)
        size = int(body[at:end].split(b";")[0] or b"0", 16) if end >= 0 else 0
        if size == 0:
            return b"".join(out)
        out.append(body[end + 2:end + 2 + size])
        at = end + 2 + size + 2
