"""mock-llm's OpenAI Responses API (`POST /v1/responses`), as Codex CLI speaks it.

The input is a list of items: messages (`{"role", "content"}`, with or without
`"type": "message"`), `function_call` and `function_call_output`. An assistant message and
the function calls that follow it are one model turn, so the turn number counts runs of
assistant-side items, not items.
"""

from __future__ import annotations

import itertools
import json
import time
from typing import Any

from proctor.providers.script import Reply

_ids = itertools.count(1)
_ASSISTANT_ITEMS = ("function_call", "reasoning")


def _is_assistant(item: dict[str, Any]) -> bool:
    return item.get("role") == "assistant" or item.get("type") in _ASSISTANT_ITEMS


def turn_number(items: list[dict[str, Any]]) -> int:
    """Model turns already taken: each run of consecutive assistant-side items is one."""
    turns, inside = 0, False
    for item in items:
        assistant = _is_assistant(item)
        turns += assistant and not inside
        inside = assistant
    return turns


def user_texts(items: list[dict[str, Any]], text_of: Any) -> list[str]:
    """Every user message's text, first first ("" when there is none)."""
    return [text_of(i.get("content")) for i in items if i.get("role") == "user"] or [""]


def input_chars(items: list[dict[str, Any]], text_of: Any) -> int:
    return sum(len(text_of(i.get("content")) or str(i.get("output", "")) or
                   str(i.get("arguments", ""))) for i in items)


def build_response(body: dict[str, Any], r: Reply, tokens_in: int, tokens_out: int) -> dict[str, Any]:
    """The whole `response` object: a message item (when there is text), then the calls."""
    output: list[dict[str, Any]] = []
    if r.text:
        output.append({"type": "message", "id": f"msg_mock_{next(_ids)}", "status": "completed",
                       "role": "assistant",
                       "content": [{"type": "output_text", "text": r.text, "annotations": []}]})
    # The script's ids are call_TURN_INDEX; each API has its own prefix (no call_call_…).
    output += [{"type": "function_call", "id": f"fc_{c.id.removeprefix('call_')}",
                "call_id": c.id, "name": c.name, "arguments": json.dumps(c.arguments),
                "status": "completed"}
               for c in r.tool_calls]
    return {
        "id": f"resp_mock_{next(_ids)}", "object": "response", "created_at": int(time.time()),
        "status": "completed", "model": body.get("model", "mock"), "output": output,
        "instructions": body.get("instructions"), "tools": body.get("tools") or [],
        "tool_choice": body.get("tool_choice", "auto"), "parallel_tool_calls": True,
        "error": None, "incomplete_details": None, "metadata": {},
        "temperature": None, "top_p": None,
        "usage": {"input_tokens": tokens_in, "output_tokens": tokens_out,
                  "total_tokens": tokens_in + tokens_out,
                  "input_tokens_details": {"cached_tokens": 0},
                  "output_tokens_details": {"reasoning_tokens": 0}},
    }


def _item_events(i: int, item: dict[str, Any]) -> list[dict[str, Any]]:
    """One output item as added … deltas … done events."""
    if item["type"] == "message":
        text = item["content"][0]["text"]
        empty = {**item, "status": "in_progress", "content": []}
        part = {"type": "output_text", "text": "", "annotations": []}
        head = {"item_id": item["id"], "output_index": i, "content_index": 0}
        return [{"type": "response.output_item.added", "output_index": i, "item": empty},
                {"type": "response.content_part.added", **head, "part": part},
                *({"type": "response.output_text.delta", **head, "delta": text[k:k + 16],
                   "logprobs": []} for k in range(0, len(text), 16)),
                {"type": "response.output_text.done", **head, "text": text, "logprobs": []},
                {"type": "response.content_part.done", **head, "part": item["content"][0]},
                {"type": "response.output_item.done", "output_index": i, "item": item}]
    head = {"item_id": item["id"], "output_index": i}
    return [{"type": "response.output_item.added", "output_index": i,
             "item": {**item, "arguments": "", "status": "in_progress"}},
            {"type": "response.function_call_arguments.delta", **head, "delta": item["arguments"]},
            {"type": "response.function_call_arguments.done", **head, "name": item["name"],
             "arguments": item["arguments"]},
            {"type": "response.output_item.done", "output_index": i, "item": item}]


def stream_events(response: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The response as its named SSE events, numbered as the API numbers them."""
    pending = {**response, "status": "in_progress", "output": [], "usage": None}
    events: list[dict[str, Any]] = [{"type": "response.created", "response": pending},
              {"type": "response.in_progress", "response": pending}]
    for i, item in enumerate(response["output"]):
        events += _item_events(i, item)
    events.append({"type": "response.completed", "response": response})
    return [(e["type"], {**e, "sequence_number": n}) for n, e in enumerate(events)]
