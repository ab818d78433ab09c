"""Model turns as recorded on the wire, made readable: the request and response bodies of a
`model_call` trace event, in any of the shapes proctor records — the built-in agent's own
record, or what the recording proxy saw between an external agent (Claude Code, Codex,
mini-swe-agent, …) and its model in one of the three APIs proctor speaks (OpenAI Chat
Completions, Anthropic Messages, OpenAI Responses), streamed (server-sent events) or not.

Tool calls keep their ids, and tool results the id of the call they answer: that is how a
trajectory puts each result (and the command it ran) beside the call that asked for it.

Best effort and total: a body in a shape not known here becomes its own text, never an error.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Call:
    """A tool call of the model: `line` is how people read it (`Bash: ls -la`)."""

    id: str | None
    name: str
    args: Any  # a dict when the arguments were JSON, else the raw text
    line: str

    @property
    def command(self) -> str | None:
        """The shell command the call asks for, when it is one (`command` / `cmd`)."""
        return _command_of(self.args)


@dataclass
class Message:
    """A message of a model call as sent on the wire."""
    role: str  # system, developer, user, assistant, tool
    text: str
    calls: list[Call] = field(default_factory=list)
    call_id: str | None = None  # a tool result: the call it answers


def _command_of(args: Any) -> str | None:
    if isinstance(args, dict):
        for key in ("command", "cmd"):
            value = args.get(key)
            if isinstance(value, str):
                return value
            if isinstance(value, list):
                return " ".join(map(str, value))
    return None


def _parsed(args: Any) -> Any:
    if isinstance(args, str):
        try:
            return json.loads(args)
        except ValueError:
            return args
    return args


def call_text(name: Any, args: Any) -> str:
    """A tool call as one line: `bash: ls -la` when it has a command argument (the other
    arguments follow in brackets), else `name({json})`."""
    args = _parsed(args)
    if isinstance(args, str):
        return f"{name}({args})"
    command = _command_of(args)
    if command is not None:
        rest = {k: v for k, v in args.items() if k not in ("command", "cmd")}
        return f"{name}: {command}" + (
            f"  ({json.dumps(rest, ensure_ascii=False)[1:-1]})" if rest else "")
    return f"{name}({json.dumps(args, ensure_ascii=False)})"


def make_call(call_id: Any, name: Any, args: Any) -> Call:
    name = str(name or "tool")
    return Call(None if call_id in (None, "") else str(call_id), name, _parsed(args),
                call_text(name, args))


def _tool_call(call: Any) -> Call:
    """A tool call in any API's shape (Chat Completions, the built-in agent's record)."""
    if not isinstance(call, dict):
        return make_call(None, "tool", str(call))
    fn = f if isinstance(f := call.get("function"), dict) else call
    return make_call(call.get("id") or call.get("call_id"), fn.get("name"),
                     fn.get("arguments", fn.get("input", "")))


def _parts(content: Any) -> tuple[str, list[Call]]:
    """Text and tool calls of a message's content: a string, or a list of blocks (text,
    tool_use, input_text, output_text, …)."""
    if content is None:
        return "", []
    if not isinstance(content, list):
        return str(content), []
    texts: list[str] = []
    calls: list[Call] = []
    for block in content:
        if not isinstance(block, dict):
            texts.append(str(block))
        elif block.get("type") == "tool_use":
            calls.append(make_call(block.get("id"), block.get("name"), block.get("input")))
        elif block.get("type") == "tool_result":
            texts.append(_parts(block.get("content"))[0])
        elif "text" in block:
            texts.append(str(block["text"]))
    return "\n".join(t for t in texts if t), calls


def _messages(m: Any) -> list[Message]:
    """One request item as messages: Anthropic's tool results (several in one user message
    when the calls ran in parallel) become one tool message each."""
    if not isinstance(m, dict):
        return [Message("?", str(m))]
    kind = m.get("type")
    if kind == "function_call":  # Responses API items
        return [Message("assistant", "", [make_call(m.get("call_id") or m.get("id"),
                                                     m.get("name"), m.get("arguments"))])]
    if kind == "function_call_output":
        return [Message("tool", _output_text(m.get("output")), call_id=m.get("call_id"))]
    if kind == "reasoning":
        return []
    content = m.get("content")
    role = str(m.get("role") or "?")
    if isinstance(content, list) and any(isinstance(b, dict) and b.get("type") == "tool_result"
                                         for b in content):
        out = [Message("tool", _parts(b.get("content"))[0], call_id=b.get("tool_use_id"))
               for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]
        rest = [b for b in content if not (isinstance(b, dict) and b.get("type") == "tool_result")]
        text = _parts(rest)[0]
        return out + ([Message(role, text)] if text else [])
    text, calls = _parts(content)
    calls += [_tool_call(c) for c in m.get("tool_calls") or []]
    return [Message(role, text, calls, call_id=m.get("tool_call_id"))]


def _output_text(output: Any) -> str:
    if isinstance(output, list):
        return _parts(output)[0]
    return "" if output is None else str(output)


def request_messages(request: Any) -> tuple[str, list[Message]]:
    """The system prompt and the messages of a request body (a proxied call carries the
    whole conversation so far; the built-in agent records only what is new)."""
    if not isinstance(request, dict):
        return "", [Message("?", str(request))]
    system = request.get("system", request.get("instructions", ""))
    system_text = _parts(system)[0] if system else ""
    items = request.get("messages", request.get("input", []))
    if isinstance(items, str):
        items = [{"role": "user", "content": items}]
    out = [msg for m in items for msg in _messages(m)] if isinstance(items, list) else []
    if not system_text and out and out[0].role in ("system", "developer"):
        system_text = out.pop(0).text
    return system_text, out


def _from_json(body: dict[str, Any]) -> tuple[str, list[Call]]:
    if isinstance(body.get("choices"), list) and body["choices"]:  # Chat Completions
        msg = body["choices"][0].get("message") or {}
        return str(msg.get("content") or ""), [_tool_call(c) for c in msg.get("tool_calls") or []]
    if isinstance(body.get("output"), list):  # Responses
        texts, calls = [], []
        for item in body["output"]:
            for msg in _messages(item):
                texts.append(msg.text)
                calls += msg.calls
        return "\n".join(t for t in texts if t), calls
    if isinstance(body.get("content"), list):  # Anthropic Messages
        return _parts(body["content"])
    if body.get("error"):
        return json.dumps(body["error"], ensure_ascii=False), []
    return json.dumps(body, ensure_ascii=False), []


def _from_stream(events: list[dict[str, Any]]) -> tuple[str, list[Call]]:
    text: list[str] = []
    calls: dict[Any, list[Any]] = {}  # index -> [id, name, argument fragments...]
    for ev in events:
        kind = ev.get("type")
        if kind == "response.completed" and isinstance(ev.get("response"), dict):
            return _from_json(ev["response"])  # the Responses API says it all at the end
        if kind == "response.output_text.delta":
            text.append(str(ev.get("delta") or ""))
        elif kind == "content_block_start":  # Anthropic
            block = ev.get("content_block") or {}
            if block.get("type") == "tool_use":
                calls[ev.get("index")] = [block.get("id"), str(block.get("name") or "tool")]
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
                entry = calls.setdefault(("chat", c.get("index")), [None, ""])
                entry[0] = entry[0] or c.get("id")
                entry[1] = entry[1] or str(fn.get("name") or "")
                entry.append(str(fn.get("arguments") or ""))
    return "".join(text), [make_call(v[0], v[1] or "tool", "".join(v[2:]))
                           for v in calls.values()]


def response_calls(response: Any) -> tuple[str, list[Call]]:
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


def response_parts(response: Any) -> tuple[str, list[str]]:
    """The text of a response and its tool calls, each as one line."""
    text, calls = response_calls(response)
    return text, [c.line for c in calls]
