"""`proctor mock-llm`: a scripted model over the real wire protocols.

  POST /v1/chat/completions        OpenAI Chat Completions (tools, usage; `stream`)  base_url = URL/v1
  POST /v1/messages                Anthropic Messages (tools, usage; `stream`)       base_url = URL
  POST /v1/messages/count_tokens   Anthropic token count
  POST /v1/responses               OpenAI Responses API (function calls; `stream`)  base_url = URL/v1
  GET  /v1/models                  the script as one model (Anthropic's shape when the
                                   request carries `anthropic-version`, else OpenAI's)
  GET  /_proctor/requests          every request body received so far (tests assert on them)
  GET  /_proctor/load               with the script's `rate_limit`: calls served, refused, and
                                   the most in flight at once; always: how many TCP
                                   connections the model calls came on

Streams carry the same text, tool calls and usage as the answer would have unstreamed: Chat
Completions deltas (a usage chunk when `stream_options.include_usage`), Messages events
(`message_start` … `message_stop`, text and `input_json_delta` blocks).

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
from aiohttp.typedefs import Handler

from proctor.errors import UsageError
from proctor.providers.script import (
    Fault,
    RateLimitSpec,
    Reply,
    RunAs,
    Script,
    ScriptState,
    estimate_tokens,
    load_script,
)
from proctor.providers.script_engine import BuiltinScript

_ids = itertools.count(1)
SIDE_ANSWER = "ok"  # what calls for another model than the scripted one get (see _reply)

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


def _users(messages: list[dict[str, Any]]) -> list[str]:
    """The text of every user message, first first ("" when there is none)."""
    return [_text(m.get("content")) for m in messages if m.get("role") == "user"] or [""]


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


def _chat_chunks(head: dict[str, Any], text: str, calls: list[dict[str, Any]], finish: str,
                 usage: dict[str, Any] | None) -> list[dict[str, Any]]:
    """A Chat Completions answer as the chunks of its stream."""
    def chunk(delta: dict[str, Any], reason: str | None = None) -> dict[str, Any]:
        return {**head, "object": "chat.completion.chunk",
                "choices": [{"index": 0, "delta": delta, "logprobs": None,
                             "finish_reason": reason}]}

    out = [chunk({"role": "assistant", "content": ""})]
    for i in range(0, len(text), 16):  # a few characters at a time, as a model streams
        out.append(chunk({"content": text[i:i + 16]}))
    for i, call in enumerate(calls):
        out.append(chunk({"tool_calls": [{"index": i, **call}]}))
    out.append(chunk({}, finish))
    if usage is not None:
        out.append({**head, "object": "chat.completion.chunk", "choices": [], "usage": usage})
    return out


def _message_events(message: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """A Messages answer as the events of its stream."""
    usage = message["usage"]
    start = {**message, "content": [], "stop_reason": None,
             "usage": {**usage, "output_tokens": 1}}
    events: list[tuple[str, dict[str, Any]]] = [("message_start", {"type": "message_start",
                                                                   "message": start})]
    for i, block in enumerate(message["content"]):
        if block["type"] == "text":
            events.append(("content_block_start", {"type": "content_block_start", "index": i,
                                                   "content_block": {"type": "text",
                                                                     "text": ""}}))
            delta = {"type": "text_delta", "text": block["text"]}
        else:
            events.append(("content_block_start", {
                "type": "content_block_start", "index": i,
                "content_block": {**block, "input": {}}}))
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        events.append(("content_block_delta", {"type": "content_block_delta", "index": i,
                                               "delta": delta}))
        events.append(("content_block_stop", {"type": "content_block_stop", "index": i}))
    events.append(("message_delta", {"type": "message_delta",
                                     "delta": {"stop_reason": message["stop_reason"],
                                               "stop_sequence": None},
                                     "usage": {"output_tokens": usage["output_tokens"]}}))
    events.append(("message_stop", {"type": "message_stop"}))
    return events


async def _sse(request: web.Request, items: list[Any], named: bool = False) -> web.StreamResponse:
    """Server-sent events: `data: {...}` lines (OpenAI, ending `[DONE]`), or `event: NAME`
    + `data:` pairs (Anthropic)."""
    resp = web.StreamResponse(headers={"Content-Type": "text/event-stream",
                                       "Cache-Control": "no-cache"})
    await resp.prepare(request)
    for item in items:
        if named:
            name, data = item
            await resp.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
        else:
            await resp.write(f"data: {json.dumps(item)}\n\n".encode())
    if not named:
        await resp.write(b"data: [DONE]\n\n")
    await resp.write_eof()
    return resp


class _Handlers:
    def __init__(self, script: Script | BuiltinScript, run_as: RunAs | None = None,
                 main_model: str | None = None, finish: str | None = None):
        self.state = ScriptState(script, run_as, finish)
        self.main_model = main_model
        self.received: list[dict[str, Any]] = []
        self.load = {"served": 0, "refused": 0, "max_in_flight": 0, "connections": 0}
        self._peers: set[str] = set()  # the TCP connections model calls came on
        self.in_flight = 0

    def _reply(self, body: dict[str, Any], system: str, first: str, turn_no: int,
               others: list[str]) -> Reply | Fault:
        """The script's answer; with `main_model` set, calls for any other model (an agent's
        side calls: Claude Code's titles on a small model) get a short plain answer."""
        if self.main_model is not None and body.get("model") != self.main_model:
            return Reply(SIDE_ANSWER, [], None)
        return self.state.reply(system, first, turn_no, others)

    async def _body(self, request: web.Request, api: str) -> dict[str, Any] | web.Response:
        try:
            body = await request.json()
        except ValueError:
            return web.json_response({"error": {"message": "body is not JSON"}}, status=400)
        if not isinstance(body, dict):
            return web.json_response({"error": {"message": "body is not an object"}}, status=400)
        # The body only: headers carry the caller's API key.
        self.received.append({"api": api, "path": request.path, "time": time.time(), "body": body})
        self._peers.add(str(request.transport.get_extra_info("peername") if request.transport
                            else None))
        self.load["connections"] = len(self._peers)  # a client that keeps its alive: few
        return body

    async def openai(self, request: web.Request) -> web.StreamResponse:
        body = await self._body(request, "openai")
        if isinstance(body, web.Response):
            return body
        messages = body.get("messages") or []
        system = "\n".join(_text(m.get("content")) for m in messages
                           if m.get("role") in ("system", "developer"))
        turn_no = sum(1 for m in messages if m.get("role") == "assistant")
        first, *others = _users(messages)
        r = self._reply(body, system, first, turn_no, others)
        if isinstance(r, Fault):
            return _fault_response(r, anthropic=False)
        if r.delay:
            await asyncio.sleep(r.delay)
        chars_in = sum(len(_text(m.get("content"))) for m in messages)
        tokens_in, tokens_out = _usage(r, chars_in)
        usage = {"prompt_tokens": tokens_in, "completion_tokens": tokens_out,
                 "total_tokens": tokens_in + tokens_out,
                 "prompt_tokens_details": {"cached_tokens": 0},
                 "completion_tokens_details": {"reasoning_tokens": 0}}
        calls = [{"id": f"call_{c.id.removeprefix('call_')}", "type": "function",
                  "function": {"name": c.name, "arguments": json.dumps(c.arguments)}}
                 for c in r.tool_calls]
        head = {"id": f"chatcmpl-mock-{next(_ids)}", "created": int(time.time()),
                "model": body.get("model", "mock")}
        finish = "tool_calls" if r.tool_calls else "stop"
        if body.get("stream"):
            with_usage = bool((body.get("stream_options") or {}).get("include_usage"))
            return await _sse(request, _chat_chunks(head, r.text, calls, finish,
                                                    usage if with_usage else None))
        message: dict[str, Any] = {"role": "assistant", "content": r.text or None}
        if calls:
            message["tool_calls"] = calls
        return web.json_response({
            **head, "object": "chat.completion",
            "choices": [{"index": 0, "message": message, "logprobs": None,
                         "finish_reason": finish}],
            "usage": usage,
        })

    async def anthropic(self, request: web.Request) -> web.StreamResponse:
        body = await self._body(request, "anthropic")
        if isinstance(body, web.Response):
            return body
        messages = body.get("messages") or []
        system = _text(body.get("system") or "")
        turn_no = sum(1 for m in messages if m.get("role") == "assistant")
        first, *others = _users(messages)
        r = self._reply(body, system, first, turn_no, others)
        if isinstance(r, Fault):
            return _fault_response(r, anthropic=True)
        if r.delay:
            await asyncio.sleep(r.delay)
        chars_in = len(system) + sum(len(_text(m.get("content"))) for m in messages)
        tokens_in, tokens_out = _usage(r, chars_in)
        content: list[dict[str, Any]] = [{"type": "text", "text": r.text}] if r.text else []
        content += [{"type": "tool_use", "id": f"toolu_{c.id.removeprefix('call_')}", "name": c.name,
                     "input": c.arguments} for c in r.tool_calls]
        message = {
            "id": f"msg_mock_{next(_ids)}", "type": "message", "role": "assistant",
            "model": body.get("model", "mock"), "content": content,
            "stop_reason": "tool_use" if r.tool_calls else "end_turn", "stop_sequence": None,
            "usage": {"input_tokens": tokens_in, "output_tokens": tokens_out,
                      "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0},
        }
        if body.get("stream"):
            return await _sse(request, _message_events(message), named=True)
        return web.json_response(message)

    async def responses(self, request: web.Request) -> web.StreamResponse:
        from proctor.providers import mock_responses as mr

        body = await self._body(request, "openai-responses")
        if isinstance(body, web.Response):
            return body
        items = body.get("input") or []
        if isinstance(items, str):
            items = [{"role": "user", "content": items}]
        items = [i for i in items if isinstance(i, dict)]
        system = _text(body.get("instructions") or "") + "\n".join(
            _text(i.get("content")) for i in items if i.get("role") in ("system", "developer"))
        first, *others = mr.user_texts(items, _text)
        r = self._reply(body, system, first, mr.turn_number(items), others)
        if isinstance(r, Fault):
            return _fault_response(r, anthropic=False)
        if r.delay:
            await asyncio.sleep(r.delay)
        response = mr.build_response(body, r, *_usage(r, mr.input_chars(items, _text)))
        if body.get("stream"):
            return await _sse(request, mr.stream_events(response), named=True)
        return web.json_response(response)

    async def count_tokens(self, request: web.Request) -> web.Response:
        body = await self._body(request, "anthropic")
        if isinstance(body, web.Response):
            return body
        chars = len(_text(body.get("system") or "")) + sum(
            len(_text(m.get("content"))) for m in body.get("messages") or [])
        return web.json_response({"input_tokens": estimate_tokens(chars)})

    async def models(self, request: web.Request) -> web.Response:
        if "anthropic-version" in request.headers:
            return web.json_response({"data": [
                {"type": "model", "id": "mock", "display_name": "proctor mock",
                 "created_at": "2025-01-01T00:00:00Z"}],
                "has_more": False, "first_id": "mock", "last_id": "mock"})
        return web.json_response({"object": "list", "data": [
            {"id": "mock", "object": "model", "created": 0, "owned_by": "proctor"}]})

    async def requests(self, request: web.Request) -> web.Response:
        return web.json_response(self.received)

    async def load_stats(self, request: web.Request) -> web.Response:
        return web.json_response(self.load)

    def limited(self, handler: Handler, limit: RateLimitSpec | None) -> Handler:
        """A model route under the script's `rate_limit`: a call arriving while `concurrent`
        calls are in flight is refused with `status` (and `Retry-After`), as a provider does."""
        if limit is None:
            return handler

        async def serve(request: web.Request) -> web.StreamResponse:
            if self.in_flight >= limit.concurrent:
                self.load["refused"] += 1
                return _fault_response(Fault(limit.status, limit.retry_after,
                                             f"rate limited: more than {limit.concurrent} "
                                             "calls in flight"),
                                       anthropic="anthropic-version" in request.headers)
            self.in_flight += 1
            self.load["max_in_flight"] = max(self.load["max_in_flight"], self.in_flight)
            try:
                return await handler(request)
            finally:
                self.in_flight -= 1
                self.load["served"] += 1

        return serve


HANDLERS = web.AppKey("handlers", _Handlers)


def make_app(script: Script | BuiltinScript, run_as: RunAs | None = None, main_model: str | None = None,
             finish: str | None = None) -> web.Application:
    """`run_as`, `main_model` and `finish` serve external agents (agents/external.py)."""
    h = _Handlers(script, run_as, main_model, finish)
    app = web.Application(client_max_size=64 * 1024 * 1024)
    app[HANDLERS] = h
    openai, anthropic, responses = (h.limited(f, script.rate_limit)
                                    for f in (h.openai, h.anthropic, h.responses))
    app.router.add_post("/v1/chat/completions", openai)
    app.router.add_post("/chat/completions", openai)  # base_url given without /v1
    app.router.add_post("/v1/messages", anthropic)
    app.router.add_post("/v1/messages/count_tokens", h.count_tokens)
    app.router.add_post("/v1/responses", responses)
    app.router.add_post("/responses", responses)  # base_url given without /v1
    app.router.add_get("/v1/models", h.models)
    app.router.add_get("/_proctor/requests", h.requests)
    app.router.add_get("/_proctor/load", h.load_stats)
    return app


class MockServer:
    """In-process server on a real socket: `async with MockServer(script) as s: s.url`."""

    def __init__(self, script: Script | BuiltinScript, host: str = "127.0.0.1", port: int = 0, *,
                 run_as: RunAs | None = None, main_model: str | None = None,
                 finish: str | None = None):
        self.app = make_app(script, run_as, main_model, finish)
        self.host, self.port = host, port
        self.url = ""
        self._runner: web.AppRunner | None = None

    @property
    def received(self) -> list[dict[str, Any]]:
        return self.app[HANDLERS].received

    async def start(self) -> str:
        # Stopping does not wait for an answer still delayed (`delay:`): its caller is gone.
        self._runner = web.AppRunner(self.app, access_log=None, shutdown_timeout=0.1)
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
