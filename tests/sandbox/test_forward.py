"""sandbox/forward.py's Forwarder on its own (no box: a loopback socket stands for the one bound
inside a box's namespace)."""

from __future__ import annotations

import asyncio
import socket
from typing import Any

from proctor.sandbox.forward import Forwarder


async def test_closing_mid_copy_reaches_no_exception_handler():
    # A connection's handler is mid-copy (the client sent, the upstream holds it open) when the
    # forwarder closes. Python 3.11's stream server calls task.exception() in a done-callback
    # of the handler's task: a task ending cancelled made asyncio print "Exception in callback
    # ... CancelledError" on stderr (seen under load at a trial's end, when a service
    # connection was still being copied).
    loop = asyncio.get_running_loop()
    seen: list[dict[str, Any]] = []
    loop.set_exception_handler(lambda _loop, context: seen.append(context))
    received, release = asyncio.Event(), asyncio.Event()

    async def upstream(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readexactly(5)
        received.set()
        await release.wait()  # holds the connection open (a model proxy's stream)
        writer.close()

    server = await asyncio.start_server(upstream, "127.0.0.1", 0)
    target = server.sockets[0].getsockname()[:2]
    sock = socket.create_server(("127.0.0.1", 0))
    sock.setblocking(False)
    fwd = Forwarder()
    await fwd.forward(sock, target)
    client_r, client_w = await asyncio.open_connection(*sock.getsockname()[:2])
    try:
        client_w.write(b"hello")
        await asyncio.wait_for(received.wait(), 10)
        await fwd.close()
        assert await asyncio.wait_for(client_r.read(), 10) == b""  # the client's end closed
        for _ in range(5):  # the done-callbacks run on the loop's next turns
            await asyncio.sleep(0)
    finally:
        release.set()
        client_w.close()
        server.close()
        loop.set_exception_handler(None)
    assert fwd.connections[target] == 1
    assert seen == []
