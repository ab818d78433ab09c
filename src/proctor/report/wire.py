"""Model turns as recorded on the wire, made readable: the request and response bodies the
recording proxy saw between an external agent (Claude Code, Codex, mini-swe-agent, …) and its
model, in any of the three APIs proctor speaks — OpenAI Chat Completions, Anthropic Messages,
OpenAI Responses — streamed (server-sent events) or not.

Best effort and total: a body in a shape not known here becomes its own text, never an error.
"""

from __future__ import annotations

import json
from typing import Any

Message = dict[str, Any]  # {"role": str, "text": str, "calls": [str]}


def call_text(name: Any, args: Any) -> str:
    """A tool call as one line: `bash: ls -la` when it has a command argument (the other
    arguments follow in brackets), else `name({json})`."""
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except ValueError:
            return f"{name}({args})"
    if isinstance(args, dict):
        key = next((k for k in ("command", "cmd") if isinstance(args.get(k), (str, list))), None)
        if key is not None:
            value = args[key]
            line = f"{name}: {value if isinstance(value, str) else ' '.join(map(str, value))}"
            rest = {k: v for k, v in args.items() if k != key}
            return line + (f"  ({json.dumps(rest, ensure_ascii=False)[1:-1]})" if rest else "")
    return f"{name}({json.dumps(args, ensure_ascii=False)})"


def _tool_call(call: Any) -> str:
    if not isinstance(call, dict):
        return str(call)
    fn = call.get("function") if isinstance(call.get("function"), dict) else call
    return call_text(fn.get("name") or "tool", fn.get("arguments", fn.get("input", "")))


def _parts(content: Any) -> tuple[str, list[str]]:
    """Text and tool calls of a message's content: a string, or a list of blocks (text,
    tool_use, tool_result, input_text, output_text, …)."""
    if content is None:
        return "", []
    if not isinstance(content, list):
        return str(content), []
    texts: list[str] = []
    calls: list[str] = []
    for block in content:
        if not isinstance(block, dict):
            texts.append(str(block))
        elif block.get("type") == "tool_use":
            calls.append(call_text(block.get("name") or "tool", block.get("input")))
        elif block.get("type") == "tool_result":
            texts.append(_parts(block.get("content"))[0])
        elif "text" in block:
            texts.append(str(block["text"]))
    return "\n".join(t for t in texts if t), calls


def _message(m: Any) -> Message | None:
    if not isinstance(m, dict):
        return {"role": "?", "text": str(m), "calls": []}
    kind = m.get("type")
    if kind == "function_call":  # Responses API items
        return {"role": "assistant", "text": "", "calls": [call_text(m.get("name"),
                                                                     m.get("arguments"))]}
    if kind == "function_call_output":
        return {"role": "tool", "text": str(m.get("output") or ""), "calls": []}
    if kind == "reasoning":
        return None
    content = m.get("content")
    text, calls = _parts(content)
    calls += [_tool_call(c) for c in m.get("tool_calls") or []]
    role = str(m.get("role") or "?")
    if isinstance(content, list) and any(isinstance(b, dict) and b.get("type") == "tool_result"
                                         for b in content):
        role = "tool"  # Anthropic sends tool results as user messages
    return {"role": role, "text": text, "calls": calls}


def request_messages(request: Any) -> tuple[str, list[Message]]:
    """The system prompt and the messages of a request body (each call carries the whole
    conversation so far)."""
    if not isinstance(request, dict):
        return "", [{"role": "?", "text": str(request), "calls": []}]
    system = request.get("system", request.get("instructions", ""))
    system_text = _parts(system)[0] if system else ""
    items = request.get("messages", request.get("input", []))
    if isinstance(items, str):
        items = [{"role": "user", "content": items}]
    out = [msg for m in items if (msg := _message(m)) is not None] if isinstance(items,
                                                                                  list) else []
    if not system_text and out and out[0]["role"] in ("system", "developer"):
        system_text = out.pop(0)["text"]
    return system_text, out


def _from_json(body: dict[str, Any]) -> tuple[str, list[str]]:
    if isinstance(body.get("choices"), list) and body["choices"]:  # Chat Completions
        msg = body["choices"][0].get("message") or {}
        return str(msg.get("content") or ""), [_tool_call(c) for c in msg.get("tool_calls") or []]
    if isinstance(body.get("output"), list):  # Responses
        texts, calls = [], []
        for item in body["output"]:
            msg = _message(item)
            if msg:
                texts.append(msg["text"])
                calls += msg["calls"]
        return "\n".join(t for t in texts if t), calls
    if isinstance(body.get("content"), list):  # Anthropic Messages
        return _parts(body["content"])
    if body.get("error"):
        return json.dumps(body["error"], ensure_ascii=False), []
    return json.dumps(body, ensure_ascii=False), []


def _from_stream(events: list[dict[str, Any]]) -> tuple[str, list[str]]:
    text: list[str] = []
    calls: dict[Any, list[str]] = {}  # index -> [name, argument fragments...]
    for ev in events:
        kind = ev.get("type")
        if kind == "response.completed" and isinstance(ev.get("response"), dict):
            return _from_json(ev["response"])  # the Responses API says it all at the end
        if kind == "response.output_text.delta":
            text.append(str(ev.get("delta") or ""))
        elif kind == "content_block_start":  # Anthropic
            block = ev.get("content_block") or {}
            if block.get("type") == "tool_use":
                calls[ev.get("index")] = [str(block.get("name") or "tool")]
        elif kind == "content_block_delta":
            delta = ev.get("delta") or {}
            if delta.get("type") == "text_delta":
                text.append(str(delta.get("text") or ""))
            elif delta.get("type") == "input_json_delta" and ev.get("index") in calls:
                calls[ev.get("index")].append(str(delta.get("partial_json") or ""))
        elif isinstance(ev.get("choices"), list) and ev["choices"]:  # Chat Completions
            delta = ev["choices"][0].get("delta") or {}
            text.append(str(delta.get("content") or ""))
            for c in delta.get("tool_calls") or []:
                fn = c.get("function") or {}
                entry = calls.setdefault(("chat", c.get("index")), [""])
                entry[0] = entry[0] or str(fn.get("name") or "")
                entry.append(str(fn.get("arguments") or ""))
    return "".join(text), [call_text(v[0] or "tool", "".join(v[1:])) for v in calls.values()]


def response_parts(response: Any) -> tuple[str, list[str]]:
    """The text and tool calls of a response: a dict (proctor's own agent), a JSON body, or
    a server-sent event stream."""
    if isinstance(response, dict):
        if "tool_calls" in response or "text" in response:  # the built-in agent's record
            text = response.get("text", response.get("content"))
            return _parts(text)[0], [_tool_call(c) for c in response.get("tool_calls") or []]
        return _from_json(response)
    raw = "" if response is None else str(response)
    try:
        body = json.loads(raw)
    except ValueError:
        body = None
    if isinstance(body, dict):
        return _from_json(body)
    events = []
    for line in raw.splitlines():
        if line.startswith("data:") and line[5:].strip() not in ("", "[DONE]"):
            try:
                ev = json.loads(line[5:].strip())
            except ValueError:
                continue
            if isinstance(ev, dict):
                events.append(ev)
    return _from_stream(events) if events else (raw, [])
