"""services/container.py's pipe from the host to an image service's port, on its own: this
process's own network namespace stands for the service container's (no engine needed)."""

from __future__ import annotations

import asyncio
import os

import pytest

from proctor.services.container import _piper
from tests.helpers.streams import holding_server, loop_exceptions, loop_turns


@pytest.mark.skipif(os.geteuid() != 0, reason="entering a network namespace needs root")
async def test_a_connection_cancelled_mid_copy_reaches_no_exception_handler():
    # A connection through the pipe is mid-copy when its task is cancelled (as asyncio.run
    # cancels what is left when a run's loop ends). Python 3.11's stream server calls
    # task.exception() in a done-callback of the handler's task: a task ending cancelled made
    # asyncio print "Exception in callback ... CancelledError" (forward.py's Forwarder had it).
    with loop_exceptions() as seen:
        async with holding_server(b"hello") as upstream:
            pipe = await asyncio.start_server(_piper(os.getpid(), upstream.port), "127.0.0.1", 0)
            client_r, client_w = await asyncio.open_connection(*pipe.sockets[0].getsockname()[:2])
            try:
                client_w.write(b"hello")
                await asyncio.wait_for(upstream.received.wait(), 10)
                handlers = [t for t in asyncio.all_tasks()
                            if "_piper" in getattr(t.get_coro(), "__qualname__", "")]
                assert len(handlers) == 1
                handlers[0].cancel()
                await asyncio.wait(handlers, timeout=10)
                assert await asyncio.wait_for(client_r.read(), 10) == b""  # the client's end closed
                await loop_turns()
            finally:
                client_w.close()
                pipe.close()
    assert seen == []
