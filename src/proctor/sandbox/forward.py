"""Reaching chosen TCP endpoints from inside a box's private network namespace.

The box's network has only loopback. For each endpoint the trial may reach (its own services,
a model proxy), proctor binds a listening socket at the *same* address and port inside the
sandbox's network namespace — a box's spawner binds it (sandbox/spawn.py, the one way into a
box), a container's namespace is entered by a short-lived thread with setns(2), as root
(`listen_inside`) — and accepts on it in its own event loop, connecting to the real endpoint
on the host side. Nothing else of the host network exists inside: not the host's loopback
servers, not another trial's services.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections import Counter
from collections.abc import Awaitable, Callable

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]
BUFFER = 65536


async def listen_inside(pid: int, host: str, port: int) -> socket.socket:
    """A listening socket bound at host:port in the network namespace of process `pid`
    (a container's init; proctor is root)."""
    from proctor import netns  # a run with ports to forward only (start-up)

    sock = await asyncio.to_thread(netns.run_in, pid, lambda: _bind(host, port))
    sock.setblocking(False)
    return sock


def _bind(host: str, port: int) -> socket.socket:
    s = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    try:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((host, port))
        s.listen(256)
    except BaseException:
        s.close()
        raise
    return s


class Forwarder:
    """Serves listening sockets from inside a box; counts connections per address. `close`
    ends the servers and every connection still being served (awaited: no task is left
    pending when the loop closes)."""

    CLOSE_TIMEOUT_S = 1.0

    def __init__(self) -> None:
        self.servers: list[asyncio.base_events.Server] = []
        self.connections: Counter[tuple[str, int]] = Counter()
        self._tasks: set[asyncio.Task[None]] = set()

    async def serve(self, sock: socket.socket, handler: Handler) -> None:
        async def tracked(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            task = asyncio.current_task()
            assert task is not None
            self._tasks.add(task)
            try:
                await handler(reader, writer)
            except asyncio.CancelledError:
                # Ended by end_connections (or the loop's shutdown): the task ends normally.
                # Python 3.11's stream server calls task.exception() in a done-callback, which
                # raises for a cancelled task and reaches the loop's exception handler
                # ("Exception in callback ... CancelledError" on stderr). Nobody awaits this
                # task but end_connections, which only waits for it to be done.
                pass
            finally:
                self._tasks.discard(task)
                writer.close()

        self.servers.append(await asyncio.start_server(tracked, sock=sock))

    async def forward(self, sock: socket.socket, target: tuple[str, int]) -> None:
        """Everything accepted on `sock` is piped to `target` on the host side."""
        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            self.connections[target] += 1
            try:
                up_r, up_w = await asyncio.open_connection(*target)
            except OSError:
                return
            await pipe_both(reader, writer, up_r, up_w)

        await self.serve(sock, handle)

    async def end_connections(self) -> None:
        """End every connection being served (the servers go on accepting)."""
        tasks = list(self._tasks)
        for t in tasks:
            t.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=self.CLOSE_TIMEOUT_S)

    async def close(self) -> None:
        servers, self.servers = self.servers, []
        for s in servers:
            s.close()
        await self.end_connections()
        for s in servers:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(s.wait_closed(), self.CLOSE_TIMEOUT_S)


async def pipe_both(a_r: asyncio.StreamReader, a_w: asyncio.StreamWriter,
                    b_r: asyncio.StreamReader, b_w: asyncio.StreamWriter) -> None:
    async def one_way(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        try:
            while data := await r.read(BUFFER):
                w.write(data)
                await w.drain()
        except (OSError, asyncio.IncompleteReadError):
            pass
        finally:
            with contextlib.suppress(OSError, RuntimeError):
                if w.can_write_eof():
                    w.write_eof()

    try:
        await asyncio.gather(one_way(a_r, b_w), one_way(b_r, a_w))
    finally:
        for w in (a_w, b_w):
            w.close()

