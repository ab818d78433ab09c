"""Retries and the adaptive concurrency limit around any Provider.

These are the only retries: the SDK clients are built with `max_retries=0`, so a call is
never retried twice over. Backoff is exponential with jitter; a server's `Retry-After`
is honoured (up to `max_delay`). A slot of the endpoint's limit (providers/limiter.py) is
held for a request only, not while sleeping between attempts, so one rate-limited trial
does not block the others; each attempt's outcome tells the limit whether to grow or shrink.
"""

from __future__ import annotations

import asyncio
import random
import time
from dataclasses import dataclass

from proctor.fieldwise import FrozenFieldwise
from proctor.providers import limiter
from proctor.providers.base import Message, ModelResponse, Provider, ProviderError, Tool


@dataclass(frozen=True, eq=False, repr=False)
class RetryPolicy(FrozenFieldwise):
    """How often and how long apart a failed model call is tried again."""
    max_attempts: int = 5
    base_delay: float = 1.0  # seconds before the 2nd attempt; doubles each time
    max_delay: float = 60.0

    def delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(retry_after, self.max_delay)
        cap: float = min(self.max_delay, self.base_delay * 2 ** (attempt - 1))
        return cap * (0.5 + random.random() / 2)  # jitter: spread retries of parallel trials


# In-process mock models have no rate limit to learn: their calls use a fixed limit, apart
# from the run's (not in its summary).
_PRIVATE = limiter.LocalLimiter()


class RetryingProvider:
    """Wraps a Provider: the same `complete`, with retries and a per-endpoint limit
    (`limit`: its cap; `adaptive` False: a fixed limit of `limit`; `private`: a limit of this
    process, not the run's, kept out of its summary)."""

    def __init__(self, inner: Provider, policy: RetryPolicy, *, limit_key: str, limit: int,
                 adaptive: bool = True, private: bool = False):
        self.inner = inner
        self.name = inner.name
        self.policy = policy
        self.limit_key = limit_key
        self.limit = max(1, limit)
        self.adaptive = adaptive
        self.private = private

    async def complete(self, system: str, messages: list[Message], tools: list[Tool],
                       temperature: float | None = None, max_tokens: int = 4096) -> ModelResponse:
        retries: list[str] = []
        attempt = 0
        while True:
            attempt += 1
            gate = _PRIVATE if self.private else limiter.current()
            # This process's limiter is asked without awaiting it (a free slot, the usual
            # case, is taken at once); Ray's is an actor: awaited.
            local = gate if type(gate) is limiter.LocalLimiter else None
            token = local.try_acquire(self.limit_key, self.limit, self.adaptive) \
                if local is not None else None
            if token is None:
                token = await gate.acquire(self.limit_key, self.limit, self.adaptive)
            outcome: limiter.Outcome = "other"
            retry_after = None
            try:
                t0 = time.perf_counter()
                try:
                    resp = await self.inner.complete(system, messages, tools, temperature,
                                                      max_tokens)
                except ProviderError as e:
                    err = e
                    outcome, retry_after = limiter.outcome_of(e.status, str(e)), e.retry_after
                else:
                    outcome = "ok"
                    resp.attempt, resp.retries = attempt, retries
                    resp.latency_s = time.perf_counter() - t0
                    return resp
            finally:
                if local is not None:
                    local.release_now(self.limit_key, token, outcome, retry_after)
                else:
                    await gate.release(self.limit_key, token, outcome, retry_after)
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
