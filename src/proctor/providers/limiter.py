"""How many model calls are in flight, per endpoint: a limit that adapts to the provider.

One `Gate` per endpoint (provider + base_url) holds an `Aimd` controller, and every model call
of the run (the llm agent's, a judge's, a real agent's through the model proxy) takes a slot
from it first. The controller is additive-increase / multiplicative-decrease with two
refinements: a slow start (+1 per success until the first refusal, so an endpoint without a
limit is soon used at the cap) and a cautious probe above the level that was last refused
(+1 per PROBE windows there instead of +1 per window, so a provider that refuses above N sees
few calls above N). A refusal (429, 529, a 503 saying overload) lowers the limit once per
window (refusals of calls started before the last decrease are the same overload): to 0.7 of
it, or to the number of calls that were already in flight when the refused one started, if
fewer (a provider that refuses above N in flight refuses the call that found N there). A
refusal's `Retry-After` pauses every new call to that endpoint until then.

`Aimd` is pure (no clock, no I/O: `now` is given), so its logic is tested without waiting.
`LocalLimiter` is the run's, in one process; with `--executor ray` every node asks one named
actor holding a `LocalLimiter` (executors/ray_limiter.py). `current()` is the one the calls of
this process use; the engine (run/execute.py) installs a fresh one per run and reads its
`stats()` at the end (results.json `summary.rate_limit`, docs/models.md "Rate limits").
"""

from __future__ import annotations

import asyncio
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from proctor.fieldwise import Fieldwise

Outcome = Literal["ok", "overload", "other"]
# What `start` gives a call, for `finish`: (the epoch it started in, the calls in flight then).
Token = tuple[int, int]

START = 4  # slots before anything is known (or the cap, if lower)
DECREASE = 0.7  # a refusal multiplies the limit by this (CUBIC's: 0.5 wastes a small limit)
PROBE = 8  # above the last refused level, growth is this many times slower
MAX_PAUSE_S = 60.0  # a Retry-After longer than this pauses new calls this long only


def outcome_of(status: int | None, message: str = "") -> Outcome:
    """A refusal for load (the provider asks for fewer calls), or anything else."""
    if status in (429, 529) or (status == 503 and "overload" in message.lower()):
        return "overload"
    return "other"


@dataclass(eq=False, repr=False)
class Aimd(Fieldwise):
    """An endpoint's adaptive limit of model calls in flight (additive increase, cut on refusal)."""
    cap: int  # [providers.X] max_concurrency: the limit never goes above it
    adaptive: bool = True  # False: a fixed limit of `cap` (the old semaphore), no pauses
    limit: float = 0.0
    in_flight: int = 0
    epoch: int = 0  # bumped by each decrease; a call remembers the epoch it started in
    refused_at: float = 0.0  # the in-flight count of the last refusal (0: none yet)
    paused_until: float = 0.0
    # What happened, for the run's summary:
    calls: int = 0
    refused: int = 0
    waited: int = 0
    wait_s: float = 0.0
    max_in_flight: int = 0
    lowest_limit: int = 0
    decreases: int = 0

    def __post_init__(self) -> None:
        self.cap = max(1, self.cap)
        if not self.limit:
            self.limit = float(self.cap if not self.adaptive else min(self.cap, START))
        self.lowest_limit = self.slots

    @property
    def slots(self) -> int:
        return max(1, int(self.limit))

    def wait_for(self, now: float) -> float | None:
        """0: a call may start now; seconds: paused by a Retry-After until then; None: every
        slot is taken (wait for a call to finish)."""
        if now < self.paused_until:
            return self.paused_until - now
        return 0.0 if self.in_flight < self.slots else None

    def start(self) -> Token:
        """A call starts; its token (give it back to `finish`)."""
        token = (self.epoch, self.in_flight)
        self.in_flight += 1
        self.calls += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        return token

    def finish(self, token: Token, outcome: Outcome, now: float,
               retry_after: float | None = None) -> None:
        epoch, found = token  # `found`: the calls already in flight when this one started
        self.in_flight = max(0, self.in_flight - 1)
        if outcome == "overload":
            self.refused += 1
            if not self.adaptive:
                return
            if retry_after:
                self.paused_until = max(self.paused_until, now + min(retry_after, MAX_PAUSE_S))
            if epoch == self.epoch:  # the first refusal of this window
                self.refused_at = float(found + 1)
                self.limit = max(1.0, min(self.limit * DECREASE, float(found)))
                self.epoch += 1
                self.decreases += 1
                self.lowest_limit = min(self.lowest_limit, self.slots)
        elif outcome == "ok" and self.adaptive:
            if not self.refused_at:
                step = 1.0  # slow start: doubles per window
            elif self.limit + 1 < self.refused_at:
                step = 1.0 / self.limit  # +1 per window
            else:
                step = 1.0 / (self.limit * PROBE)  # near where it was refused: probe slowly
            self.limit = min(float(self.cap), self.limit + step)

    def summary(self) -> dict[str, Any]:
        return {"calls": self.calls, "refused": self.refused, "waited": self.waited,
                "wait_s": round(self.wait_s, 3), "max_in_flight": self.max_in_flight,
                "final_limit": self.slots, "lowest_limit": self.lowest_limit,
                "cap": self.cap, "adaptive": self.adaptive}


@dataclass(eq=False, repr=False)
class Gate(Fieldwise):
    """One endpoint's controller and the calls waiting for a slot."""

    aimd: Aimd
    waiters: list[asyncio.Future[None]] = field(default_factory=list)


class Limiter(Protocol):
    async def acquire(self, key: str, cap: int, adaptive: bool = True) -> Token: ...

    async def release(self, key: str, token: Token, outcome: Outcome,
                      retry_after: float | None = None) -> None: ...


class LocalLimiter:
    """The limiter of one process: gates by endpoint key, for any event loop."""

    def __init__(self, clock: Any = time.monotonic):
        self.clock = clock
        self.gates: dict[str, Gate] = {}
        self._lock = threading.Lock()  # a node's loop and Ray's may both call in

    def _gate(self, key: str, cap: int, adaptive: bool) -> Gate:
        gate = self.gates.get(key)
        if gate is None:
            gate = self.gates[key] = Gate(Aimd(cap, adaptive))
        return gate

    def try_acquire(self, key: str, cap: int, adaptive: bool = True) -> Token | None:
        """A slot at once when one is free (nothing paused, nothing to wait for), as
        `acquire`'s first look gives it; else None (then `acquire` waits for one)."""
        with self._lock:
            aimd = self._gate(key, cap, adaptive).aimd
            return aimd.start() if aimd.wait_for(self.clock()) == 0.0 else None

    async def acquire(self, key: str, cap: int, adaptive: bool = True) -> Token:
        loop = asyncio.get_running_loop()
        since: float | None = None
        while True:
            with self._lock:
                gate = self._gate(key, cap, adaptive)
                now = self.clock()
                wait = gate.aimd.wait_for(now)
                if wait == 0.0:
                    if since is not None:
                        gate.aimd.waited += 1
                        gate.aimd.wait_s += now - since
                    return gate.aimd.start()
                since = now if since is None else since
                woken: asyncio.Future[None] = loop.create_future()
                gate.waiters.append(woken)
            try:
                await asyncio.wait_for(woken, wait)
            except TimeoutError:
                pass
            finally:
                with self._lock:
                    if woken in gate.waiters:
                        gate.waiters.remove(woken)

    async def release(self, key: str, token: Token, outcome: Outcome,
                      retry_after: float | None = None) -> None:
        self.release_now(key, token, outcome, retry_after)

    def release_now(self, key: str, token: Token, outcome: Outcome,
                    retry_after: float | None = None) -> None:
        with self._lock:
            gate = self.gates.get(key)
            if gate is None:
                return
            gate.aimd.finish(token, outcome, self.clock(), retry_after)
            waiters, gate.waiters = gate.waiters, []
        for w in waiters:  # each looks again, first come first
            w.get_loop().call_soon_threadsafe(_wake, w)

    def stats(self) -> dict[str, dict[str, Any]]:
        with self._lock:
            return {key: g.aimd.summary() for key, g in self.gates.items()}


def _wake(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


def endpoint_key(provider: str, base_url: str | None) -> str:
    """The endpoint a limit belongs to: "openai", or "ollama@http://localhost:11434/v1"."""
    return f"{provider}@{base_url.rstrip('/')}" if base_url else provider


_current: Limiter = LocalLimiter()


def current() -> Limiter:
    return _current


def install(limiter: Limiter) -> Limiter:
    """Make `limiter` the one this process's model calls use; returns the previous one."""
    global _current
    previous, _current = _current, limiter
    return previous
