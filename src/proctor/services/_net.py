"""Loopback endpoints for services.

Linux routes all of 127.0.0.0/8 to the loopback interface, so every server can have a
loopback address of its own and keep its usual port (`db:5432`, `smtp:80`): two runs at once
never share an address, and a host alias needs no port rewriting. Where that is not possible
(another OS, an odd network stack) we fall back to 127.0.0.1 and a free port.
"""

from __future__ import annotations

import contextlib
import functools
import random
import socket

FALLBACK_HOST = "127.0.0.1"


@functools.cache
def private_loopback_ok() -> bool:
    """Can we listen on, and connect to, a 127.x.y.z address other than 127.0.0.1?"""
    host = random_loopback()
    try:
        with socket.socket() as srv:
            srv.bind((host, 0))
            srv.listen(1)
            with socket.create_connection(srv.getsockname(), timeout=1):
                pass
    except OSError:
        return False
    return True


def random_loopback() -> str:
    # Stay clear of 127.0.0.x and 127.0.1.1 (the hostname on Debian) and of .0/.255.
    return f"127.{random.randint(100, 254)}.{random.randint(0, 255)}.{random.randint(1, 254)}"


def can_listen(host: str, port: int) -> bool:
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def free_port(host: str = FALLBACK_HOST) -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        port: int = s.getsockname()[1]
        return port


def endpoint(usual_port: int) -> tuple[str, int]:
    """A (host, port) to start a server on: a fresh loopback address with the service's
    usual port when possible, else 127.0.0.1 with a free port. The caller retries with
    another endpoint if the server then fails to bind (another run may have raced us)."""
    if private_loopback_ok():
        for _ in range(20):
            host = random_loopback()
            if can_listen(host, usual_port):
                return host, usual_port
    return FALLBACK_HOST, free_port()


def listening_socket(usual_port: int) -> socket.socket:
    """A bound, listening socket for an in-process server (http_mock): own address and usual
    port if we may bind it (port 80 needs root), else own address and any port."""
    hosts = [random_loopback() for _ in range(5)] if private_loopback_ok() else []
    for host in hosts:
        for port in (usual_port, 0):
            s = socket.socket()
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                s.bind((host, port))
            except OSError:
                s.close()
                continue
            s.listen(128)
            s.setblocking(False)
            return s
    s = socket.socket()
    with contextlib.suppress(OSError):
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((FALLBACK_HOST, 0))
    s.listen(128)
    s.setblocking(False)
    return s
