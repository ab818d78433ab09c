"""An `image:` service container has no network at all: the trial reaches it through proctor
(the honest twin), and it reaches nothing: not the host's services (a Docker bridge, even an
internal one, would let it connect to every one listening on all addresses), not another
trial's service, not the outside."""

from __future__ import annotations

import asyncio
import http.server
import subprocess
import threading
import time
import urllib.request

import pytest

from proctor.model import ServiceDef
from proctor.services.base import ServiceContext
from proctor.services.container import ContainerService
from tests.helpers.docker import containers, networks


def _in(container: str, command: str) -> subprocess.CompletedProcess:
    return subprocess.run(["docker", "exec", container, "sh", "-c", command],
                          capture_output=True, text=True, timeout=60)


def _get(url: str, deadline: float) -> bytes:
    """The page, once the service listens (as a `wait_for` would wait for it)."""
    while True:
        try:
            with urllib.request.urlopen(url, timeout=10) as page:
                return page.read()
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


@pytest.fixture
def host_server():
    """A web server on every address of this machine (0.0.0.0): (port, hits)."""
    hits: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            hits.append(self.path)
            self.send_response(200)
            self.send_header("Content-Length", "4")
            self.end_headers()
            self.wfile.write(b"HOST")

        def log_message(self, *a):
            pass

    server = http.server.ThreadingHTTPServer(("0.0.0.0", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1], hits
    server.shutdown()


def _host_addresses() -> list[str]:
    """This machine's own non-loopback IPv4 addresses (eth0, docker0, ...)."""
    out = subprocess.run(["ip", "-4", "-o", "addr", "show"], capture_output=True, text=True).stdout
    return [f.split()[3].split("/")[0] for f in out.splitlines() if " lo " not in f]


async def test_a_service_reaches_neither_the_host_nor_its_neighbour(web_image, tmp_path,
                                                                     host_server):
    port, hits = host_server
    run_id = "svc-net-test"
    svc = ContainerService(ServiceDef("web", "container", {"image": web_image}),
                           ServiceContext(run_id, tmp_path, tmp_path))
    await svc.start()
    a = await svc.provision("a.r0")
    b = await svc.provision("b.r0")
    try:
        for h in (a, b):
            # the honest twin: each trial's endpoint reaches its own service
            # (urllib in a thread: the endpoint's pipe runs on this event loop)
            page = await asyncio.to_thread(_get, h.url, time.monotonic() + 60)
            assert b"hello-from-web" in page
        ca = a.credentials["container"]
        assert _in(ca, "curl -sf -m 3 http://127.0.0.1:8000/ >/dev/null").returncode == 0
        assert _in(ca, "ip -4 route").stdout == ""  # no route anywhere: only its own loopback
        assert [line.split()[1] for line in _in(ca, "ip -o link").stdout.splitlines()] == ["lo:"]
        # The host, by each of its own addresses, and the neighbour, by its endpoint.
        for address in _host_addresses():
            probe = _in(ca, f"curl -s -m 3 http://{address}:{port}/from-service")
            assert probe.returncode != 0 and "HOST" not in probe.stdout, address
        # b's endpoint address is a loopback address: inside a it is a's own loopback.
        assert _in(b.credentials["container"], "echo b-only > /srv/who.txt").returncode == 0
        assert b"b-only" in await asyncio.to_thread(_get, f"{b.url}/who.txt", 0)
        assert "b-only" not in _in(ca, f"curl -s -m 3 {b.url}/who.txt").stdout
        assert hits == []
    finally:
        await a.release()
        await b.release()
    assert not containers(run_id) and not networks(run_id)
