"""The output pipes of a box's running commands (sandbox/spawn.py), read into each command's
Capture: by the event loop through one epoll of the box's own once a command has run a
while (`PipeReader.watch`), or all at once when it ends (`PipeReader.drain_all`)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import select

from proctor import proc


class Pipes:
    """A box's running commands' output pipes, in an epoll of their own that the event loop
    watches: a pipe costs one epoll_ctl to add and one to remove, not asyncio's reader
    bookkeeping (a handle, a selector key, its maps) twice a command. Level-triggered, as
    the loop's: a pipe with more to read is reported again."""

    def __init__(self, loop: asyncio.AbstractEventLoop):
        self.loop = loop
        self.epoll = select.epoll()
        self.readers: dict[int, PipeReader] = {}
        loop.add_reader(self.epoll.fileno(), self._ready)

    def add(self, reader: PipeReader) -> None:
        self.epoll.register(reader.fd, select.EPOLLIN)
        self.readers[reader.fd] = reader

    def remove(self, fd: int) -> None:
        del self.readers[fd]
        if not self.epoll.closed:  # a command's end after its box's
            self.epoll.unregister(fd)

    def _ready(self) -> None:
        for fd, _ in self.epoll.poll(0):
            reader = self.readers.get(fd)
            if reader is not None:  # not closed by an earlier one of this batch
                reader.drain()

    def close(self) -> None:
        if not self.epoll.closed:
            with contextlib.suppress(ValueError, OSError):
                self.loop.remove_reader(self.epoll.fileno())
            self.epoll.close()


class PipeReader:
    """One output pipe of a command, read into its Capture: in the event loop once watched
    (`watch`), or all at once (`drain_all`)."""

    def __init__(self, pipes: Pipes, fd: int, stream: int, cap: proc.Capture):
        self.pipes, self.fd, self.stream, self.cap = pipes, fd, stream, cap
        self.open = True
        self.watched = False
        os.set_blocking(fd, False)

    def watch(self) -> None:
        if self.open and not self.watched:
            self.watched = True
            self.pipes.add(self)

    def drain_all(self) -> None:
        """Read what the pipe holds, to its end if its writers are gone; else watched. A
        few reads at most (a pipe holds 64 KiB): a background child writing on keeps the
        loop's other work going, read in the loop like a long command's."""
        for _ in range(4):
            if not (self.open and self.drain()):
                break
        if self.open:
            self.watch()

    def drain(self) -> bool:
        """One read into the capture (the loop calls again while there is more, as for the
        replies); whether it got anything."""
        try:
            data = os.read(self.fd, 65536)
        except (BlockingIOError, InterruptedError):
            return False
        except OSError:
            data = b""
        if not data:
            self.close()
            self.cap.pipe_connection_lost(self.stream, None)
            return False
        self.cap.pipe_data_received(self.stream, data)
        return True

    def close(self) -> None:
        if self.open:
            self.open = False
            if self.watched:
                self.pipes.remove(self.fd)
            os.close(self.fd)
