"""The Provider contract: one model API call over a provider-neutral message list.

Messages (what the agent loop keeps and every adapter translates):
  {"role": "user", "content": str}
  {"role": "assistant", "content": str, "tool_calls": [{"id", "name", "arguments": dict}]}
  {"role": "tool", "tool_call_id": str, "name": str, "content": str}
Tools: [{"name", "description", "parameters": JSON Schema of the arguments}].

Adapters raise `ProviderError` for anything that went wrong with the call; whether it is
worth retrying is decided there (they know their SDK's exceptions), the retrying in
`proctor.providers.retry`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from proctor.fieldwise import Fieldwise

Message = dict[str, Any]
Tool = dict[str, Any]


@dataclass(eq=False, repr=False)
class ToolCall(Fieldwise):
    """One tool call of a model's answer."""
    id: str
    name: str
    arguments: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "arguments": self.arguments}


@dataclass(eq=False, repr=False)
class Usage(Fieldwise):
    """The tokens a model call used."""
    input: int = 0
    output: int = 0


@dataclass(eq=False, repr=False)
class ModelResponse(Fieldwise):
    """A model's answer: its text, tool calls and usage, and how it was got."""
    text: str
    tool_calls: list[ToolCall] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    raw: Any = None  # the SDK's response object (or the wire JSON), for debugging
    # Filled in by the retrying wrapper:
    attempt: int = 1  # which attempt succeeded (1 = first)
    latency_s: float = 0.0  # of the successful attempt
    retries: list[str] = field(default_factory=list)  # one line per failed attempt


class ProviderError(Exception):
    """A model call failed. `retryable`: rate limit, 5xx, timeout, connection, garbage body."""

    def __init__(self, message: str, *, retryable: bool = False, status: int | None = None,
                 retry_after: float | None = None):
        super().__init__(message)
        self.retryable = retryable
        self.status = status
        self.retry_after = retry_after  # seconds the server asked us to wait


class Provider(Protocol):
    name: str  # "provider/model", as written in the spec

    async def complete(self, system: str, messages: list[Message], tools: list[Tool],
                       temperature: float | None = None,
                       max_tokens: int = 4096) -> ModelResponse: ...

    async def aclose(self) -> None: ...


def retryable_status(status: int) -> bool:
    return status in (408, 409, 429) or status >= 500


def parse_retry_after(headers: Any) -> float | None:
    """Seconds from `retry-after-ms` / `Retry-After` (a number or an HTTP date), else None."""
    if headers is None:
        return None
    try:
        if ms := headers.get("retry-after-ms"):
            return max(0.0, float(ms) / 1000)
        value = headers.get("retry-after")
        if not value:
            return None
        try:
            return max(0.0, float(value))
        except ValueError:
            import email.utils
            import time

            when = email.utils.parsedate_to_datetime(value).timestamp()
            return max(0.0, when - time.time())
    except (TypeError, ValueError):
        return None
