"""Running a little code inside another process's network namespace (as root).

A socket belongs to the network namespace it was created in, whatever thread uses it later:
so a socket made in a box's or a container's namespace can be bound or connected there and
then served from proctor's own event loop. setns(2) affects only the calling thread, so the
work runs in a fresh thread that ends after; no pooled thread is ever left in a foreign
namespace.
"""

from __future__ import annotations

import ctypes
import os
import threading
from collections.abc import Callable
from typing import TypeVar

CLONE_NEWNET = 0x40000000
T = TypeVar("T")


def run_in(pid: int, work: Callable[[], T]) -> T:
    """`work()` run inside the network namespace of `pid` (blocking; call it off the loop)."""
    result: list[T | BaseException] = []

    def enter_and_work() -> None:
        libc = ctypes.CDLL(None, use_errno=True)
        fds: list[int] = []
        try:
            own = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
            fds.append(own)
            theirs = os.open(f"/proc/{pid}/ns/net", os.O_RDONLY)  # gone if the process died
            fds.append(theirs)
            if libc.setns(theirs, CLONE_NEWNET) != 0:
                raise OSError(ctypes.get_errno(), "setns into the network namespace failed")
            try:
                result.append(work())
            finally:
                if libc.setns(own, CLONE_NEWNET) != 0:  # cannot happen; never reuse the thread
                    os.abort()
        except BaseException as e:
            result.append(e)
        finally:
            for fd in fds:
                os.close(fd)

    t = threading.Thread(target=enter_and_work, name="proctor-netns")
    t.start()
    t.join()
    outcome = result[0]
    if isinstance(outcome, BaseException):
        raise outcome
    return outcome
