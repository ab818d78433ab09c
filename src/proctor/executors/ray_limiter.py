"""The model-call limiter of a Ray run: one named actor every node asks.

A provider's rate limit is shared by every node, so the limit of calls in flight is one
per run, not one per node: `LimiterActor` holds the run's `LocalLimiter`
(providers/limiter.py) on the head's node, and each node's `RayLimiter` takes and gives
back slots through it (a slot is one actor call each way, about a millisecond, against a
model call of seconds). Should the actor be lost, a node falls back to a limiter of its own
rather than failing its trials.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import sys
from typing import Any

from proctor.providers.limiter import LocalLimiter, Outcome, Token

_pending: set[asyncio.Future[None]] = set()  # slots being given back (kept from the GC)


class LimiterActor:
    """An asyncio actor (its methods are coroutines): waiting calls do not block others."""

    def __init__(self) -> None:
        self.limiter = LocalLimiter()

    async def acquire(self, key: str, cap: int, adaptive: bool = True) -> Token:
        return await self.limiter.acquire(key, cap, adaptive)

    async def release(self, key: str, token: Token, outcome: Outcome,
                      retry_after: float | None = None) -> None:
        self.limiter.release_now(key, token, outcome, retry_after)

    async def stats(self) -> dict[str, dict[str, Any]]:
        return self.limiter.stats()


def start(ray: Any, run_id: str) -> Any:
    """The run's limiter actor, on this (the head's) node: it lives as long as the head."""
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    here = ray.get_runtime_context().get_node_id()
    return ray.remote(LimiterActor).options(
        # A resumed run's head must not meet its killed predecessor's actor under the name.
        name=f"proctor-limiter-{run_id}-{secrets.token_hex(3)}", num_cpus=0,
        max_concurrency=10_000, max_restarts=0,
        scheduling_strategy=NodeAffinitySchedulingStrategy(here, soft=True),
    ).remote()


class RayLimiter:
    """A node's view of the run's limiter (`providers.limiter.install` it on the node)."""

    def __init__(self, actor: Any):
        self.actor = actor
        self.fallback: LocalLimiter | None = None  # once the actor is lost

    async def acquire(self, key: str, cap: int, adaptive: bool = True) -> Token:
        if self.fallback is None:
            ref = self.actor.acquire.remote(key, cap, adaptive)
            try:
                epoch, found = await ref
                return epoch, found
            except asyncio.CancelledError:  # the slot may come all the same: give it back
                back = asyncio.ensure_future(self._give_back(ref, key))
                _pending.add(back)
                back.add_done_callback(_pending.discard)
                raise
            except Exception as e:  # noqa: BLE001 - any Ray failure: limit here instead
                self._lose(e)
        assert self.fallback is not None
        epoch, found = await self.fallback.acquire(key, cap, adaptive)
        return -1 - epoch, found  # a negative epoch: the fallback's slot

    async def release(self, key: str, token: Token, outcome: Outcome,
                      retry_after: float | None = None) -> None:
        if token[0] < 0:
            assert self.fallback is not None
            self.fallback.release_now(key, (-1 - token[0], token[1]), outcome, retry_after)
            return
        if self.fallback is None:
            try:
                await self.actor.release.remote(key, token, outcome, retry_after)
            except Exception as e:  # noqa: BLE001
                self._lose(e)

    async def _give_back(self, ref: Any, key: str) -> None:
        with contextlib.suppress(Exception):
            await self.actor.release.remote(key, tuple(await ref), "other")

    def _lose(self, e: BaseException) -> None:
        if self.fallback is None:
            print(f"proctor: the run's model-call limiter is unreachable ({type(e).__name__}); "
                  "this node limits its own calls from now on", file=sys.stderr)
            self.fallback = LocalLimiter()
