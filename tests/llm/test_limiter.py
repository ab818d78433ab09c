"""The adaptive limit of model calls in flight (providers/limiter.py).

The controller's logic is tested step by step with a given clock (no waiting, nothing timed);
`LocalLimiter` with a clock the test moves; the whole thing against a real `proctor mock-llm`
that refuses calls above N in flight, through the real OpenAI SDK and `proctor run`, is in
tests/llm/test_rate_limit_run.py.
"""

from __future__ import annotations

import asyncio

import pytest

from proctor.providers.base import ProviderError
from proctor.providers.limiter import (
    PROBE,
    START,
    Aimd,
    LocalLimiter,
    endpoint_key,
    outcome_of,
)


def fill(a: Aimd) -> list[tuple[int, int]]:
    """Start calls until no slot is left; their tokens."""
    tokens = []
    while a.wait_for(0.0) == 0.0:
        tokens.append(a.start())
    return tokens


def test_slow_start_doubles_per_window_up_to_the_cap():
    a = Aimd(cap=20)
    assert a.slots == START
    sizes = []
    for _ in range(4):
        epochs = fill(a)
        sizes.append(len(epochs))
        for e in epochs:
            a.finish(e, "ok", 0.0)
    assert sizes == [START, 2 * START, 4 * START, 20]
    assert a.slots == 20 and a.max_in_flight == 20 and a.refused == 0


def test_one_decrease_per_window_of_refusals():
    a = Aimd(cap=16, limit=16)
    tokens = fill(a)
    assert len(tokens) == 16
    # Four refusals of calls started before any decrease: one overload, one decrease, to 0.7
    # of the limit (the refused calls found 12..15 calls in flight: more than that).
    for t in tokens[12:]:
        a.finish(t, "overload", 0.0)
    assert a.slots == 11 and a.decreases == 1 and a.refused == 4
    # A call started after the decrease is refused: a new overload, a new decrease.
    later = a.start()
    a.finish(later, "overload", 0.0)
    assert a.decreases == 2 and a.slots == 7  # 11.2 * 0.7 (it found 12 in flight)
    assert a.lowest_limit == 7


def test_a_refused_call_says_how_many_the_provider_takes():
    """A provider refusing above N in flight refuses the call that found N there: the limit
    drops to N at once, and the level refused is N + 1."""
    a = Aimd(cap=64, limit=64)
    tokens = [a.start() for _ in range(9)]
    for t in tokens[:5]:
        a.finish(t, "ok", 0.0)  # 4 in flight now; the provider takes 3
    a.finish(tokens[6], "overload", 0.0)  # it found 6 in flight when it started
    assert a.slots == 6 and a.refused_at == 7
    b = Aimd(cap=64, limit=8)
    for t in [b.start() for _ in range(8)][3:]:  # found 3, 4, ... in flight: refused
        b.finish(t, "overload", 0.0)
    assert b.slots == 3 and b.refused_at == 4 and b.decreases == 1


def test_growth_slows_near_the_level_that_was_refused():
    a = Aimd(cap=32, limit=14)
    tokens = fill(a)
    a.finish(tokens[9], "overload", 0.0)  # it found 9 in flight: limit 9 (< 14 * 0.7)
    for t in tokens[:9] + tokens[10:]:
        a.finish(t, "other", 0.0)  # neither grows nor shrinks
    assert a.slots == 9 and a.refused_at == 10
    a.limit = 5.0  # as after further refusals

    def successes_to_grow_one() -> int:
        start, n = a.slots, 0
        while a.slots == start:
            a.finish(a.start(), "ok", 0.0)
            n += 1
        return n

    below = successes_to_grow_one()  # 5 -> 6: +1 per window (about `limit` successes)
    while a.slots < 9:
        successes_to_grow_one()
    near = successes_to_grow_one()  # 9 -> 10: probing where it was refused
    assert below <= 6 and near >= PROBE * 9 - 1, (below, near)


def test_retry_after_pauses_every_new_call_until_then():
    a = Aimd(cap=8)
    e1, e2 = a.start(), a.start()
    a.finish(e1, "overload", now=100.0, retry_after=2.5)
    assert a.wait_for(100.0) == pytest.approx(2.5)
    assert a.wait_for(101.0) == pytest.approx(1.5)
    a.finish(e2, "overload", now=100.5, retry_after=0.5)  # a shorter one does not shorten it
    assert a.wait_for(101.5) == pytest.approx(1.0)
    assert a.wait_for(102.5) == 0.0
    b = Aimd(cap=8)
    b.finish(b.start(), "overload", now=0.0, retry_after=3600)
    assert b.wait_for(0.0) == 60.0  # capped (MAX_PAUSE_S)


def test_a_fixed_limit_never_moves_nor_pauses():
    a = Aimd(cap=3, adaptive=False)
    epochs = fill(a)
    assert len(epochs) == 3 and a.wait_for(0.0) is None
    for e in epochs:
        a.finish(e, "overload", 0.0, retry_after=5)
    assert a.slots == 3 and a.wait_for(0.0) == 0.0 and a.refused == 3
    for _ in range(50):
        a.finish(a.start(), "ok", 0.0)
    assert a.slots == 3


def test_the_floor_is_one_and_other_errors_change_nothing():
    a = Aimd(cap=4, limit=1)
    a.finish(a.start(), "overload", 0.0)
    assert a.slots == 1 and a.wait_for(0.0) == 0.0
    before = a.limit
    a.finish(a.start(), "other", 0.0)
    assert a.limit == before


def test_what_counts_as_overload():
    assert outcome_of(429) == outcome_of(529) == "overload"
    assert outcome_of(503, "Service Unavailable: the engine is Overloaded") == "overload"
    assert outcome_of(503, "upstream connect error") == "other"
    assert outcome_of(500) == outcome_of(None) == outcome_of(400) == "other"
    assert endpoint_key("openai", None) == "openai"
    assert endpoint_key("local", "http://h:1/v1/") == "local@http://h:1/v1"


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


async def test_local_limiter_holds_callers_to_the_slots_and_counts_the_waits():
    clock = Clock()
    lim = LocalLimiter(clock)
    got = [await lim.acquire("k", cap=2) for _ in range(2)]
    third = asyncio.ensure_future(lim.acquire("k", cap=2))
    await asyncio.sleep(0)
    assert not third.done()  # both slots taken
    clock.now = 1.5
    lim.release_now("k", got[0], "ok")
    epoch = await asyncio.wait_for(third, 5)
    s = lim.stats()["k"]
    assert s["waited"] == 1 and s["wait_s"] == 1.5 and s["max_in_flight"] == 2 and s["calls"] == 3
    for e in (got[1], epoch):
        await lim.release("k", e, "ok")
    assert lim.gates["k"].aimd.in_flight == 0


async def test_local_limiter_waits_out_a_retry_after():
    lim = LocalLimiter()
    e = await lim.acquire("k", cap=4)
    lim.release_now("k", e, "overload", retry_after=0.2)
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    await lim.release("k", await lim.acquire("k", cap=4), "ok")
    assert loop.time() - t0 >= 0.19
    assert lim.stats()["k"]["waited"] == 1 and lim.stats()["k"]["refused"] == 1


async def test_a_cancelled_wait_takes_no_slot():
    lim = LocalLimiter()
    held = await lim.acquire("k", cap=1, adaptive=False)
    waiting = asyncio.ensure_future(lim.acquire("k", cap=1, adaptive=False))
    await asyncio.sleep(0)
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    lim.release_now("k", held, "ok")
    assert lim.gates["k"].aimd.in_flight == 0 and not lim.gates["k"].waiters


async def test_the_retrying_provider_takes_slots_of_the_installed_limiter():
    from proctor.providers import limiter
    from proctor.providers.retry import RetryingProvider, RetryPolicy
    from tests.llm.test_providers import USER, Flaky

    mine = limiter.LocalLimiter()
    previous = limiter.install(mine)
    try:
        inner = Flaky([ProviderError("HTTP 429", retryable=True, status=429)])
        p = RetryingProvider(inner, RetryPolicy(base_delay=0.001), limit_key="ep", limit=4)
        await asyncio.gather(*(p.complete("", USER, []) for _ in range(6)))
    finally:
        limiter.install(previous)
    s = mine.stats()["ep"]
    assert s["calls"] == 7 and s["refused"] == 1 and s["max_in_flight"] <= 4
    assert inner.peak <= 4


def test_try_acquire_takes_a_free_slot_at_once_else_says_none():
    clock = Clock()
    lim = LocalLimiter(clock)
    got = [lim.try_acquire("k", cap=2, adaptive=False) for _ in range(3)]
    assert got[0] is not None and got[1] is not None and got[2] is None  # both slots taken
    lim.release_now("k", got[0], "overload", retry_after=5.0)
    assert lim.try_acquire("k", cap=2, adaptive=False) is not None  # fixed: never paused
    adaptive = LocalLimiter(clock)
    token = adaptive.try_acquire("a", cap=4)
    adaptive.release_now("a", token, "overload", retry_after=5.0)
    assert adaptive.try_acquire("a", cap=4) is None  # paused by the Retry-After
    clock.now = 6.0
    assert adaptive.try_acquire("a", cap=4) is not None
    s = lim.stats()["k"]
    assert s["calls"] == 3 and s["waited"] == 0 and s["max_in_flight"] == 2


async def test_the_retrying_provider_awaits_this_process_limiter_only_when_it_must_wait():
    from proctor.providers import limiter
    from proctor.providers.retry import RetryingProvider, RetryPolicy
    from tests.llm.test_providers import USER, Flaky

    class Remote:  # a limiter elsewhere (Ray's actor): always awaited
        def __init__(self) -> None:
            self.local, self.asked = LocalLimiter(), []

        async def acquire(self, key, cap, adaptive=True):  # type: ignore[no-untyped-def]
            self.asked.append("acquire")
            return await self.local.acquire(key, cap, adaptive)

        async def release(self, key, token, outcome, retry_after=None):  # type: ignore[no-untyped-def]
            self.asked.append("release")
            await self.local.release(key, token, outcome, retry_after)

    mine = limiter.LocalLimiter()
    waits: list[str] = []
    real_acquire = mine.acquire

    async def acquire(*a, **kw):  # type: ignore[no-untyped-def]
        waits.append("waited")
        return await real_acquire(*a, **kw)

    mine.acquire = acquire  # type: ignore[method-assign]
    previous = limiter.install(mine)
    try:
        p = RetryingProvider(Flaky([]), RetryPolicy(base_delay=0.001), limit_key="ep", limit=2,
                             adaptive=False)
        await p.complete("", USER, [])
        assert waits == []  # a free slot: taken at once
        await asyncio.gather(*(p.complete("", USER, []) for _ in range(5)))
        assert waits  # more calls than slots: the others waited for one
        assert mine.stats()["ep"]["max_in_flight"] <= 2 and mine.stats()["ep"]["calls"] == 6
        remote = Remote()
        limiter.install(remote)
        await p.complete("", USER, [])
        assert remote.asked == ["acquire", "release"]
    finally:
        limiter.install(previous)
