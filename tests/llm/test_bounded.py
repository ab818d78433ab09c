"""agents/llm.py `bounded`: the llm agent's model call within the time left. A call that
answers without waiting (an in-process model) costs no timer; one that waits is awaited to
its answer, cut at the time left, and cancelled with its caller, as `await` in
`asyncio.timeout` would."""

from __future__ import annotations

import asyncio

import pytest

from proctor.agents.llm import bounded


def _counting_timers(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    loop = asyncio.get_running_loop()
    made: list[float] = []
    real = loop.call_at

    def call_at(when, callback, *args, **kw):  # type: ignore[no-untyped-def]
        made.append(when)
        return real(when, callback, *args, **kw)

    monkeypatch.setattr(loop, "call_at", call_at)
    return made


async def _answer_at_once(value: str) -> str:
    return value


async def _answer_after_waiting(value: str, future: asyncio.Future[str]) -> str:
    await asyncio.sleep(0)
    got = await future
    await asyncio.sleep(0)
    return value + got


def test_an_answer_without_waiting_makes_no_timer(monkeypatch):
    async def main() -> None:
        made = _counting_timers(monkeypatch)
        for i in range(3):
            assert await bounded(_answer_at_once(f"answer {i}"), 60.0) == f"answer {i}"
        assert made == []

    asyncio.run(main())


def test_a_call_that_waits_is_awaited_to_its_answer_within_one_timeout(monkeypatch):
    async def main() -> None:
        made = _counting_timers(monkeypatch)
        future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        asyncio.get_running_loop().call_soon(future.set_result, "+late")
        assert await bounded(_answer_after_waiting("early", future), 60.0) == "early+late"
        assert len(made) == 1  # the timeout's

    asyncio.run(main())


def test_a_call_past_its_time_is_cut_and_told_so():
    ended: list[str] = []

    async def hangs() -> str:
        try:
            await asyncio.sleep(3600)
        finally:
            ended.append("cancelled inside the call")
        return "never"

    async def main() -> None:
        with pytest.raises(TimeoutError):
            await bounded(hangs(), 0.01)
        assert ended == ["cancelled inside the call"]
        assert asyncio.current_task().cancelling() == 0  # type: ignore[union-attr]

    asyncio.run(main())


def test_cancelling_the_caller_cancels_the_call():
    ended: list[str] = []
    started = asyncio.Event()

    async def hangs() -> str:
        started.set()
        try:
            await asyncio.sleep(3600)
        finally:
            ended.append("cancelled")
        return "never"

    async def main() -> None:
        task = asyncio.ensure_future(bounded(hangs(), 3600))
        await started.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert ended == ["cancelled"]

    asyncio.run(main())


def test_a_call_that_handles_the_cancellation_and_answers_is_given_that_answer():
    async def answers_anyway(future: asyncio.Future[None]) -> str:
        try:
            await future
        except asyncio.CancelledError:
            return "answered when stopped"
        return "not stopped"

    async def main() -> None:
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        task = asyncio.ensure_future(bounded(answers_anyway(future), 3600))
        await asyncio.sleep(0)
        task.cancel()
        assert await task == "answered when stopped"

    asyncio.run(main())


def test_errors_come_out_as_they_are_before_and_after_waiting():
    async def fails_at_once() -> str:
        raise ValueError("at once")

    async def fails_later() -> str:
        await asyncio.sleep(0)
        raise KeyError("later")

    async def main() -> None:
        with pytest.raises(ValueError, match="at once"):
            await bounded(fails_at_once(), 60.0)
        with pytest.raises(KeyError, match="later"):
            await bounded(fails_later(), 60.0)

    asyncio.run(main())


def test_an_awaitable_that_is_no_coroutine_is_awaited_as_it_is():
    class Answer:
        def __await__(self):  # type: ignore[no-untyped-def]
            yield from asyncio.sleep(0).__await__()
            return "from __await__"

    async def main() -> None:
        future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        asyncio.get_running_loop().call_soon(future.set_result, "from a future")
        assert await bounded(future, 60.0) == "from a future"
        assert await bounded(Answer(), 60.0) == "from __await__"
        never: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        with pytest.raises(TimeoutError):
            await bounded(never, 0.01)
        assert never.cancelled()

    asyncio.run(main())
