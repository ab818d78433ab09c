"""An `image:` service container is on a network of its own: the host reaches it, nothing
else does, and it reaches nothing (not a neighbouring trial's service, not the outside)."""

from __future__ import annotations

import asyncio
import subprocess
import urllib.request

from proctor.model import ServiceDef
from proctor.services.base import ServiceContext
from proctor.services.container import ContainerService
from tests.docker.conftest import containers


def _in(container: str, command: str) -> int:
    return subprocess.run(["docker", "exec", container, "sh", "-c", command],
                          capture_output=True, timeout=60).returncode


def _get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=10) as page:
        return page.read()


def _networks(run_id: str) -> list[str]:
    done = subprocess.run(["docker", "network", "ls", "-q", "--filter", f"label=proctor.run={run_id}"],
                          capture_output=True, text=True, check=True)
    return done.stdout.split()


async def test_a_service_reaches_neither_its_neighbour_nor_the_outside(web_image, tmp_path):
    run_id = "svc-net-test"
    svc = ContainerService(ServiceDef("web", "container", {"image": web_image}),
                           ServiceContext(run_id, tmp_path, tmp_path))
    await svc.start()
    a = await svc.provision("a.r0")
    b = await svc.provision("b.r0")
    try:
        ips = {}
        for h in (a, b):
            # the honest twin: each trial's endpoint reaches its own service
            # (urllib in a thread: the endpoint's pipe runs on this event loop)
            assert b"hello-from-web" in await asyncio.to_thread(_get, h.url)
            ips[h.credentials["container"]] = subprocess.run(
                ["docker", "inspect", "-f", "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}",
                 h.credentials["container"]], capture_output=True, text=True).stdout.strip()
        assert a.credentials["network"] != b.credentials["network"]
        ca, cb = a.credentials["container"], b.credentials["container"]
        assert _in(ca, f"curl -sf -m 3 http://{ips[ca]}:8000/ >/dev/null") == 0  # itself: yes
        assert _in(ca, f"curl -sf -m 3 http://{ips[cb]}:8000/ >/dev/null") != 0  # the neighbour
        assert _in(ca, "curl -sf -m 3 http://172.17.0.1/ >/dev/null") != 0  # the default bridge
        assert _in(ca, "curl -sf -m 3 http://1.1.1.1/ >/dev/null") != 0  # the outside
        assert len(_networks(run_id)) == 2
    finally:
        await a.release()
        await b.release()
    assert not containers(run_id) and not _networks(run_id)
