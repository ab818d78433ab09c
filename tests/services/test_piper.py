"""services/container.py's pipe from the host to an image service's port, on its own: this
process's own network namespace stands for the service container's (no engine needed)."""

from __future__ import annotations

import asyncio
import os
from typing import Any

import pytest

from proctor.services.container import _piper


@pytest.mark.skipif(os.geteuid() != 0, reason="entering a network namespace needs root")
async def test_a_connection_cancelled_mid_copy_reaches_no_exception_handler():
    # A connection through the pipe is mid-copy when its task is cancelled (as asyncio.run
    # cancels what is left when a run's loop ends). Python 3.11's stream server calls
    # task.exception() in a done-callback of the handler's task: a task ending cancelled made
    # asyncio print "Exception in callback ... CancelledError" (forward.py's Forwarder had it).
    loop = asyncio.get_running_loop()
    seen: list[dict[str, Any]] = []
    loop.set_exception_handler(lambda _loop, context: seen.append(context))
    received, release = asyncio.Event(), asyncio.Event()

    async def service(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readexactly(5)
        received.set()
        await release.wait()  # holds the connection open
        writer.close()

    upstream = await asyncio.start_server(service, "127.0.0.1", 0)
    pipe = await asyncio.start_server(_piper(os.getpid(), upstream.sockets[0].getsockname()[1]),
                                      "127.0.0.1", 0)
    client_r, client_w = await asyncio.open_connection(*pipe.sockets[0].getsockname()[:2])
    try:
        client_w.write(b"hello")
        await asyncio.wait_for(received.wait(), 10)
        handlers = [t for t in asyncio.all_tasks()
                    if "_piper" in getattr(t.get_coro(), "__qualname__", "")]
        assert len(handlers) == 1
        handlers[0].cancel()
        await asyncio.wait(handlers, timeout=10)
        assert await asyncio.wait_for(client_r.read(), 10) == b""  # the client's end closed
        for _ in range(5):  # the done-callbacks run on the loop's next turns
            await asyncio.sleep(0)
    finally:
        release.set()
        client_w.close()
        pipe.close()
        upstream.close()
        loop.set_exception_handler(None)
    assert seen == []
