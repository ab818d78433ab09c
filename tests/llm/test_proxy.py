"""The recording model proxy: real SDK clients -> proxy -> the real mock-llm subprocess."""

from __future__ import annotations

import socket

import aiohttp
import anthropic
import openai
import pytest
from aiohttp import web

from proctor.providers.proxy import ModelProxy


async def test_streams_pass_through_and_every_call_is_recorded(wire_server):
    events = []
    async with ModelProxy(wire_server.url, api_key="real-key", on_call=events.append) as p:
        oai = openai.AsyncOpenAI(base_url=p.url + "/v1", api_key="dummy", max_retries=0)
        ant = anthropic.AsyncAnthropic(base_url=p.url, api_key="dummy", max_retries=0)
        whole = await oai.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "SDK-STREAM proxy"}])
        text = ""
        async for chunk in await oai.chat.completions.create(
                model="m", stream=True, stream_options={"include_usage": True},
                messages=[{"role": "user", "content": "SDK-STREAM proxy"}]):
            text += "".join(c.delta.content or "" for c in chunk.choices)
        async with ant.messages.stream(model="m", max_tokens=50, messages=[
                {"role": "user", "content": "SDK-STREAM proxy"}]) as stream:
            final = await stream.get_final_message()
        await ant.messages.count_tokens(model="m", messages=[{"role": "user", "content": "hi"}])
    assert text == whole.choices[0].message.content == "Listing the files, then done."
    assert final.content[0].text == text
    assert (p.turns, p.tokens_in, p.tokens_out) == (3, 3 * 42, 3 * 7)  # count_tokens is no turn
    assert [e["turn"] for e in events] == [1, 2, 3] and not p.errors
    assert all(e["type"] == "model_call" and e["usage"] == {"input": 42, "output": 7}
               for e in events)
    assert events[0]["request"]["messages"][0]["content"] == "SDK-STREAM proxy"


async def test_the_key_is_injected_by_the_proxy():
    seen = []

    async def upstream(request: web.Request) -> web.Response:
        seen.append((request.headers.get("Authorization"), request.headers.get("x-api-key")))
        return web.json_response({"usage": {"input_tokens": 1, "output_tokens": 2}})

    app = web.Application()
    app.router.add_post("/v1/messages", upstream)
    app.router.add_post("/v1/chat/completions", upstream)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    host, port = runner.addresses[0][:2]
    try:
        async with (ModelProxy(f"http://{host}:{port}", api_key="sk-real") as p,
                    aiohttp.ClientSession() as s):
            await s.post(p.url + "/v1/messages", json={},
                         headers={"x-api-key": "dummy", "anthropic-version": "2023-06-01"})
            await s.post(p.url + "/v1/chat/completions", json={},
                         headers={"Authorization": "Bearer dummy"})
    finally:
        await runner.cleanup()
    assert seen == [(None, "sk-real"), ("Bearer sk-real", None)]
    assert (p.tokens_in, p.tokens_out) == (2, 4)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def test_a_broken_endpoint_is_an_error_with_its_cause(wire_server):
    async with ModelProxy(f"http://127.0.0.1:{_free_port()}") as p:
        oai = openai.AsyncOpenAI(base_url=p.url + "/v1", api_key="k", max_retries=0)
        # 400, not 5xx: an agent would retry a 5xx for minutes
        with pytest.raises(openai.BadRequestError, match="proctor model proxy"):
            await oai.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
    assert len(p.errors) == 1 and "127.0.0.1" in p.errors[0] and p.turns == 0
    async with ModelProxy(wire_server.url) as p:
        ant = anthropic.AsyncAnthropic(base_url=p.url, api_key="k", max_retries=0)
        with pytest.raises(anthropic.BadRequestError):
            await ant.messages.create(model="m", max_tokens=5,
                                      messages=[{"role": "user", "content": "NO-SUCH-CONVERSATION"}])
    assert len(p.errors) == 1 and "HTTP 400" in p.errors[0]


async def test_a_call_in_flight_at_the_deadline_is_cut_not_waited_for():
    """Hostile: the upstream takes ten minutes. The proxy answers 400 at the task's
    deadline and records the call as cut, not as an endpoint failure (running out of time
    is the agent's); stopping does not wait for it either. The honest twin, asked in time
    of an upstream that answers, passes through."""
    import asyncio
    import time

    async def slow(request: web.Request) -> web.Response:
        if (await request.json()).get("slow"):
            await asyncio.sleep(600)
        return web.json_response({"usage": {"input_tokens": 1, "output_tokens": 2}})

    app = web.Application()
    app.router.add_post("/v1/messages", slow)
    runner = web.AppRunner(app, shutdown_timeout=0.1)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    host, port = runner.addresses[0][:2]
    events = []
    try:
        proxy = ModelProxy(f"http://{host}:{port}", on_call=events.append,
                           deadline=time.monotonic() + 1.0)
        async with proxy as p, aiohttp.ClientSession() as s:
            async with s.post(p.url + "/v1/messages", json={}) as honest:
                assert honest.status == 200
            async with s.post(p.url + "/v1/messages", json={"slow": True}) as cut:
                assert cut.status == 400 and "time is up" in await cut.text()
        assert not p.errors and not p.last_failed and p.turns == 1
        assert events[-1]["error"] == "cut at the task's timeout"
    finally:
        await runner.cleanup()


def test_tool_calls_are_read_from_every_api_streamed_or_not():
    """Id, name and arguments of each tool call (`tool_used` counts them by name)."""
    import json

    from proctor.providers.base import ToolCall
    from proctor.providers.proxy import tool_calls_from_body

    def sse(*events: dict) -> bytes:
        return "".join(f"data: {json.dumps(e)}\n\n" for e in events).encode()

    want = [ToolCall("c1", "Bash", {"command": "ls -l"})]
    anthropic_json = {"content": [{"type": "text", "text": "hi"},
                                  {"type": "tool_use", "id": "c1", "name": "Bash",
                                   "input": {"command": "ls -l"}}]}
    chat_json = {"choices": [{"message": {"tool_calls": [
        {"id": "c1", "function": {"name": "Bash", "arguments": '{"command": "ls -l"}'}}]}}]}
    responses_json = {"output": [{"type": "function_call", "call_id": "c1", "name": "Bash",
                                  "arguments": '{"command": "ls -l"}'}]}
    for body in (anthropic_json, chat_json, responses_json):
        assert tool_calls_from_body(json.dumps(body).encode()) == want
    assert tool_calls_from_body(sse(
        {"type": "content_block_start", "index": 1,
         "content_block": {"type": "tool_use", "id": "c1", "name": "Bash", "input": {}}},
        {"type": "content_block_delta", "index": 1,
         "delta": {"type": "input_json_delta", "partial_json": '{"command": '}},
        {"type": "content_block_delta", "index": 1,
         "delta": {"type": "input_json_delta", "partial_json": '"ls -l"}'}})) == want
    assert tool_calls_from_body(sse(
        {"choices": [{"delta": {"tool_calls": [{"index": 0, "id": "c1", "function": {
            "name": "Bash", "arguments": '{"command"'}}]}}]},
        {"choices": [{"delta": {"tool_calls": [{"index": 0, "function": {
            "arguments": ': "ls -l"}'}}]}}]})) == want
    assert tool_calls_from_body(sse(
        {"type": "response.output_item.done", "item": {
            "type": "function_call", "call_id": "c1", "name": "Bash",
            "arguments": '{"command": "ls -l"}'}})) == want
    assert tool_calls_from_body(b"not json") == []


async def _calls_through_proxies(limit: tuple[str, int, bool] | None) -> tuple[dict, dict]:
    """Six trials' proxies, each with an agent (the real Anthropic SDK, retrying as Claude
    Code does) making three calls, against a provider refusing calls above 2 in flight.
    Returns what the provider saw and what the run's limiter did."""
    import asyncio

    from proctor.providers import limiter
    from proctor.providers.mock_server import HANDLERS, MockServer
    from proctor.providers.script import Script

    script = Script.model_validate({"rate_limit": {"concurrent": 2, "retry_after": 0.3},
                                    "turns": [{"say": "ok", "delay": 0.2}]})
    run_limiter = limiter.LocalLimiter()
    previous = limiter.install(run_limiter)
    try:
        async with MockServer(script) as server:
            async def trial() -> None:
                async with ModelProxy(server.url, api_key="k", limit=limit) as p:
                    client = anthropic.AsyncAnthropic(base_url=p.url, api_key="x", max_retries=8)
                    for _ in range(3):
                        answer = await client.messages.create(
                            model="m", max_tokens=10, messages=[{"role": "user", "content": "hi"}])
                        assert answer.content[0].text == "ok"

            await asyncio.gather(*(trial() for _ in range(6)))
            seen = dict(server.app[HANDLERS].load)
    finally:
        limiter.install(previous)
    return seen, run_limiter.stats()


@pytest.mark.slow
async def test_calls_through_the_proxy_share_the_runs_adaptive_limit():
    seen, stats = await _calls_through_proxies(("anthropic@up", 8, True))
    assert seen["served"] == 18
    assert stats["anthropic@up"]["refused"] == seen["refused"] > 0
    assert seen["refused"] <= 0.25 * (seen["served"] + seen["refused"]), seen
    unlimited, none = await _calls_through_proxies(None)  # without it: every agent for itself
    assert none == {} and unlimited["refused"] > 2 * seen["refused"], (unlimited, seen)
