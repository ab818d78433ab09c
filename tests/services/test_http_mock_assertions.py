"""The `http_mock_assertions` check: every field, filter and comparison, passing and failing,
against a real recording mock fed over HTTP."""

from __future__ import annotations

import httpx
import pydantic
import pytest

from proctor.model import ServiceDef
from proctor.services import ServiceContext, ServiceHandle, create
from tests.helpers.services import run_check


@pytest.fixture
async def smtp(tmp_path):
    ctx = ServiceContext(run_id="assert", base_dir=tmp_path, tmp_dir=tmp_path)
    svc = create(ServiceDef("smtp", "http_mock", {
        "record": True,
        "routes": [{"method": "POST", "path": "/api/messages", "status": 202,
                    "response": {"id": "m"}},
                   {"method": "POST", "path": "/api/form"}],
    }), ctx)
    h = await svc.provision("t.r0")
    async with httpx.AsyncClient(base_url=h.url) as c:
        await c.post("/api/messages", json={"to": "finance@co", "subject": "Renewal",
                                            "body": "Your renewal is due"},
                     headers={"X-Tenant": "acme"})
        await c.post("/api/messages", json={"to": ["ops@co", "cfo@co"], "subject": "Other",
                                            "count": 2})
        await c.get("/api/messages?limit=5")
        await c.post("/api/form", data={"to": "finance@co", "note": "hi"})
    yield h
    await h.release()


async def holds(smtp, tmp_path, **assertion) -> tuple[bool, str]:
    out = await run_check("http_mock_assertions", {"smtp": smtp}, tmp_path, service="smtp",
                          assertions=[assertion])
    assert out.error is None, out.error
    return out.passed, out.message


CASES = [
    # request_count and every filter
    ({"field": "request_count", "equals": 4}, True),
    ({"field": "request_count", "equals": 3}, False),
    ({"field": "request_count", "equals": "4"}, True),
    ({"field": "request_count", "filters": {"method": "POST"}, "equals": 3}, True),
    ({"field": "request_count", "filters": {"method": "post"}, "equals": 3}, True),
    ({"field": "request_count", "filters": {"path": "/api/messages"}, "equals": 3}, True),
    ({"field": "request_count", "filters": {"path": "/api/messages?limit=5"}, "equals": 1}, True),
    ({"field": "request_count", "filters": {"path": "/api/*"}, "equals": 4}, True),
    ({"field": "request_count", "filters": {"method": "POST", "path": "/api/messages"},
      "equals": 2}, True),
    ({"field": "request_count", "filters": {"headers": {"x-tenant": "acme"}}, "equals": 1}, True),
    ({"field": "request_count", "filters": {"headers": {"X-Tenant": "other"}}, "equals": 0}, True),
    ({"field": "request_count", "filters": {"x-tenant": "acme"}, "equals": 1}, True),  # a header
    ({"field": "request_count", "filters": {"to": "finance@co"}, "equals": 2}, True),  # JSON + form
    ({"field": "request_count", "filters": {"to": "cfo@co"}, "equals": 1}, True),  # in a list
    ({"field": "request_count", "filters": {"count": 2}, "equals": 1}, True),
    ({"field": "request_count", "filters": {"count": "2"}, "equals": 1}, True),
    ({"field": "request_count", "filters": {"to": "nobody@co"}, "equals": 1}, False),
    # min / max
    ({"field": "request_count", "min": 2}, True),
    ({"field": "request_count", "min": 5}, False),
    ({"field": "request_count", "max": 4}, True),
    ({"field": "request_count", "max": 1}, False),
    ({"field": "request_count", "min": 1, "max": 10}, True),
    # last_request
    ({"field": "last_request.body", "filters": {"path": "/api/messages", "method": "POST"},
      "contains": "Other"}, True),
    ({"field": "last_request.body", "filters": {"path": "/api/messages", "method": "POST"},
      "contains": "Renewal"}, False),
    ({"field": "last_request.body", "filters": {"method": "POST", "path": "/api/messages"},
      "equals": {"to": ["ops@co", "cfo@co"], "subject": "Other", "count": 2}}, True),
    ({"field": "last_request.body", "filters": {"method": "POST", "path": "/api/messages"},
      "contains": {"subject": "Other"}}, True),
    ({"field": "last_request.body", "filters": {"method": "POST", "path": "/api/messages"},
      "contains": {"subject": "Renewal"}}, False),
    ({"field": "last_request.body", "equals": "to=finance%40co&note=hi"}, True),
    ({"field": "last_request.body", "filters": {"path": "/nope"}, "contains": "x"}, False),
    ({"field": "last_request.headers", "contains": {"content-type": "x-www-form-urlencoded"}},
     True),
    ({"field": "last_request.headers", "contains": "Content-Type: application/x-www"}, True),
    ({"field": "last_request.headers", "contains": {"x-tenant": "acme"}}, False),
    # requests[N]
    ({"field": "requests[0]", "equals": {"method": "POST", "path": "/api/messages",
                                         "status": 202}}, True),
    ({"field": "requests[0]", "equals": {"method": "GET"}}, False),
    ({"field": "requests[0]", "contains": "finance@co"}, True),
    ({"field": "requests[0]", "contains": {"headers": {"x-tenant": "acme"}}}, True),
    ({"field": "requests[2]", "contains": {"query": "limit=5"}}, True),
    ({"field": "requests[1].body", "contains": "ops@co"}, True),
    ({"field": "requests[1].body", "contains": "finance@co"}, False),
    ({"field": "requests[0].body", "contains": {"to": "finance@co"}}, True),
    ({"field": "requests[0].headers", "contains": {"X-TENANT": "acme"}}, True),
    ({"field": "requests[0].headers", "contains": "x-tenant"}, True),
    ({"field": "requests[1].headers", "contains": "x-tenant"}, False),
    ({"field": "requests[0]", "filters": {"to": "cfo@co"}, "contains": "Other"}, True),
    ({"field": "requests[9]", "contains": "x"}, False),
]


@pytest.mark.parametrize(("assertion", "passes"), CASES)
async def test_fields_filters_and_comparisons(smtp, tmp_path, assertion, passes):
    ok, message = await holds(smtp, tmp_path, **assertion)
    assert ok is passes, message


async def test_failure_messages_quote_what_was_observed(smtp, tmp_path):
    ok, message = await holds(smtp, tmp_path, field="request_count",
                              filters={"method": "POST", "path": "/api/messages"}, equals=1)
    assert not ok
    assert "FAILED: request_count where method=POST, path=/api/messages: expected 1, got 2" in message
    assert ("the mock recorded 4 request(s): POST /api/messages, POST /api/messages, "
            "GET /api/messages, POST /api/form") in message
    ok, message = await holds(smtp, tmp_path, field="requests[9]", contains="x")
    assert "no request [9] (only 4) matched" in message
    ok, message = await holds(smtp, tmp_path, field="last_request.body",
                              filters={"to": "nobody@co"}, contains="x")
    assert "no request matched where to=nobody@co" in message


async def test_every_assertion_must_hold(smtp, tmp_path):
    out = await run_check("http_mock_assertions", {"smtp": smtp}, tmp_path, service="smtp",
                          assertions=[{"field": "request_count", "equals": 4},
                                      {"field": "last_request.body", "contains": "nope"}])
    assert not out.passed and out.final_score() == 0.0
    assert out.message.startswith("ok: request_count: got 4\nFAILED: last_request.body:")


async def test_observed_values_are_cut_at_2000_characters(tmp_path):
    ctx = ServiceContext(run_id="cut", base_dir=tmp_path, tmp_dir=tmp_path)
    h = await create(ServiceDef("smtp", "http_mock", {"record": True}), ctx).provision("t")
    try:
        async with httpx.AsyncClient() as c:
            await c.post(f"{h.url}/x", content="y" * 5000)
        ok, message = await holds(h, tmp_path, field="last_request.body", contains="z")
        assert not ok and "[3000 more characters]" in message and len(message) < 2300
    finally:
        await h.release()


async def test_spec_problems_make_the_check_error(smtp, tmp_path):
    out = await run_check("http_mock_assertions", {"smtp": smtp}, tmp_path, service="smtp",
                          assertions=[{"field": "request_count", "filters": {"headers": "x"},
                                       "equals": 1}])
    assert "filter `headers` must be a mapping" in out.error
    out = await run_check("http_mock_assertions", {"smtp": smtp}, tmp_path, service="mail",
                          assertions=[{"field": "request_count", "equals": 1}])
    assert out.error == "no service named 'mail' in this trial"
    db = ServiceHandle(name="db", kind="postgres", host="127.0.0.1", port=1, url="")
    out = await run_check("http_mock_assertions", {"db": db}, tmp_path, service="db",
                          assertions=[{"field": "request_count", "equals": 1}])
    assert "not an http_mock" in out.error
    with pytest.raises(pydantic.ValidationError, match="unknown field"):
        await run_check("http_mock_assertions", {"smtp": smtp}, tmp_path, service="smtp",
                        assertions=[{"field": "response_count", "equals": 1}])


async def test_a_mock_that_does_not_record_makes_the_check_error(tmp_path):
    ctx = ServiceContext(run_id="norec", base_dir=tmp_path, tmp_dir=tmp_path)
    h = await create(ServiceDef("smtp", "http_mock", {}), ctx).provision("t")
    try:
        out = await run_check("http_mock_assertions", {"smtp": h}, tmp_path, service="smtp",
                              assertions=[{"field": "request_count", "equals": 0}])
        assert "set `record: true`" in out.error
    finally:
        await h.release()
