"""http_mock: real HTTP over loopback with httpx."""

from __future__ import annotations

import json
import socket

import httpx
import pytest

from proctor.model import ServiceDef
from proctor.services import ServiceContext, create
from proctor.services.http_mock import PROBE_HEADER, env_name

CONFIG = {
    "record": True,
    "routes": [
        {"method": "POST", "path": "/api/messages", "status": 202,
         "response": {"id": "msg-1", "status": "queued"}},
        {"method": "GET", "path": "/health", "response": "ok", "headers": {"X-Mock": "yes"}},
        {"method": "*", "path": "/files/*", "status": 201},
    ],
}


async def get(url: str, **kw) -> httpx.Response:
    # The mock serves on this test's event loop: a blocking client would stall it.
    async with httpx.AsyncClient() as client:
        return await client.get(url, **kw)


@pytest.fixture
def ctx(tmp_path) -> ServiceContext:
    return ServiceContext(run_id="mock", base_dir=tmp_path, tmp_dir=tmp_path)


async def mock(ctx, config=CONFIG, name="smtp"):
    svc = create(ServiceDef(name, "http_mock", config), ctx)
    await svc.start()
    return svc, await svc.provision("t.r0")


async def test_routes_answer_as_declared(ctx):
    svc, h = await mock(ctx)
    try:
        async with httpx.AsyncClient(base_url=h.url) as client:
            r = await client.post("/api/messages", json={"to": "finance@co"})
            assert r.status_code == 202
            assert r.json() == {"id": "msg-1", "status": "queued"}
            assert r.headers["content-type"] == "application/json"
            r = await client.get("/health")
            assert (r.status_code, r.text, r.headers["x-mock"]) == (200, "ok", "yes")
            assert r.headers["content-type"].startswith("text/plain")
            assert (await client.delete("/files/a/b")).status_code == 201
            # Method and path must both match; anything else gets default_response (404).
            r = await client.get("/api/messages")
            assert r.status_code == 404 and "no route for GET /api/messages" in r.text
            assert (await client.get("/nothing")).status_code == 404
    finally:
        await h.release()
        await svc.stop()


async def test_default_response_is_configurable(ctx):
    svc, h = await mock(ctx, {"default_response": 503})
    try:
        assert (await get(f"{h.url}/anything")).status_code == 503
    finally:
        await h.release()


async def test_every_request_is_recorded_with_its_answer(ctx):
    svc, h = await mock(ctx)
    try:
        async with httpx.AsyncClient(base_url=h.url) as client:
            await client.post("/api/messages?draft=1&x=y", json={"to": "finance@co"},
                              headers={"X-Trace": "abc"})
            await client.get("/missing")
        reqs = await h.requests()
        assert [(r["method"], r["path"], r["status"]) for r in reqs] == [
            ("POST", "/api/messages", 202), ("GET", "/missing", 404)]
        first = reqs[0]
        assert set(first) == {"method", "path", "query", "headers", "body", "time", "status",
                              "response_body"}
        assert first["query"] == "draft=1&x=y"
        assert json.loads(first["body"]) == {"to": "finance@co"}
        assert first["headers"]["X-Trace"] == "abc"
        assert json.loads(first["response_body"]) == {"id": "msg-1", "status": "queued"}
        assert isinstance(first["time"], float)
    finally:
        await h.release()


async def test_probes_and_requests_before_the_agent_are_not_recorded(ctx):
    svc, h = await mock(ctx)
    try:
        async with httpx.AsyncClient(base_url=h.url) as client:
            await client.get("/health")  # e.g. a wait_for command
            await h.begin_recording()  # the runner: the agent starts now
            await client.get("/health", headers={PROBE_HEADER: "1"})  # proctor's own probe
            await client.get("/health")
        assert len(await h.requests()) == 1
    finally:
        await h.release()


async def test_nothing_is_recorded_without_record_true(ctx):
    svc, h = await mock(ctx, {"routes": CONFIG["routes"]})
    try:
        await get(f"{h.url}/health")
        assert await h.requests() == []
    finally:
        await h.release()


async def test_each_trial_has_its_own_server_and_release_closes_it(ctx):
    svc = create(ServiceDef("my-api", "http_mock", CONFIG), ctx)
    await svc.start()
    a, b = await svc.provision("t.r0"), await svc.provision("t.r1")
    assert a.url != b.url
    assert a.env == {"MY_API_URL": a.url} and not a.url.endswith("/")
    assert a.url == f"http://{a.host}:{a.port}"
    await get(f"{a.url}/health")
    assert len(await a.requests()) == 1 and await b.requests() == []
    await a.release()
    await a.release()  # idempotent
    with pytest.raises(httpx.ConnectError):
        await get(f"{a.url}/health")
    await b.release()
    with socket.socket() as s:  # the address is free again
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((a.host, a.port))


def test_env_names():
    assert env_name("smtp") == "SMTP_URL"
    assert env_name("my-api") == "MY_API_URL"
    assert env_name("Billing_v2") == "BILLING_V2_URL"
