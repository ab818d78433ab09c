"""Retries and a concurrency limit around any Provider.

These are the only retries: the SDK clients are built with `max_retries=0`, so a call is
never retried twice over. Backoff is exponential with jitter; a server's `Retry-After`
is honoured (up to `max_delay`). The semaphore is held for a request only, not while
sleeping between attempts, so one rate-limited trial does not block the others.
"""

from __future__ import annotations

import asyncio
import random
import time
import weakref
from dataclasses import dataclass

from proctor.providers.base import Message, ModelResponse, Provider, ProviderError, Tool


@dataclass(frozen=True)
class RetryPolicy:
    max_attempts: int = 5
    base_delay: float = 1.0  # seconds before the 2nd attempt; doubles each time
    max_delay: float = 60.0

    def delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(retry_after, self.max_delay)
        cap = min(self.max_delay, self.base_delay * 2 ** (attempt - 1))
        return cap * (0.5 + random.random() / 2)  # jitter: spread retries of parallel trials


# One semaphore per (event loop, provider, limit): asyncio primitives belong to one loop.
_SEMAPHORES: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[tuple[str, int], asyncio.Semaphore]] = (
    weakref.WeakKeyDictionary()
)


def _semaphore(key: str, limit: int) -> asyncio.Semaphore:
    per_loop = _SEMAPHORES.setdefault(asyncio.get_running_loop(), {})
    sem = per_loop.get((key, limit))
    if sem is None:
        sem = per_loop[(key, limit)] = asyncio.Semaphore(limit)
    return sem


class RetryingProvider:
    """Wraps a Provider: the same `complete`, with retries and a per-provider limit."""

    def __init__(self, inner: Provider, policy: RetryPolicy, *, limit_key: str, limit: int):
        self.inner = inner
        self.name = inner.name
        self.policy = policy
        self.limit_key = limit_key
        self.limit = max(1, limit)

    async def complete(self, system: str, messages: list[Message], tools: list[Tool],
                       temperature: float | None = None, max_tokens: int = 4096) -> ModelResponse:
        retries: list[str] = []
        attempt = 0
        while True:
            attempt += 1
            async with _semaphore(self.limit_key, self.limit):
                t0 = time.perf_counter()
                try:
                    resp = await self.inner.complete(system, messages, tools, temperature,
                                                      max_tokens)
                except ProviderError as e:
                    err = e
                else:
                    resp.attempt, resp.retries = attempt, retries
                    resp.latency_s = time.perf_counter() - t0
                    return resp
            if not err.retryable or attempt >= self.policy.max_attempts:
                tries = f" (gave up after {attempt} attempts)" if attempt > 1 else ""
                final = ProviderError(f"{self.name}: {err}{tries}", retryable=False,
                                      status=err.status)
                final.retries = retries  # type: ignore[attr-defined]
                raise final from err
            wait = self.policy.delay(attempt, err.retry_after)
            retries.append(f"attempt {attempt}: {err}; retried after {wait:.2f}s")
            await asyncio.sleep(wait)

    async def aclose(self) -> None:
        await self.inner.aclose()
