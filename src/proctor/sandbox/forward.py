"""Reaching chosen TCP endpoints from inside a box's private network namespace.

The box's network has only loopback. For each endpoint the trial may reach (its own services,
a model proxy), proctor binds a listening socket at the *same* address and port inside the
box's network namespace (as root, from a short-lived thread that enters it with setns(2);
otherwise a helper process enters the box's user and network namespaces and hands the socket
back over a Unix socket, SCM_RIGHTS). proctor accepts on it in its own event loop and connects to the real
endpoint on the host side. Nothing else of the host network exists inside: not the host's
loopback servers, not another trial's services.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import socket
import sys
from collections import Counter
from collections.abc import Awaitable, Callable

from proctor import netns, proc

# Runs inside the box's network namespace: bind each address, send the sockets back.
_HELPER = """
import socket, sys
out = socket.socket(fileno=int(sys.argv[1]))
fds = []
for spec in sys.argv[2:]:
    host, port = spec.rsplit(":", 1)
    s = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((host, int(port)))
    s.listen(256)
    fds.append(s.fileno())
socket.send_fds(out, [b"ok"], fds)
"""

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]
BUFFER = 65536


async def listen_inside(box_pid: int, addresses: list[tuple[str, int]],
                        enter_user: bool) -> list[socket.socket]:
    """Listening sockets bound at `addresses` inside the network namespace of `box_pid`."""
    if not addresses:
        return []
    if not enter_user:  # root: a thread of ours can enter the namespace and come back
        socks = await asyncio.to_thread(_in_namespace, box_pid, addresses)
    else:
        socks = await _with_helper(box_pid, addresses)
    for s in socks:
        s.setblocking(False)
    return socks


def _bind(addresses: list[tuple[str, int]]) -> list[socket.socket]:
    out = []
    for host, port in addresses:
        s = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((host, port))
        s.listen(256)
        out.append(s)
    return out


def _in_namespace(box_pid: int, addresses: list[tuple[str, int]]) -> list[socket.socket]:
    return netns.run_in(box_pid, lambda: _bind(addresses))


async def _with_helper(box_pid: int, addresses: list[tuple[str, int]]) -> list[socket.socket]:
    """Without root, entering the box's user namespace takes a process of its own."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    argv = [shutil.which("nsenter") or "nsenter", "-t", str(box_pid), "-n", "-U",
            "--preserve-credentials", "--", sys.executable, "-I", "-S", "-c", _HELPER,
            str(theirs.fileno()), *(f"{h}:{p}" for h, p in addresses)]
    try:
        res = await proc.run(argv, timeout=10, pass_fds=(theirs.fileno(),))
        if res.exit_code != 0:
            raise OSError(f"could not open {addresses} inside the sandbox: {res.stderr[-300:]}")
        _, fds, _, _ = await asyncio.to_thread(socket.recv_fds, ours, 16, len(addresses))
    finally:
        theirs.close()
        ours.close()
    return [socket.socket(fileno=fd) for fd in fds]


class Forwarder:
    """Serves listening sockets from inside a box; counts connections per address."""

    def __init__(self) -> None:
        self.servers: list[asyncio.base_events.Server] = []
        self.connections: Counter[tuple[str, int]] = Counter()
        self._tasks: set[asyncio.Task] = set()

    async def serve(self, sock: socket.socket, handler: Handler) -> None:
        async def tracked(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            task = asyncio.current_task()
            if task is not None:
                self._tasks.add(task)
            try:
                await handler(reader, writer)
            finally:
                self._tasks.discard(task)  # type: ignore[arg-type]

        self.servers.append(await asyncio.start_server(tracked, sock=sock))

    async def forward(self, sock: socket.socket, target: tuple[str, int]) -> None:
        """Everything accepted on `sock` is piped to `target` on the host side."""
        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            self.connections[target] += 1
            try:
                up_r, up_w = await asyncio.open_connection(*target)
            except OSError:
                writer.close()
                return
            await pipe_both(reader, writer, up_r, up_w)

        await self.serve(sock, handle)

    async def close(self) -> None:
        for s in self.servers:
            s.close()
        # A connection whose far end keeps it open (an HTTP keep-alive upstream of the
        # egress proxy) would outlive the trial: end it with the sandbox.
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        for s in self.servers:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(s.wait_closed(), 1)
        self.servers.clear()


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

