"""Anthropic Messages API with tools, through the official `anthropic` SDK (AsyncAnthropic).

The SDK is imported on first use, never when proctor starts.
"""

from __future__ import annotations

import functools
from typing import Any

from proctor.providers import clients
from proctor.providers.base import (
    Message,
    ModelResponse,
    ProviderError,
    Tool,
    ToolCall,
    Usage,
    parse_retry_after,
    retryable_status,
)
from proctor.providers.settings import ProviderSettings


def to_anthropic(messages: list[Message]) -> list[dict[str, Any]]:
    """Neutral messages → Messages API turns. Tool results travel in a user turn, and
    consecutive same-role turns are merged (the API wants user/assistant alternation)."""
    out: list[dict[str, Any]] = []
    for m in messages:
        role = m["role"]
        if role == "assistant":
            blocks: list[dict[str, Any]] = []
            if m.get("content"):
                blocks.append({"type": "text", "text": m["content"]})
            for c in m.get("tool_calls") or []:
                blocks.append({"type": "tool_use", "id": c["id"], "name": c["name"],
                               "input": c["arguments"]})
            if not blocks:  # the API refuses an empty assistant turn
                blocks.append({"type": "text", "text": "(no answer)"})
        elif role == "tool":
            role = "user"
            blocks = [{"type": "tool_result", "tool_use_id": m["tool_call_id"],
                       "content": m["content"]}]
        else:
            blocks = [{"type": "text", "text": m["content"]}]
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": blocks})
    return out


class AnthropicProvider:
    def __init__(self, name: str, model: str, settings: ProviderSettings):
        self.name = name
        self.model = model
        self.settings = settings
        self._client: Any = None
        self._owned = False  # made for this provider alone: closed by aclose

    def _get_client(self) -> Any:
        if self._client is None:
            # The run's client for this endpoint (providers/clients.py), else one of its own.
            s = self.settings
            key = ("anthropic", s.base_url, s.key(), s.timeout)
            self._client = clients.shared(key, self._new_client)
            self._owned = self._client is None
            if self._client is None:
                self._client = self._new_client()
        return self._client

    def _new_client(self) -> Any:
        from anthropic import AsyncAnthropic

        return AsyncAnthropic(
            api_key=self.settings.key() or "not-needed",
            base_url=self.settings.base_url,
            max_retries=0,  # proctor.providers.retry does the retrying
            timeout=self.settings.timeout,
        )

    async def complete(self, system: str, messages: list[Message], tools: list[Tool],
                       temperature: float | None = None, max_tokens: int = 4096) -> ModelResponse:
        import anthropic

        kwargs: dict[str, Any] = {"model": self.model, "max_tokens": max_tokens,
                                  "messages": to_anthropic(messages)}
        if system:
            kwargs["system"] = system
        if tools:
            kwargs["tools"] = [{"name": t["name"], "description": t.get("description", ""),
                                "input_schema": t["parameters"]} for t in tools]
        if temperature is not None:
            # The 2.x SDK dropped `temperature` (current models take none); older SDKs, and
            # compatible servers with `send_temperature = true`, still get it.
            if _sdk_takes_temperature():
                kwargs["temperature"] = temperature
            elif self.settings.send_temperature:
                kwargs["extra_body"] = {"temperature": temperature}
        try:
            resp = await self._get_client().messages.create(**kwargs)
        except anthropic.APIStatusError as e:
            raise ProviderError(f"HTTP {e.status_code}: {_message(e)}", status=e.status_code,
                                retryable=retryable_status(e.status_code),
                                retry_after=parse_retry_after(e.response.headers)) from e
        except anthropic.APITimeoutError as e:
            raise ProviderError(f"timed out after {self.settings.timeout:g}s",
                                retryable=True) from e
        except anthropic.APIConnectionError as e:
            inner = e.__cause__ or e.__context__
            raise ProviderError(f"connection error: {e}{f': {inner}' if inner else ''}",
                                retryable=True) from e
        except (anthropic.APIResponseValidationError, ValueError) as e:
            raise ProviderError(f"malformed response: {e}", retryable=True) from e
        except anthropic.AnthropicError as e:  # anything else the SDK raises: a clear cause, not a traceback
            raise ProviderError(f"{type(e).__name__}: {e}") from e
        try:
            text: list[str] = []
            calls: list[ToolCall] = []
            for block in resp.content:
                if block.type == "text":
                    text.append(block.text)
                elif block.type == "tool_use":
                    args = block.input if isinstance(block.input, dict) else {
                        "__invalid_json__": str(block.input)}
                    calls.append(ToolCall(block.id, block.name, args))
            u = resp.usage
            tokens_in = sum(int(getattr(u, k, 0) or 0) for k in (
                "input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"))
            usage = Usage(tokens_in, int(getattr(u, "output_tokens", 0) or 0))
            return ModelResponse(text="".join(text), tool_calls=calls, usage=usage, raw=resp)
        except (AttributeError, TypeError) as e:
            raise ProviderError(f"malformed response: {type(e).__name__}: {e}",
                                retryable=True) from e

    async def aclose(self) -> None:
        client, self._client = self._client, None
        if client is not None and self._owned:  # a run's shared client: closed at its end
            await client.close()


@functools.cache
def _sdk_takes_temperature() -> bool:
    import inspect

    from anthropic.resources.messages import AsyncMessages

    return "temperature" in inspect.signature(AsyncMessages.create).parameters


def _message(e: Any) -> str:
    return str(getattr(e, "api_message", None) or getattr(e, "message", e))


def create(model: str, name: str, settings: ProviderSettings, *, base_dir: str | None = None,
           solution: list[str] | None = None) -> AnthropicProvider:
    """The provider registry's entry (proctor.providers.PROVIDERS)."""
    return AnthropicProvider(model, name, settings)
