"""sandbox/forward.py's Forwarder on its own (no box: a loopback socket stands for the one bound
inside a box's namespace)."""

from __future__ import annotations

import asyncio
import socket

from proctor.sandbox.forward import Forwarder
from tests.helpers.streams import holding_server, loop_exceptions, loop_turns


async def test_closing_mid_copy_reaches_no_exception_handler():
    # A connection's handler is mid-copy (the client sent, the upstream holds it open) when the
    # forwarder closes. Python 3.11's stream server calls task.exception() in a done-callback
    # of the handler's task: a task ending cancelled made asyncio print "Exception in callback
    # ... CancelledError" on stderr (seen under load at a trial's end, when a service
    # connection was still being copied).
    with loop_exceptions() as seen:
        async with holding_server(b"hello") as upstream:
            target = ("127.0.0.1", upstream.port)
            sock = socket.create_server(("127.0.0.1", 0))
            sock.setblocking(False)
            fwd = Forwarder()
            await fwd.forward(sock, target)
            client_r, client_w = await asyncio.open_connection(*sock.getsockname()[:2])
            try:
                client_w.write(b"hello")
                await asyncio.wait_for(upstream.received.wait(), 10)
                await fwd.close()
                assert await asyncio.wait_for(client_r.read(), 10) == b""  # the client's end closed
                await loop_turns()
            finally:
                client_w.close()
    assert fwd.connections[target] == 1
    assert seen == []
