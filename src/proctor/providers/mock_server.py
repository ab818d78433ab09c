"""`proctor mock-llm`: a scripted model over the real wire protocols.

  POST /v1/chat/completions   OpenAI Chat Completions (tools, usage)   base_url = URL/v1
  POST /v1/messages           Anthropic Messages (tools, usage)        base_url = URL
  GET  /v1/models             the script as one model (OpenAI shape)
  GET  /_proctor/requests     every request body received so far (tests assert on them)

Answers come from the same script engine as the in-process `mock/…` provider
(proctor.providers.script); faults become real HTTP errors with real headers, so the real
SDK clients and proctor's retries are exercised end to end.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import signal
import sys
import time
from typing import Any

from aiohttp import web

from proctor.errors import UsageError
from proctor.providers.script import Fault, Reply, Script, ScriptState, estimate_tokens, load_script

_ids = itertools.count(1)

_ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 404: "not_found_error",
                429: "rate_limit_error", 529: "overloaded_error"}


def _text(content: Any) -> str:
    """Text of a message's content: a string, or a list of parts/blocks."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for p in content:
            if isinstance(p, dict):
                inner = p.get("text", p.get("content", ""))
                parts.append(inner if isinstance(inner, str) else _text(inner))
        return "\n".join(parts)
    return ""


def _first_user(messages: list[dict[str, Any]]) -> str:
    return next((_text(m.get("content")) for m in messages if m.get("role") == "user"), "")


def _usage(reply: Reply, chars_in: int) -> tuple[int, int]:
    if reply.usage is not None:
        return reply.usage.input, reply.usage.output
    chars_out = len(reply.text) + sum(len(json.dumps(c.arguments)) for c in reply.tool_calls)
    return estimate_tokens(chars_in), estimate_tokens(chars_out)


def _fault_response(f: Fault, anthropic: bool) -> web.Response:
    if f.status == "malformed":
        return web.Response(status=200, text='{"id": "broken", "choices": [', content_type="application/json")
    status = int(f.status)
    headers = {"Retry-After": f"{f.retry_after:g}"} if f.retry_after is not None else {}
    etype = _ERROR_TYPES.get(status, "api_error")
    message = f.message or f"scripted fault {status}"
    body = ({"type": "error", "error": {"type": etype, "message": message}} if anthropic
            else {"error": {"message": message, "type": etype, "code": str(status)}})
    return web.json_response(body, status=status, headers=headers)


class _Handlers:
    def __init__(self, script: Script):
        self.state = ScriptState(script)
        self.received: list[dict[str, Any]] = []

    async def _body(self, request: web.Request, api: str) -> dict[str, Any] | web.Response:
        try:
            body = await request.json()
        except ValueError:
            return web.json_response({"error": {"message": "body is not JSON"}}, status=400)
        if not isinstance(body, dict):
            return web.json_response({"error": {"message": "body is not an object"}}, status=400)
        # The body only: headers carry the caller's API key.
        self.received.append({"api": api, "path": request.path, "time": time.time(), "body": body})
        if body.get("stream"):
            return web.json_response({"error": {"message": "mock-llm does not stream"}}, status=400)
        return body

    async def openai(self, request: web.Request) -> web.Response:
        body = await self._body(request, "openai")
        if isinstance(body, web.Response):
            return body
        messages = body.get("messages") or []
        system = "\n".join(_text(m.get("content")) for m in messages
                           if m.get("role") in ("system", "developer"))
        turn_no = sum(1 for m in messages if m.get("role") == "assistant")
        r = self.state.reply(system, _first_user(messages), turn_no)
        if isinstance(r, Fault):
            return _fault_response(r, anthropic=False)
        if r.delay:
            await asyncio.sleep(r.delay)
        chars_in = sum(len(_text(m.get("content"))) for m in messages)
        tokens_in, tokens_out = _usage(r, chars_in)
        message: dict[str, Any] = {"role": "assistant", "content": r.text or None}
        if r.tool_calls:
            message["tool_calls"] = [
                {"id": c.id, "type": "function",
                 "function": {"name": c.name, "arguments": json.dumps(c.arguments)}}
                for c in r.tool_calls]
        return web.json_response({
            "id": f"chatcmpl-mock-{next(_ids)}", "object": "chat.completion",
            "created": int(time.time()), "model": body.get("model", "mock"),
            "choices": [{"index": 0, "message": message, "logprobs": None,
                         "finish_reason": "tool_calls" if r.tool_calls else "stop"}],
            "usage": {"prompt_tokens": tokens_in, "completion_tokens": tokens_out,
                      "total_tokens": tokens_in + tokens_out},
        })

    async def anthropic(self, request: web.Request) -> web.Response:
        body = await self._body(request, "anthropic")
        if isinstance(body, web.Response):
            return body
        messages = body.get("messages") or []
        system = _text(body.get("system") or "")
        turn_no = sum(1 for m in messages if m.get("role") == "assistant")
        r = self.state.reply(system, _first_user(messages), turn_no)
        if isinstance(r, Fault):
            return _fault_response(r, anthropic=True)
        if r.delay:
            await asyncio.sleep(r.delay)
        chars_in = len(system) + sum(len(_text(m.get("content"))) for m in messages)
        tokens_in, tokens_out = _usage(r, chars_in)
        content: list[dict[str, Any]] = [{"type": "text", "text": r.text}] if r.text else []
        content += [{"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments}
                    for c in r.tool_calls]
        return web.json_response({
            "id": f"msg_mock_{next(_ids)}", "type": "message", "role": "assistant",
            "model": body.get("model", "mock"), "content": content,
            "stop_reason": "tool_use" if r.tool_calls else "end_turn", "stop_sequence": None,
            "usage": {"input_tokens": tokens_in, "output_tokens": tokens_out},
        })

    async def models(self, request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [
            {"id": "mock", "object": "model", "created": 0, "owned_by": "proctor"}]})

    async def requests(self, request: web.Request) -> web.Response:
        return web.json_response(self.received)


def make_app(script: Script) -> web.Application:
    h = _Handlers(script)
    app = web.Application(client_max_size=64 * 1024 * 1024)
    app["handlers"] = h
    app.router.add_post("/v1/chat/completions", h.openai)
    app.router.add_post("/chat/completions", h.openai)  # base_url given without /v1
    app.router.add_post("/v1/messages", h.anthropic)
    app.router.add_get("/v1/models", h.models)
    app.router.add_get("/_proctor/requests", h.requests)
    return app


class MockServer:
    """In-process server on a real socket: `async with MockServer(script) as s: s.url`."""

    def __init__(self, script: Script, host: str = "127.0.0.1", port: int = 0):
        self.app = make_app(script)
        self.host, self.port = host, port
        self.url = ""
        self._runner: web.AppRunner | None = None

    @property
    def received(self) -> list[dict[str, Any]]:
        return self.app["handlers"].received

    async def start(self) -> str:
        self._runner = web.AppRunner(self.app, access_log=None)
        await self._runner.setup()
        try:
            await web.TCPSite(self._runner, self.host, self.port).start()
        except OSError as e:
            await self._runner.cleanup()
            raise UsageError(f"mock-llm: cannot listen on {self.host}:{self.port}: "
                             f"{e.strerror or e}") from None
        host, port = self._runner.addresses[0][:2]
        self.url = f"http://{host}:{port}"
        return self.url

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> MockServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()


async def _serve(script: Script, label: str, host: str, port: int) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):  # before the banner: a caller may stop us at once
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)
    server = MockServer(script, host, port)
    url = await server.start()
    print(f"proctor mock-llm: serving {label} at {url}\n"
          f"  OpenAI-compatible:    OPENAI_BASE_URL={url}/v1\n"
          f"  Anthropic-compatible: ANTHROPIC_BASE_URL={url}\n"
          "Ctrl-C to stop.", flush=True)
    try:
        await stop.wait()
    finally:
        await server.stop()


def serve_main(script: str, host: str = "127.0.0.1", port: int = 0) -> int:
    """Serve until Ctrl-C or SIGTERM; a bad script or a busy port is a UsageError (exit 2)."""
    parsed = load_script(script)
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_serve(parsed, script, host, port))
    sys.stdout.flush()
    return 0
