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
