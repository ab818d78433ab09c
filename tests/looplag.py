"""How long proctor's event loop is held by any one callback: its loop-lag monitor.

Every callback the loop runs (a task's step, a reader, a timer) is timed by the loop thread's
own scheduler counters (/proc/thread-self/schedstat): the time it ran on a CPU plus the time
it was blocked (sleeping in a system call: a `select`, a synchronous read), leaving out the
time it only waited for a CPU. So on a loaded shared machine a callback that was merely
preempted does not count, and one that blocks or computes for long does, whatever the load:
what the test measures is proctor's doing, not the machine's.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

SCHEDSTAT = Path("/proc/thread-self/schedstat")


def _counters() -> tuple[int, int]:
    """ns this thread has run on a CPU, and waited for one (runnable, not running)."""
    ran, waited, _ = SCHEDSTAT.read_text().split()
    return int(ran), int(waited)


def _what(handle: asyncio.events.Handle) -> str:
    """A callback in words: a task's step names the task's coroutine."""
    task = getattr(handle._callback, "__self__", None)
    coro = getattr(task, "get_coro", None)
    return repr(coro()) if coro is not None else repr(handle)


class LoopStalls:
    """`with LoopStalls() as s:` ... `s.worst_ms`: the longest any loop callback held the
    loop (on a CPU or blocked), and `s.where`, what that callback was."""

    def __init__(self) -> None:
        self.worst_ms = 0.0
        self.where = ""
        self._saved = asyncio.events.Handle._run

    def __enter__(self) -> LoopStalls:
        monitor, run = self, self._saved

        def timed(handle: asyncio.events.Handle) -> None:
            t0, (r0, w0) = time.perf_counter_ns(), _counters()
            try:
                run(handle)
            finally:
                r1, w1 = _counters()
                held = (time.perf_counter_ns() - t0 - (w1 - w0)) / 1e6
                if held > monitor.worst_ms:
                    monitor.worst_ms = held
                    monitor.where = (f"{_what(handle)[:300]} ({(r1 - r0) / 1e6:.0f} ms on a "
                                     "CPU, the rest blocked)")

        asyncio.events.Handle._run = timed  # type: ignore[method-assign]
        return self

    def __exit__(self, *exc: object) -> None:
        asyncio.events.Handle._run = self._saved  # type: ignore[method-assign]

    @staticmethod
    def available() -> bool:
        return SCHEDSTAT.exists()
