"""For tests of what proctor's stream servers leave when a connection's task is cancelled: the
loop's exception handler's reports, collected, and an upstream server that holds each
connection open once it has read from it (a model proxy's stream, a database session)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import Any


@contextlib.contextmanager
def loop_exceptions() -> Iterator[list[dict[str, Any]]]:
    """What reaches the running loop's exception handler meanwhile (asyncio would print it)."""
    loop = asyncio.get_running_loop()
    seen: list[dict[str, Any]] = []
    loop.set_exception_handler(lambda _loop, context: seen.append(context))
    try:
        yield seen
    finally:
        loop.set_exception_handler(None)


@dataclass
class Held:
    port: int
    received: asyncio.Event = field(default_factory=asyncio.Event)  # its first bytes came
    release: asyncio.Event = field(default_factory=asyncio.Event)


@contextlib.asynccontextmanager
async def holding_server(first: bytes) -> AsyncIterator[Held]:
    """A server on 127.0.0.1 that reads `first` from a connection, then holds it open until
    released (at the latest when the block ends)."""
    held = Held(0)

    async def hold(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readexactly(len(first))
        held.received.set()
        await held.release.wait()
        writer.close()

    server = await asyncio.start_server(hold, "127.0.0.1", 0)
    held.port = server.sockets[0].getsockname()[1]
    try:
        yield held
    finally:
        held.release.set()
        server.close()


async def loop_turns(n: int = 5) -> None:
    """Let the loop turn `n` times (done-callbacks run on the turn after a task ends)."""
    for _ in range(n):
        await asyncio.sleep(0)
