"""OpenAI Chat Completions with tools, through the official `openai` SDK (AsyncOpenAI).

Also every OpenAI-compatible server (vLLM, Ollama, llama.cpp, OpenRouter): only the base URL
and the key differ. The SDK is imported on first use, never when proctor starts.
"""

from __future__ import annotations

import json
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


def to_openai(system: str, messages: list[Message]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
    for m in messages:
        role = m["role"]
        if role == "assistant":
            msg: dict[str, Any] = {"role": "assistant", "content": m.get("content") or None}
            if m.get("tool_calls"):
                msg["tool_calls"] = [
                    {"id": c["id"], "type": "function",
                     "function": {"name": c["name"], "arguments": json.dumps(c["arguments"])}}
                    for c in m["tool_calls"]
                ]
            elif msg["content"] is None:
                msg["content"] = ""
            out.append(msg)
        elif role == "tool":
            out.append({"role": "tool", "tool_call_id": m["tool_call_id"], "content": m["content"]})
        else:
            out.append({"role": role, "content": m["content"]})
    return out


def parse_arguments(raw: str | None) -> dict[str, Any]:
    """Tool arguments arrive as a JSON string; a model may botch it, and then it is told so."""
    try:
        value = json.loads(raw or "{}")
    except ValueError:
        return {"__invalid_json__": raw}
    return value if isinstance(value, dict) else {"__invalid_json__": raw}


class OpenAIProvider:
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
            key = ("openai", s.base_url, s.key(), s.timeout)
            self._client = clients.shared(key, self._new_client)
            self._owned = self._client is None
            if self._client is None:
                self._client = self._new_client()
        return self._client

    def _new_client(self) -> Any:
        from openai import AsyncOpenAI

        return AsyncOpenAI(
            api_key=self.settings.key() or "not-needed",  # local servers take any key
            base_url=self.settings.base_url,
            max_retries=0,  # proctor.providers.retry does the retrying
            timeout=self.settings.timeout,
        )

    async def complete(self, system: str, messages: list[Message], tools: list[Tool],
                       temperature: float | None = None, max_tokens: int = 4096) -> ModelResponse:
        import openai

        kwargs: dict[str, Any] = {"model": self.model, "messages": to_openai(system, messages)}
        if tools:
            kwargs["tools"] = [{"type": "function", "function": {
                "name": t["name"], "description": t.get("description", ""),
                "parameters": t["parameters"]}} for t in tools]
        if temperature is not None and self.settings.send_temperature is not False:
            kwargs["temperature"] = temperature  # reasoning models refuse it: send_temperature = false
        # api.openai.com's newer models refuse `max_tokens`; compatible servers know only it.
        kwargs["max_completion_tokens" if self.settings.official else "max_tokens"] = max_tokens
        try:
            resp = await self._get_client().chat.completions.create(**kwargs)
        except openai.APIStatusError as e:
            raise ProviderError(f"HTTP {e.status_code}: {_message(e)}", status=e.status_code,
                                retryable=retryable_status(e.status_code),
                                retry_after=parse_retry_after(e.response.headers)) from e
        except openai.APITimeoutError as e:
            raise ProviderError(f"timed out after {self.settings.timeout:g}s",
                                retryable=True) from e
        except openai.APIConnectionError as e:
            raise ProviderError(f"connection error: {_cause(e)}", retryable=True) from e
        except (openai.APIResponseValidationError, ValueError) as e:
            raise ProviderError(f"malformed response: {e}", retryable=True) from e
        except openai.OpenAIError as e:  # anything else the SDK raises: a clear cause, not a traceback
            raise ProviderError(f"{type(e).__name__}: {e}") from e
        try:
            msg = resp.choices[0].message
            calls = [ToolCall(c.id, c.function.name, parse_arguments(c.function.arguments))
                     for c in (msg.tool_calls or []) if getattr(c, "function", None)]
            u = resp.usage
            usage = Usage(int(getattr(u, "prompt_tokens", 0) or 0),
                          int(getattr(u, "completion_tokens", 0) or 0))
            return ModelResponse(text=msg.content or "", tool_calls=calls, usage=usage, raw=resp)
        except (AttributeError, IndexError, TypeError) as e:
            raise ProviderError(f"malformed response: {type(e).__name__}: {e}",
                                retryable=True) from e

    async def aclose(self) -> None:
        client, self._client = self._client, None
        if client is not None and self._owned:  # a run's shared client: closed at its end
            await client.close()


def _message(e: Any) -> str:
    body = getattr(e, "body", None)
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict) and err.get("message"):
            return str(err["message"])
    return str(getattr(e, "message", e))


def _cause(e: BaseException) -> str:
    inner = e.__cause__ or e.__context__
    return f"{e}: {inner}" if inner else str(e)


def create(model: str, name: str, settings: ProviderSettings, *, base_dir: str | None = None,
           solution: list[str] | None = None) -> OpenAIProvider:
    """The provider registry's entry (proctor.providers.PROVIDERS)."""
    return OpenAIProvider(model, name, settings)
