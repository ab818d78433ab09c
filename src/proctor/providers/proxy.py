"""A recording model proxy: the agent talks to it on 127.0.0.1, it forwards to mock-llm or
the real provider and records every model call.

The key is injected here from proctor's environment (`api_key`), so an agent under test
never holds the real key. Streams (SSE) pass through chunk by chunk as they arrive; usage is
read from the finished body (JSON, or the stream's events). A call the upstream refuses
(4xx/5xx, passed through) or that cannot reach it at all (answered 400, so the agent stops
instead of retrying for minutes) is recorded with its cause in `errors`, so the agent type
can make the trial `error`, not `fail`.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import aiohttp
from aiohttp import web

from proctor.providers.base import ToolCall, parse_retry_after
from proctor.providers.budget import Budget

if TYPE_CHECKING:
    from proctor.record.events import ModelCallEvent

_HOP_HEADERS = {"host", "content-length", "transfer-encoding", "connection", "accept-encoding"}
_MODEL_PATHS = ("/chat/completions", "/messages", "/responses")


def _usage_of(obj: Any) -> tuple[int, int] | None:
    """(input, output) tokens from any provider's usage object found in `obj`."""
    if not isinstance(obj, dict):
        return None
    for holder in (obj, obj.get("message"), obj.get("response")):
        usage = holder.get("usage") if isinstance(holder, dict) else None
        if isinstance(usage, dict):
            tin = usage.get("input_tokens", usage.get("prompt_tokens")) or 0
            tout = usage.get("output_tokens", usage.get("completion_tokens")) or 0
            return int(tin), int(tout)
    return None


def usage_from_body(body: bytes) -> tuple[int, int]:
    """Tokens of a whole answer: a JSON body, or an SSE stream (largest numbers seen, since
    Anthropic sends input in `message_start` and the final output in `message_delta`)."""
    text = body.decode("utf-8", "replace")
    try:
        return _usage_of(json.loads(text)) or (0, 0)
    except ValueError:
        pass
    tin = tout = 0
    for line in text.splitlines():
        if line.startswith("data:") and line[5:].strip() not in ("", "[DONE]"):
            try:
                found = _usage_of(json.loads(line[5:]))
            except ValueError:
                continue
            if found:
                tin, tout = max(tin, found[0]), max(tout, found[1])
    return tin, tout


def _args(raw: Any) -> dict[str, Any]:
    if isinstance(raw, dict):
        return raw
    try:
        parsed = json.loads(raw) if isinstance(raw, str) and raw else {}
    except ValueError:
        return {}
    return parsed if isinstance(parsed, dict) else {}


def _calls_in(obj: Any) -> list[ToolCall]:
    """Tool calls in one finished answer (or one Responses stream event), any API."""
    if not isinstance(obj, dict):
        return []
    obj = obj.get("response") if isinstance(obj.get("response"), dict) else obj
    calls = [ToolCall(str(b.get("id")), str(b.get("name") or ""), _args(b.get("input")))
             for b in obj.get("content") or []
             if isinstance(b, dict) and b.get("type") == "tool_use"]  # Anthropic
    for choice in obj.get("choices") or []:  # Chat Completions
        message = choice.get("message") if isinstance(choice, dict) else None
        for c in (message or {}).get("tool_calls") or []:
            fn = c.get("function") or {}
            calls.append(ToolCall(str(c.get("id")), str(fn.get("name") or ""),
                                  _args(fn.get("arguments"))))
    items = obj.get("output") or ([obj["item"]] if isinstance(obj.get("item"), dict) else [])
    calls += [ToolCall(str(i.get("call_id")), str(i.get("name") or ""), _args(i.get("arguments")))
              for i in items
              if isinstance(i, dict) and i.get("type") == "function_call"]  # Responses
    return calls


def tool_calls_from_body(body: bytes) -> list[ToolCall]:
    """Every tool call the model answered with (id, name, arguments): a JSON body, or a
    stream (Anthropic's tool_use blocks and their input deltas, Chat Completions' tool
    call deltas, the Responses API's finished output items)."""
    text = body.decode("utf-8", "replace")
    try:
        return _calls_in(json.loads(text))
    except ValueError:
        pass
    calls: list[ToolCall] = []
    blocks: dict[Any, list[str]] = {}  # stream index -> [id, name, json so far]
    for line in text.splitlines():
        if not line.startswith("data:") or line[5:].strip() in ("", "[DONE]"):
            continue
        try:
            event = json.loads(line[5:])
        except ValueError:
            continue
        if not isinstance(event, dict):
            continue
        if event.get("type") == "response.output_item.done":
            calls += _calls_in(event)
        block, delta = event.get("content_block"), event.get("delta")
        if isinstance(block, dict) and block.get("type") == "tool_use":
            blocks[event.get("index")] = [str(block.get("id")), str(block.get("name") or ""), ""]
        elif isinstance(delta, dict) and delta.get("type") == "input_json_delta" \
                and event.get("index") in blocks:
            blocks[event.get("index")][2] += str(delta.get("partial_json") or "")
        for choice in event.get("choices") or []:
            for c in ((choice or {}).get("delta") or {}).get("tool_calls") or []:
                held = blocks.setdefault(("chat", c.get("index")), ["", "", ""])
                fn = c.get("function") or {}
                held[0] = held[0] or str(c.get("id") or "")
                held[1] = held[1] or str(fn.get("name") or "")
                held[2] += str(fn.get("arguments") or "")
    return calls + [ToolCall(i, n, _args(j)) for i, n, j in blocks.values()]


class ModelProxy:
    """`async with ModelProxy(upstream, api_key=...) as p:` then point the agent at `p.url`.

    `deadline` (time.monotonic()): when the task's time is up. A call forwarded before it
    may take only the time left; one cut by it, or asked for after it, is answered 400 and
    recorded as cut by the deadline (the agent ran out of time: not an endpoint failure).

    `limit` (endpoint key, cap, adaptive): each model call takes a slot of the run's limit
    of that endpoint (limiter.py) while it is forwarded, as the llm agent's calls do; a
    refusal is passed on to the agent (which retries it) and lowers the limit."""

    def __init__(self, upstream: str, api_key: str | None = None,
                 on_call: Callable[[ModelCallEvent], None] | None = None,
                 main_model: str | None = None, deadline: float | None = None,
                 budget: Budget | None = None,
                 cost_of: Callable[[str, int, int], float | None] | None = None,
                 limit: tuple[str, int, bool] | None = None):
        self.upstream = upstream.rstrip("/")
        self.limit = limit
        self.api_key = api_key
        # Calls for another model (Claude Code's titles on a small model) are `side` calls:
        # their tokens count, but they are not turns.
        self.main_model = main_model
        self.last_failed = False  # did the most recent model call fail?
        self.on_call = on_call  # e.g. the trial recorder's trace: one model_call event per call
        self.turns = self.tokens_in = self.tokens_out = 0
        self.usage_by_model: dict[str, list[int]] = {}  # model -> [input, output] tokens
        self.errors: list[str] = []
        # The main model's tool calls, in order (an agent's `tool_calls` list may be given:
        # kept there as they come, so a stopped agent's calls are not lost).
        self.tool_calls: list[ToolCall] = []
        self.deadline = deadline
        # The trial's limits (providers/budget.py), and each call's cost (model, in, out).
        self.budget = budget if budget is not None else Budget()
        self.cost_of = cost_of or (lambda model, tin, tout: None)
        self._inflight: set[asyncio.Future[Any]] = set()  # limited mode: upstream reads
        self.stopping = False  # calls cut from here on are cut with the agent, not failures
        self.url = ""
        self._runner: web.AppRunner | None = None
        self._session: aiohttp.ClientSession | None = None

    def _headers(self, request: web.Request) -> dict[str, str]:
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _HOP_HEADERS}
        if self.api_key:
            if "anthropic-version" in request.headers or "x-api-key" in request.headers:
                headers["x-api-key"] = self.api_key
                headers.pop("Authorization", None)
            else:
                headers["Authorization"] = f"Bearer {self.api_key}"
        return headers

    async def _forward(self, request: web.Request) -> web.StreamResponse:
        if self.limit is None or request.method != "POST" \
                or not request.path.endswith(_MODEL_PATHS):
            return await self._forward_any(request)
        from proctor.providers import limiter

        key, cap, adaptive = self.limit
        gate = limiter.current()
        left = None if self.deadline is None else self.deadline - time.monotonic()
        try:
            token = await asyncio.wait_for(gate.acquire(key, cap, adaptive), left)
        except TimeoutError:  # the task's time ran out waiting for a slot: a cut
            body = await request.read()
            self._record(request, body, None, b"", time.monotonic(), None, cut=True)
            return _timeout_answer()
        outcome: limiter.Outcome = "other"
        retry_after = None
        try:
            out = await self._forward_any(request)
            if out.status < 400:
                outcome = "ok"
            else:
                text = out.text if isinstance(out, web.Response) and out.body else ""
                outcome = limiter.outcome_of(out.status, text or "")
                retry_after = parse_retry_after(out.headers)
            return out
        finally:
            await gate.release(key, token, outcome, retry_after)

    async def _forward_any(self, request: web.Request) -> web.StreamResponse:
        assert self._session is not None
        if self.budget.limited and request.method == "POST" \
                and request.path.endswith(_MODEL_PATHS):
            return await self._forward_limited(request)
        body = await request.read()
        target = self.upstream + request.path_qs
        started = time.monotonic()
        left = None if self.deadline is None else self.deadline - started
        out: web.StreamResponse | None = None
        try:
            if left is not None and left <= 0:
                raise TimeoutError
            async with self._session.request(
                    request.method, target, data=body, headers=self._headers(request),
                    timeout=aiohttp.ClientTimeout(total=left, sock_connect=10)) as up:
                out = web.StreamResponse(status=up.status, headers={
                    k: v for k, v in up.headers.items() if k.lower() not in _HOP_HEADERS
                    and k.lower() != "content-encoding"})
                await out.prepare(request)
                answer = bytearray()
                async for chunk in up.content.iter_any():
                    answer += chunk
                    await out.write(chunk)
                await out.write_eof()
        except TimeoutError:
            self._record(request, body, None, b"", started, None, cut=True)
            if out is not None:  # the answer had begun: it ends here
                return out
            return web.json_response({"error": {"type": "invalid_request_error", "message":
                                                "proctor model proxy: the task's time is up"}},
                                     status=400)
        except aiohttp.ClientError as e:
            if self._past_deadline():  # the upstream went with the agent's time: a cut
                self._record(request, body, None, b"", started, None, cut=True)
                return out if out is not None else web.json_response(
                    {"error": {"type": "invalid_request_error",
                               "message": "proctor model proxy: the task's time is up"}}, status=400)
            self._record(request, body, None, b"", started, f"{target}: {e}")
            if out is not None:
                return out
            # 400, not 502: an agent backs off and retries a 5xx for minutes, while an
            # endpoint proctor cannot reach at all is a setup problem to report at once.
            return web.json_response({"error": {"type": "invalid_request_error", "message":
                                                f"proctor model proxy: {target}: {e}"}}, status=400)
        error = f"{target}: HTTP {up.status}: {bytes(answer[:300]).decode('utf-8', 'replace')}" \
            if up.status >= 400 else None
        self._record(request, body, up.status, bytes(answer), started, error)
        return out

    async def _forward_limited(self, request: web.Request) -> web.StreamResponse:
        """A model call under limits: the whole answer is read before the agent gets any of
        it, so the one that reaches a limit is never delivered (its tool calls are not run);
        calls asked for after that are refused, and calls still in flight then are cut, so
        an agent firing calls in parallel gets at most the one that reached the limit."""
        assert self._session is not None
        body = await request.read()
        target = self.upstream + request.path_qs
        started = time.monotonic()
        if self.budget.hit is not None:
            self._refused(request, body)
            return self._limit_answer()
        left = None if self.deadline is None else self.deadline - started
        fetch = asyncio.ensure_future(self._fetch(request, body, target, left))
        self._inflight.add(fetch)
        try:
            status, headers, answer = await fetch
        except asyncio.CancelledError:
            if not fetch.cancelled() or (asyncio.current_task() or fetch).cancelling():
                raise  # the agent hung up, or the proxy is stopping: not ours to answer
            self._record(request, body, None, b"", started, None, cut="limit")
            return self._limit_answer()
        except TimeoutError:
            self._record(request, body, None, b"", started, None, cut="timeout")
            return _timeout_answer()
        except aiohttp.ClientError as e:
            if self._past_deadline():
                self._record(request, body, None, b"", started, None, cut="timeout")
                return _timeout_answer()
            self._record(request, body, None, b"", started, f"{target}: {e}")
            return web.json_response({"error": {"type": "invalid_request_error", "message":
                                                f"proctor model proxy: {target}: {e}"}}, status=400)
        finally:
            self._inflight.discard(fetch)
        if self.budget.hit is not None:  # reached while this one was in flight
            self._record(request, body, None, b"", started, None, cut="limit")
            return self._limit_answer()
        error = f"{target}: HTTP {status}: {answer[:300].decode('utf-8', 'replace')}" \
            if status >= 400 else None
        self._record(request, body, status, answer, started, error)
        if self.budget.hit is not None:  # this answer reached it: the agent never sees it
            for other in list(self._inflight):
                other.cancel()
            return self._limit_answer()
        return web.Response(status=status, body=answer, headers=headers)

    async def _fetch(self, request: web.Request, body: bytes, target: str,
                     left: float | None) -> tuple[int, dict[str, str], bytes]:
        assert self._session is not None
        if left is not None and left <= 0:
            raise TimeoutError
        async with self._session.request(
                request.method, target, data=body, headers=self._headers(request),
                timeout=aiohttp.ClientTimeout(total=left, sock_connect=10)) as up:
            answer = await up.read()
            headers = {k: v for k, v in up.headers.items() if k.lower() not in _HOP_HEADERS
                       and k.lower() != "content-encoding"}
            return up.status, headers, answer

    def _refused(self, request: web.Request, body: bytes) -> None:
        """A call asked for after a limit was reached: in the trace, never forwarded."""
        if self.on_call is not None:
            try:
                req: Any = json.loads(body)
            except ValueError:
                req = body[:1000].decode("utf-8", "replace")
            self.on_call({"type": "model_call", "source": "proxy", "path": request.path,
                          "status": None, "request": req,
                          "error": f"refused: {self.budget.describe()}"})

    def _limit_answer(self) -> web.Response:
        # 400, not 429 or 5xx: an agent retries those; this one must stop.
        return web.json_response({"error": {"type": "invalid_request_error", "message":
                                            f"proctor model proxy: {self.budget.describe()}"}},
                                 status=400)

    def _past_deadline(self) -> bool:
        return self.stopping or self.deadline is not None and time.monotonic() >= self.deadline

    def _record(self, request: web.Request, body: bytes, status: int | None, answer: bytes,
                started: float, error: str | None, cut: bool | str = False) -> None:
        if request.method != "POST" or not request.path.endswith(_MODEL_PATHS):
            return  # model lists, token counts: not model turns
        event: ModelCallEvent = {"type": "model_call", "source": "proxy", "path": request.path,
                                 "status": status, "latency_s": round(time.monotonic() - started, 6)}
        try:
            event["request"] = json.loads(body)
        except ValueError:
            event["request"] = body[:1000].decode("utf-8", "replace")
        side = (self.main_model is not None and isinstance(event["request"], dict)
                and event["request"].get("model") != self.main_model)
        self.last_failed = error is not None
        if side:
            event["side"] = True
        if cut == "limit":
            event["error"] = f"cut: {self.budget.describe()}"
        elif cut:
            event["error"] = "cut at the task's timeout"
        elif error is not None:
            self.errors.append(error)
            event["error"] = error
        else:
            tin, tout = usage_from_body(answer)
            self.turns += not side
            self.tokens_in += tin
            self.tokens_out += tout
            model = event["request"].get("model") if isinstance(event["request"], dict) else None
            per_model = self.usage_by_model.setdefault(str(model or self.main_model or ""), [0, 0])
            per_model[0] += tin
            per_model[1] += tout
            event["turn"] = self.turns
            event["usage"] = {"input": tin, "output": tout}
            event["response"] = answer[:200_000].decode("utf-8", "replace")
            was = self.budget.hit
            self.budget.charge(tin, tout, self.cost_of(str(model or self.main_model or ""),
                                                       tin, tout), turn=not side)
            if was is None and self.budget.hit is not None:
                event["limit"] = self.budget.hit  # the last answer: the agent never gets it
            if not side:  # asked for, even in the answer withheld at a limit (as for llm)
                self.tool_calls += tool_calls_from_body(answer)
        if self.on_call is not None:
            self.on_call(event)

    async def start(self) -> str:
        self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=None,
                                                                            sock_connect=10))
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_route("*", "/{tail:.*}", self._forward)
        # Stopping does not wait for a call still in flight (the agent is gone by then).
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.1)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", 0).start()
        host, port = self._runner.addresses[0][:2]
        self.url = f"http://{host}:{port}"
        return self.url

    async def stop(self) -> None:
        self.stopping = True
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def __aenter__(self) -> ModelProxy:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()


def _timeout_answer() -> web.Response:
    return web.json_response({"error": {"type": "invalid_request_error",
                                        "message": "proctor model proxy: the task's time is up"}},
                             status=400)
