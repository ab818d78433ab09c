"""The one way proctor runs a child process: in a new process group, output captured up to a
cap (the rest counted and dropped), the whole group killed at the timeout or on
cancellation, always reaped. Used by the sandboxes, custom checks, services and secrets.

* `run` (in the event loop) and `run_sync` (outside one): a command to its end, with a
  timeout;
* `start` / `stop`: a long-lived child (a database server, a box), in a process group of
  its own, killed with proctor at exit (and by the kernel if proctor dies, where asked),
  always reaped;
* `kill_until_gone`: the one loop that kills a set of processes that may fork while it
  kills (a sandbox's leftovers); blocking, so called off the event loop.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, cast

from proctor.fieldwise import Fieldwise

# Every process a run starts carries this in its environment (the janitor's marker).
RUN_ID_VAR = "PROCTOR_RUN_ID"
# After the command exits, how long to wait for background children still holding its pipes.
PIPE_GRACE_S = 0.2


def environments() -> Iterator[tuple[int, list[bytes]]]:
    """(pid, its NAME=VALUE entries) of every process whose environment this process may read:
    how leftovers are found by the marker they carry (RUN_ID_VAR and the like)."""
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/environ", "rb") as f:
                env = f.read().split(b"\0")
        except OSError:  # gone, or not ours to read
            continue
        yield int(entry.name), env


@dataclass(eq=False, repr=False)
class ExecResult(Fieldwise):
    """How a command ended: exit code, output, times, and what was cut short."""
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
    stdout_bytes: bytes | None = None  # stdout as it came (up to the cap), when asked for


def kill_group(pgid: int, sig: int = signal.SIGKILL) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


Feed = Callable[[int, bytes], None]  # (fd, chunk): sees every byte, before any cut


async def run(argv: Sequence[str], *, timeout: float, cwd: str | None = None,
              env: dict[str, str] | None = None, stdin: bytes | None = None,
              limit: int = 1_000_000, feed: Feed | None = None, on_start: Callable[[int], None] | None = None,
              pass_fds: Sequence[int] = (), binary: bool = False) -> ExecResult:
    """Run `argv`; keep the first `limit` bytes of each stream (`binary`: stdout's bytes too,
    in `stdout_bytes`). `on_start(pid)` learns the process group as soon as it exists (so an
    owner can kill it on close)."""
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
        pipe = cast(asyncio.WriteTransport, transport.get_pipe_transport(0))
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
        truncated=proto.dropped[1] > 0 or proto.dropped[2] > 0,
        stdout_bytes=b"".join(proto.chunks[1]) if binary else None)


def run_sync(argv: Sequence[str], *, timeout: float, cwd: str | None = None,
             env: dict[str, str] | None = None, limit: int = 1_000_000,
             stdin: bytes | IO[bytes] | None = None, user: int | None = None,
             group: int | None = None) -> ExecResult:
    """`run` for code outside an event loop (spec loading, building, a server's helpers):
    same group, cap and kill; `stdin` bytes or an open file; as `user`/`group` when given
    (proctor is root)."""
    started, t0 = time.time(), time.monotonic()
    data = stdin if isinstance(stdin, bytes) else None
    source: int | IO[bytes] = (subprocess.PIPE if data is not None else
                               stdin if stdin is not None and not isinstance(stdin, bytes)
                               else subprocess.DEVNULL)
    try:
        proc = subprocess.Popen(argv, cwd=cwd, env=env, start_new_session=True, stdin=source,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                user=user, group=group, extra_groups=[] if user is not None else None)
    except (OSError, subprocess.SubprocessError) as e:
        return ExecResult(None, "", f"could not start {argv[0]}: {e}", 0.0, started)
    timed_out = False
    try:
        out, err = proc.communicate(data, timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        kill_group(proc.pid)
        out, err = proc.communicate()
    except BaseException:  # interrupted: leave nothing behind
        kill_group(proc.pid)
        proc.wait()
        raise
    finally:
        kill_group(proc.pid)  # whatever it left running in the background
    note = f"\nproctor: timed out after {timeout:g}s" if timed_out else ""
    return ExecResult(None if timed_out else proc.returncode,
                      out[:limit].decode("utf-8", errors="replace"),
                      err[:limit].decode("utf-8", errors="replace") + note,
                      time.monotonic() - t0, started, timed_out=timed_out,
                      truncated=len(out) > limit or len(err) > limit)


# -- long-lived children ---------------------------------------------------------------------

_SETPRIV = shutil.which("setpriv")
_LIVE: dict[int, subprocess.Popen[bytes]] = {}  # pid (= pgid) -> started, not yet reaped


def start(argv: Sequence[str], *, env: dict[str, str] | None = None,
          log: Path | None = None, stderr: int | None = None, pass_fds: Sequence[int] = (),
          user: int | None = None, group: int | None = None,
          die_with_parent: bool = False) -> subprocess.Popen[bytes]:
    """A long-lived child in a process group of its own; stdout and stderr appended to `log`
    (else stdout discarded and stderr as `stderr` says, e.g. subprocess.PIPE). With
    `die_with_parent` (and util-linux's setpriv) the kernel kills it if proctor dies. `stop`
    it; whatever is left at exit is killed. Raises OSError if it cannot start."""
    prefix = [_SETPRIV, "--pdeathsig", "KILL", "--"] if die_with_parent and _SETPRIV else []
    out = open(log, "ab") if log is not None else None  # noqa: SIM115 - handed to the child
    try:
        p = subprocess.Popen(
            [*prefix, *argv], stdin=subprocess.DEVNULL, stdout=out or subprocess.DEVNULL,
            stderr=subprocess.STDOUT if out else stderr, process_group=0, env=env,
            pass_fds=pass_fds, user=user, group=group,
            extra_groups=[] if user is not None else None)
    finally:
        if out is not None:
            out.close()
    _LIVE[p.pid] = p
    return p


def adopt(p: subprocess.Popen[bytes]) -> None:
    """A long-lived child started as `start` starts one (in a process group of its own),
    elsewhere (boxstart.py): `stop` it; whatever is left at exit is killed."""
    _LIVE[p.pid] = p


def stop(p: subprocess.Popen[bytes], *, sig: int = signal.SIGTERM, grace: float = 5.0) -> None:
    """Signal `p`'s whole group, wait up to `grace` s, then SIGKILL it; always reap, and wait
    (2 s at most) for the rest of the group. Blocking: off the event loop."""
    if p.poll() is None and grace > 0:
        kill_group(p.pid, sig)
        with contextlib.suppress(subprocess.TimeoutExpired):
            p.wait(grace)
    kill_group(p.pid, signal.SIGKILL)  # the leader and any straggling children
    p.wait()
    _LIVE.pop(p.pid, None)
    deadline = time.monotonic() + 2
    while time.monotonic() < deadline and _group_alive(p.pid):
        time.sleep(0.01)


def forget(p: subprocess.Popen[bytes]) -> None:
    """`p` exited on its own and was reaped by its owner."""
    _LIVE.pop(p.pid, None)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


@atexit.register
def _kill_leftovers() -> None:
    # A run that ended without stop() (a bug, an unhandled exception): no orphan children.
    for p in list(_LIVE.values()):
        kill_group(p.pid, signal.SIGKILL)
        with contextlib.suppress(Exception):
            p.wait(2)
    _LIVE.clear()


def detach() -> bool:
    """Leave the caller's process tree and group (a reaper that must outlive its starter),
    holding none of its starter's pipes: True in the detached child, False in the caller,
    which should exit."""
    if os.fork():
        return False
    os.setsid()
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)
    return True


# -- killing -----------------------------------------------------------------------------------

def kill_until_gone(pids: Callable[[], Iterable[int]], *, passes: int = 50) -> int:
    """SIGKILL every process `pids()` lists, again until it lists none alive: a process
    forking in a loop makes new ones between a look and its kills, and one killed inside a
    write finishes that write first. How many processes it killed. Blocking (1 ms between
    looks): call it off the event loop."""
    killed: set[int] = set()
    for _ in range(passes):
        alive = 0
        for pid in pids():
            if _gone(pid):
                continue
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
                killed.add(pid)
                alive += 1
        if not alive:
            break
        time.sleep(0.001)  # let the kills land before looking again
    return len(killed)


def _gone(pid: int) -> bool:
    """Dead (a zombie waiting for its parent) or no more: nothing left to kill."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return True
    return stat[stat.rindex(b")") + 2:][:1] in (b"Z", b"X")


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
