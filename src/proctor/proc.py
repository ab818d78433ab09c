"""The one way proctor runs a child process: in a new process group, output captured up to a
cap (the rest counted and dropped), the whole group killed at the timeout or on
cancellation, always reaped. Used by the sandboxes, custom checks, services and secrets.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

# Every process a run starts carries this in its environment (the janitor's marker).
RUN_ID_VAR = "PROCTOR_RUN_ID"
# After the command exits, how long to wait for background children still holding its pipes.
PIPE_GRACE_S = 0.2


@dataclass
class ExecResult:
    exit_code: int | None  # None when killed by the timeout (or never started)
    stdout: str
    stderr: str
    duration_s: float
    started_at: float
    timed_out: bool = False
    truncated: bool = False  # stdout or stderr went past the output limit
    execs: list[list[str]] | None = None  # argv of every process run, when traced
    exec_parents: list[int] | None = None  # per exec: the index of the exec it descends from
    trace: Any = None  # when traced: all of it (programs, tree, exits, writes): sandbox.trace.Trace
    error: str | None = None  # the harness lost something (e.g. "recording lost")


def kill_group(pgid: int, sig: int = signal.SIGKILL) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


Feed = Callable[[int, bytes], None]  # (fd, chunk): sees every byte, before any cut


async def run(argv: Sequence[str], *, timeout: float, cwd: str | None = None,
              env: dict[str, str] | None = None, stdin: bytes | None = None,
              limit: int = 1_000_000, feed: Feed | None = None, on_start: Callable[[int], None] | None = None,
              pass_fds: Sequence[int] = ()) -> ExecResult:
    """Run `argv`; keep the first `limit` bytes of each stream. `on_start(pid)` learns the
    process group as soon as it exists (so an owner can kill it on close)."""
    started, t0 = time.time(), time.monotonic()
    loop = asyncio.get_running_loop()
    spawn = asyncio.ensure_future(loop.subprocess_exec(
        lambda: Capture(loop, limit, feed), *argv, cwd=cwd, env=env,
        stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        start_new_session=True, pass_fds=pass_fds))
    try:
        transport, proto = await asyncio.shield(spawn)
    except asyncio.CancelledError:
        # Cancelled mid-spawn (Ctrl-C): the process may exist already; kill its group.
        with contextlib.suppress(Exception):
            transport, _ = await spawn
            kill_group(transport.get_pid())
            transport.close()
        raise
    except (OSError, subprocess.SubprocessError) as e:  # cwd vanished, binary missing, ...
        return ExecResult(None, "", f"proctor: could not start {argv[0]}: {e}",
                          time.monotonic() - t0, started)
    pid = transport.get_pid()
    if on_start is not None:
        on_start(pid)
    if stdin is not None:
        pipe = transport.get_pipe_transport(0)
        with contextlib.suppress(OSError):
            pipe.write(stdin)
            pipe.write_eof()
    timed_out = False
    try:
        try:
            await asyncio.wait_for(asyncio.shield(proto.exited), timeout)
        except TimeoutError:
            timed_out = True
            kill_group(pid)
            await proto.exited
        # Background children may hold the pipes open; wait for them only a moment.
        if not proto.closed.done():
            await asyncio.wait([proto.closed], timeout=PIPE_GRACE_S)
    finally:
        if transport.get_returncode() is None:  # cancelled (Ctrl-C): leave nothing behind
            kill_group(pid)
        transport.close()
    note = f"\nproctor: timed out after {timeout:g}s" if timed_out else ""
    return ExecResult(
        exit_code=None if timed_out else transport.get_returncode(),
        stdout=proto.text(1), stderr=proto.text(2) + note,
        duration_s=time.monotonic() - t0, started_at=started, timed_out=timed_out,
        truncated=proto.dropped[1] > 0 or proto.dropped[2] > 0)


def run_sync(argv: Sequence[str], *, timeout: float, cwd: str | None = None,
             env: dict[str, str] | None = None, limit: int = 1_000_000) -> ExecResult:
    """`run` for code outside an event loop (spec loading): same group, cap and kill."""
    started, t0 = time.time(), time.monotonic()
    try:
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                start_new_session=True)
    except OSError as e:
        return ExecResult(None, "", f"could not start {argv[0]}: {e}", 0.0, started)
    timed_out = False
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        kill_group(proc.pid)
        out, err = proc.communicate()
    finally:
        kill_group(proc.pid)  # whatever it left running in the background
    return ExecResult(None if timed_out else proc.returncode,
                      out[:limit].decode("utf-8", errors="replace"),
                      err[:limit].decode("utf-8", errors="replace"),
                      time.monotonic() - t0, started, timed_out=timed_out,
                      truncated=len(out) > limit or len(err) > limit)


class Capture(asyncio.SubprocessProtocol):
    """Collects stdout/stderr (the first `limit` bytes of each; the rest is counted and
    dropped) and says when the process exited, separately from when its pipes closed."""

    def __init__(self, loop: asyncio.AbstractEventLoop, limit: int, feed: Feed | None):
        self.limit = limit
        self.feed = feed
        self.chunks: dict[int, list[bytes]] = {1: [], 2: []}
        self.kept = {1: 0, 2: 0}
        self.dropped = {1: 0, 2: 0}
        self.exited = loop.create_future()
        self.closed = loop.create_future()
        self._open = 2

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        if self.feed is not None:
            self.feed(fd, data)
        room = self.limit - self.kept[fd]
        if room >= len(data):
            self.chunks[fd].append(data)
            self.kept[fd] += len(data)
        else:
            if room > 0:
                self.chunks[fd].append(data[:room])
                self.kept[fd] = self.limit
            self.dropped[fd] += len(data) - max(room, 0)

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        if fd in (1, 2):
            self._open -= 1
            if self._open == 0 and not self.closed.done():
                self.closed.set_result(None)

    def process_exited(self) -> None:
        if not self.exited.done():
            self.exited.set_result(None)

    def text(self, fd: int) -> str:
        s = b"".join(self.chunks[fd]).decode("utf-8", errors="replace")
        if self.dropped[fd]:
            s += f"\n[proctor: {self.dropped[fd]} more bytes not kept]"
        return s


def use_fast_child_watcher() -> None:
    """Python 3.11's default child watcher starts a thread per process; pidfd is far cheaper."""
    import sys
    import warnings

    if sys.version_info >= (3, 12) or not hasattr(asyncio, "PidfdChildWatcher"):
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            watcher = asyncio.PidfdChildWatcher()
            asyncio.set_child_watcher(watcher)
            watcher.attach_loop(asyncio.get_running_loop())
        except (OSError, RuntimeError, NotImplementedError):
            pass
