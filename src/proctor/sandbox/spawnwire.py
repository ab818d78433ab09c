"""The bytes and descriptors of a request to a box's spawner (spawn.py): its strings
encoded as the kernel takes them, a memfd for those too long to go inline, a command's
pipes, and its stdin fed without blocking the event loop."""

from __future__ import annotations

import asyncio
import errno
import os
import sys
from collections.abc import Sequence
from typing import Any

MAX_INLINE = 16384  # a request's strings in its own message up to this (spawner.c's)
_FS_ENCODING = sys.getfilesystemencoding()


def encode_strings(items: Sequence[str]) -> bytes:
    """`items` each NUL-terminated, encoded as os.fsencode does (UTF-8, surrogateescape):
    joined first, one encode for all."""
    try:
        text = "\0".join(items)
    except TypeError:  # a path object among them
        text = "\0".join(os.fsdecode(s) for s in items)
    if text.count("\0") != len(items) - 1:
        raise ValueError("embedded null byte")
    return text.encode(_FS_ENCODING, "surrogateescape") + b"\0"


def memfd(data: bytes) -> int:
    fd = os.memfd_create("proctor-request", os.MFD_CLOEXEC)
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
    return fd


async def feed_stdin(loop: asyncio.AbstractEventLoop, fd: int, data: bytes) -> None:
    """Write `data` to the command's stdin without blocking the loop, then close it."""
    os.set_blocking(fd, False)
    view = memoryview(data)
    try:
        while view:
            try:
                view = view[os.write(fd, view):]
            except BlockingIOError:
                ready = loop.create_future()
                loop.add_writer(fd, _resolve, ready)
                try:
                    await ready
                finally:
                    loop.remove_writer(fd)
    except OSError as e:  # the command closed its stdin: what it did not read is dropped
        if e.errno != errno.EPIPE:
            raise
    finally:
        os.close(fd)


def _resolve(fut: asyncio.Future[Any]) -> None:
    if not fut.done():
        fut.set_result(None)


def open_request(strings: bytes, stdin: bool) -> list[int]:
    """A RUN request's descriptors: the memfd (`strings`: cwd, argv, environment; -1 when
    they fit inline), then the stdout and stderr pipes and, with `stdin`, stdin's (read end,
    write end each); none left open if one cannot be made."""
    fds: list[int] = []
    try:
        fds.append(memfd(strings) if len(strings) > MAX_INLINE else -1)
        fds += os.pipe()
        fds += os.pipe()
        if stdin:
            fds += os.pipe()
    except (OSError, ValueError):
        close_all(fds)
        raise
    return fds


def close_all(fds: Sequence[int]) -> None:
    for fd in fds:
        if fd >= 0:
            try:  # noqa: SIM105 (a suppress() a descriptor costs more than its close)
                os.close(fd)
            except OSError:
                pass
