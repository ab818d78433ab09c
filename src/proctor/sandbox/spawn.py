"""proctor's side of a box's spawner (spawner.c): commands started from inside the box.

One SOCK_SEQPACKET socket per box. A command is a RUN request carrying its cwd, argv and
environment (inline, after the request's struct, up to MAX_INLINE bytes; else in a memfd, its
first descriptor) and three descriptors: its stdin, stdout and stderr (a fourth, under the
tracer: where the trace goes). OPEN's path and LISTEN's address come the same way. proctor
reads the output pipes in its event loop and learns the start and the wait status as
replies, so a command costs no process of proctor's own: no fork of proctor, no `nsenter`, no
wrapper. A traced command is not sent to the spawner: it goes to one of the trial's tracers,
whose socket the spawner handed over (TRACER, or with NEWTRIAL's T the next trial's first),
and the tracer says its X and Z on the spawner's socket, among the spawner's replies
(tracers.py): the spawner is not woken by it. The task running a command waits for its end
alone (X, or E: it could not start); its start is not said (one reply to read per command,
not two). At its deadline it is killed and its X awaited: a command never sent, or sent but
not read (a stopped spawner), is given up at once, one read gets START_GRACE_S for its X.
Nothing here waits on the loop: a request the spawner cannot take yet (it is busy, or
stopped) waits in an outbox, flushed when the socket is writable; one that cannot be sent
for SEND_WAIT_S loses the spawner.
"""

from __future__ import annotations

import array
import asyncio
import contextlib
import errno
import itertools
import os
import signal
import socket
import struct
import sys
import time
from collections.abc import Sequence
from typing import Any

from proctor import proc
from proctor.proc import ExecResult, Feed
from proctor.sandbox.outpipes import PipeReader, Pipes
from proctor.sandbox.spawnwire import (
    MAX_INLINE,
    close_all,
    encode_strings,
    feed_stdin,
    memfd,
    open_request,
)
from proctor.sandbox.tracers import Tracer, Tracers

OP_RUN, OP_KILL, OP_LISTEN, OP_NEWTRIAL, OP_PING, OP_KILLALL, OP_OPEN, OP_TRACER = range(1, 9)
FLAG_TRACE, FLAG_CAPTURE = 1, 2
OPEN_READ, OPEN_PATH, OPEN_FILE = 0, 1, 2  # OPEN: for reading, to stat, reading if a file
REQUEST = struct.Struct("=IIiIIIIII")  # op, id, sig, argc, envc, as_mib, flags, cap_per, cap_total
REPLY = struct.Struct("=IIii")  # kind, id, value, err
_FD_SPACE = socket.CMSG_SPACE(array.array("i", [0]).itemsize)
# As a plain int: or-ing the socket module's flag enums on every reply costs more than the read.
_RECV_FLAGS = int(socket.MSG_DONTWAIT | socket.MSG_CMSG_CLOEXEC)
SEND_WAIT_S = 10.0
_SIOCOUTQ = 0x5411  # linux/sockios.h (TIOCOUTQ): what a socket sent that its peer has not read
START_GRACE_S = 1.0  # past its deadline and killed, how long a command's X is awaited
# A command's output pipes are watched in the loop only if it runs this long: most end
# sooner, and their pipes are read to the end at their X instead (no wake-up of the loop
# for the pipes' end, no epoll_ctl); a longer one's output is read as it comes from then on
# (one that fills a pipe sooner waits until then).
WATCH_AFTER_S = 0.01


class SpawnerLost(Exception):
    """The box's spawner is gone (killed, or its box died): nothing more runs in it."""


class Spawner:
    def __init__(self, sock: socket.socket, loop: asyncio.AbstractEventLoop):
        self.sock = sock
        self.loop = loop
        self.lost: str | None = None
        self._ids = itertools.count(1)
        self._pending: dict[int, asyncio.Future[Any]] = {}  # listen / open / newtrial ... replies
        self._exits: dict[int, asyncio.Future[Any]] = {}  # RUN: the X reply (or E: no start)
        self._starting: set[int] = set()  # RUN requests not yet ended (no X, no E)
        self._ready: asyncio.Future[Any] = loop.create_future()
        self._devnull = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
        # Requests not yet taken by the spawner (op, job, message, descriptors owned), in order.
        self._outbox: list[tuple[int, int, bytes, list[int]]] = []
        self._stuck: asyncio.TimerHandle | None = None
        # Commands started, and how many of them had been when the trial's processes were last
        # killed (whatever started after a kill was asked for is not known to be dead).
        self._runs = self._runs_killed = 0
        self._pipes = Pipes(loop)  # the running commands' output pipes
        # The last environment a command was given (a copy) and its encoding: a box's commands
        # mostly share one, trial after trial.
        self._env: dict[str, str] | None = None
        self._env_block = b""
        self._tracers = Tracers()
        sock.setblocking(False)
        loop.add_reader(sock.fileno(), self._on_reply)

    async def ready(self, timeout: float) -> int:
        """Wait for the spawner's first word; its pid inside the box."""
        return await asyncio.wait_for(asyncio.shield(self._ready), timeout)

    # -- requests ----------------------------------------------------------------------

    async def run(self, argv: Sequence[str], *, env: dict[str, str], cwd: str, timeout: float,
                  stdin: bytes | None = None, limit: int = 1_000_000, feed: Feed | None = None,
                  as_bytes: int | None = None, trace_fd: int | None = None,
                  capture: tuple[int, int] | None = None) -> ExecResult:
        """`argv` run in the box; like proc.run: output capped, killed at the timeout. With
        `trace_fd`, under the tracer, which writes the trace there (exectrace.c's format),
        with `capture` (bytes per process, in all) what the processes write to fd 1 and 2."""
        started, t0 = time.time(), time.monotonic()
        cap = proc.Capture(self.loop, limit, feed)
        job = next(self._ids)
        try:
            strings = encode_strings([cwd, *argv]) + self._encoded(env)
            fds = open_request(strings, stdin is not None)
        except (OSError, ValueError) as e:  # out of descriptors, a NUL in an argument
            return ExecResult(None, "", f"proctor: could not start {argv[0]}: {e}",
                              time.monotonic() - t0, started)
        request, out_r, out_w, err_r, err_w = fds[:5]  # request -1: the strings go inline
        in_r, in_w = (fds[5], fds[6]) if stdin is not None else (self._devnull, -1)
        exited = self._exits[job] = self.loop.create_future()
        self._starting.add(job)
        self._runs += 1
        try:
            await self._start(job, len(argv), len(env), as_bytes, capture, timeout,
                              b"" if request >= 0 else strings,
                              [*([request] if request >= 0 else []), in_r, out_w, err_w], trace_fd)
        except BaseException as e:  # not started: the box lost, no tracer in time, cancelled
            self._exits.pop(job, None)
            self._starting.discard(job)
            close_all(fds)
            if isinstance(e, SpawnerLost):
                return ExecResult(None, "", "", time.monotonic() - t0, started, error=str(e))
            if isinstance(e, TimeoutError):  # the spawner made it no tracer within its time
                return _result(cap, None, timeout, t0, started)
            if isinstance(e, OSError):  # no tracer could be made
                return ExecResult(None, "", f"proctor: could not start {argv[0]}: {e}",
                                  time.monotonic() - t0, started)
            raise
        close_all([request, out_w, err_w] + ([in_r] if stdin is not None else []))
        readers = [PipeReader(self._pipes, out_r, 1, cap),
                   PipeReader(self._pipes, err_r, 2, cap)]
        if stdin is not None:
            self.loop.create_task(feed_stdin(self.loop, in_w, stdin))
        try:
            status = await self._exit_status(job, exited, cap, self.loop.time() + timeout,
                                             readers)
        except OSError as e:  # no fork (the trial's process limit): nothing ran
            return ExecResult(None, "", f"proctor: could not start {argv[0]}: {e}",
                              time.monotonic() - t0, started)
        except SpawnerLost as e:
            return ExecResult(None, cap.text(1), cap.text(2), time.monotonic() - t0, started,
                              error=f"the sandbox lost its process starter: {e}")
        finally:
            if not exited.done() or exited.cancelled():  # cancelled (Ctrl-C, the trial's
                self.kill(job)  # time): leave nothing
            self._exits.pop(job, None)
            self._starting.discard(job)
            for r in readers:
                r.close()
        return _result(cap, status, timeout, t0, started)

    async def _start(self, job: int, argc: int, envc: int, as_bytes: int | None,
                     capture: tuple[int, int] | None, timeout: float, inline: bytes,
                     fds: list[int], trace_fd: int | None) -> None:
        """RUN `job` sent (its strings `inline`, or in a memfd, the first of `fds`): to the
        spawner, or, traced, to one of the trial's tracers (`_give`)."""
        flags = (FLAG_TRACE if trace_fd is not None else 0) | (FLAG_CAPTURE if capture else 0)
        per, total = (min(n, 2**32 - 1) for n in capture) if capture else (0, 0)
        message = REQUEST.pack(OP_RUN, job, 0, argc, envc, (as_bytes or 0) >> 20, flags, per,
                               total) + inline
        if trace_fd is None:
            self._send_message(OP_RUN, job, message, fds)
        else:
            await self._give(job, message, [*fds, trace_fd], bool(capture), timeout)

    # -- tracers -----------------------------------------------------------------------

    async def _give(self, job: int, order: bytes, fds: list[int], capture: bool,
                    timeout: float) -> None:
        """Traced command `job` given to an idle tracer of the trial that takes its kind
        (capturing or not), else to a new one (TRACER: one request, one reply, awaited at
        most `timeout`). An OSError if none can take it."""
        tracers = self._tracers
        tracers.capture = capture  # the kind the next trial's first tracer will be of
        while (tracer := tracers.take_idle(capture)) is not None:
            if tracers.order(tracer, job, order, fds):
                return
        tracer = await asyncio.wait_for(self._new_tracer(capture), timeout)
        if not tracers.order(tracer, job, order, fds):
            raise OSError(errno.ESRCH, "its tracer ended before it started")

    async def _new_tracer(self, capture: bool) -> Tracer:
        job = next(self._ids)
        fut = self._pending[job] = self.loop.create_future()
        try:
            self._send(OP_TRACER, job, flags=FLAG_CAPTURE if capture else 0)
            fd, _ = await fut
        finally:
            self._pending.pop(job, None)
        return self._tracers.add(fd, job, capture)

    def _ended(self, job: int, status: int) -> None:
        self._starting.discard(job)
        fut = self._exits.get(job)
        if fut is not None and not fut.done():
            fut.set_result(status)

    def _tracer_ended(self, id_: int, status: int) -> None:
        """D: tracer `id_` ended (killed, or failed), after all it said: the command it had
        ends as the tracer did (an exit with its code, or its signal; 2 if it exited 0)."""
        job = self._tracers.ended(id_)
        if job is not None:
            failed = os.WIFSIGNALED(status) or (os.WIFEXITED(status) and os.WEXITSTATUS(status))
            self._ended(job, status if failed else 2 << 8)

    def _encoded(self, env: dict[str, str]) -> bytes:
        """`env` as the RUN request's memfd ends: each `NAME=value`, NUL-terminated."""
        if env != self._env:
            block = encode_strings([f"{k}={v}" for k, v in env.items()]) if env else b""
            self._env, self._env_block = dict(env), block
        return self._env_block

    async def _exit_status(self, job: int, exited: asyncio.Future[int | None],
                           cap: proc.Capture, deadline: float,
                           readers: list[PipeReader]) -> int | None:
        """The wait status of command `job` (None: timed out), awaited alone. Killed at
        `deadline`, still awaited then (its status comes), unless it was never sent or
        never read (then given up at once) or its X has not come START_GRACE_S later.
        Its output read to the end, or for PIPE_GRACE_S more if background children hold it
        (its pipes watched from WATCH_AFTER_S on, else read at its X); an OSError if it
        could not start."""
        expired: list[bool] = []
        timers: list[asyncio.TimerHandle] = []  # the watch's, the deadline's, the grace's

        def give_up() -> None:
            if not exited.done() and job in self._starting:
                exited.set_result(None)

        def expire() -> None:
            if exited.done():
                return
            expired.append(True)
            queued = any(op == OP_RUN and queued == job for op, queued, _, _ in self._outbox)
            unread = not queued and self._unread()
            self.kill(job)
            if queued or unread:  # never sent, or never read (the spawner stopped or behind,
                give_up()  # as when its S had not come): nothing of it is waited for
            else:  # its X comes once the KILL is taken, unless the spawner never reads
                timers.append(self.loop.call_later(START_GRACE_S, give_up))

        def watch() -> None:  # it runs on: its pipes read as they fill, its deadline set
            for reader in readers:
                reader.watch()
            if self.loop.time() >= deadline:
                expire()
            else:
                timers.append(self.loop.call_at(deadline, expire))

        # Timers, not wait_for(shield(...)): the reply wakes this task at once, not through
        # two more futures and loop turns. One for a command that ends within WATCH_AFTER_S
        # (most): its deadline's is set only once it has run that long.
        timers.append(self.loop.call_at(min(deadline, self.loop.time() + WATCH_AFTER_S), watch))
        try:
            status = await exited
        finally:
            for timer in timers:
                timer.cancel()
        if status is None:  # its pipes' write ends may never have left proctor's request
            return None
        for reader in readers:  # what is left in them now, the rest watched
            reader.drain_all()
        if not cap.closed.done():  # background children may hold the pipes open
            await asyncio.wait([cap.closed], timeout=proc.PIPE_GRACE_S)
        return None if expired else status

    def _unread(self) -> bool:
        """Whether the spawner has left anything sent on its socket unread (SIOCOUTQ: what
        its messages hold that it has not read; 0 once it read the last), asked only at a
        deadline: a RUN it never read is given up at once, not START_GRACE_S later."""
        import fcntl  # only at a deadline
        try:
            left = fcntl.ioctl(self.sock.fileno(), _SIOCOUTQ, b"\0\0\0\0")
        except OSError:
            return False  # then the grace, as before
        return int.from_bytes(left, sys.byteorder, signed=True) != 0

    @property
    def busy(self) -> bool:
        """Requests still unanswered or commands still running."""
        return bool(self._pending or self._exits)

    @property
    def tracers(self) -> int:
        """How many of the trial's tracers proctor holds (a socket each): busy or idle."""
        return len(self._tracers)

    def kill(self, job: int, sig: int = signal.SIGKILL) -> None:
        """Signal the process group of a command started by `run` (one still waiting in the
        outbox is never sent instead)."""
        tracer = self._tracers.tracing(job)
        if tracer is not None:  # its tracer's process group: the kernel kills its tracees
            tracer.killed = True
            with contextlib.suppress(SpawnerLost):
                self._send(OP_KILL, tracer.id, sig=sig, flags=FLAG_TRACE)
            return
        for i, (op, queued, _, fds) in enumerate(self._outbox):
            if op == OP_RUN and queued == job:
                del self._outbox[i]
                close_all(fds)
                return
        with contextlib.suppress(SpawnerLost):
            self._send(OP_KILL, job, sig=sig)

    async def listen(self, host: str, port: int) -> socket.socket:
        """A listening TCP socket bound at host:port in the box's network namespace."""
        job = next(self._ids)
        fut = self._pending[job] = self.loop.create_future()
        self._send_strings(OP_LISTEN, job, encode_strings([host, str(port)]))
        fd = await fut
        sock = socket.socket(fileno=fd)
        sock.setblocking(False)
        return sock

    async def new_trial(self) -> bool:
        """The current trial's processes are killed; commands started from now on get a new
        IPC namespace (and, at the first, a new PID namespace), and a new network namespace
        unless the current one counted nothing: whether it did (then every socket bound in
        the old one is of no use)."""
        return bool(await self.new_trial_soon())

    def new_trial_soon(self) -> asyncio.Future[int]:
        """`new_trial` asked now, its answer (non-zero: a new network namespace) in the
        future returned, for whoever needs it later: a box kept for another trial is made
        ready when its last trial ends, not when the next one begins."""
        runs = self._runs
        self._tracers.retire()
        # The next trial's first tracer comes with it, of the kind this box's last command had.
        capture = self._tracers.capture
        job, fut = self._request(OP_NEWTRIAL, 0 if capture is None else
                                 FLAG_TRACE | (FLAG_CAPTURE if capture else 0))
        if capture is not None:
            self._tracers.expect(job, capture)

        def answered(f: asyncio.Future[int]) -> None:
            if not f.cancelled() and f.exception() is None:  # (an error: retrieved here)
                self._runs_killed = runs  # every process started before it is gone
        fut.add_done_callback(answered)
        return fut

    async def kill_all(self, timeout: float) -> int:
        """Kill every process of the trial (its PID namespace); once all are gone, how many
        there were. Nothing to ask when no command was started since the last time."""
        runs = self._runs
        if runs == self._runs_killed:
            return 0
        self._tracers.retire()  # their PID namespace is killed: the next command makes another
        async with asyncio.timeout(timeout):  # no task of its own, as wait_for makes
            killed = await self._ask(OP_KILLALL)
        self._runs_killed = runs
        return killed

    async def open(self, path: str, how: int = OPEN_READ) -> tuple[int, int]:
        """`path` opened inside the box with the agent's file rights (its mounts, its
        symlinks, its uid): a descriptor to read (OPEN_READ), to fstat (OPEN_PATH), or to
        read if it is a regular file, else to fstat (OPEN_FILE); and, for OPEN_FILE, the errno
        of opening a regular file for reading (0: the descriptor reads it). Raises the
        OSError the agent would get (FileNotFoundError, PermissionError, ...)."""
        job = next(self._ids)
        fut = self._pending[job] = self.loop.create_future()
        try:
            self._send_strings(OP_OPEN, job, encode_strings([path]), sig=how)
        except SpawnerLost:
            self._pending.pop(job, None)
            raise
        try:
            opened: tuple[int, int] = await fut
            return opened
        except OSError as e:
            raise OSError(e.errno, e.strerror, path) from None

    async def ping(self, timeout: float) -> None:
        """Returns once every request sent before has been handled."""
        await asyncio.wait_for(self._ask(OP_PING), timeout)

    async def _ask(self, op: int) -> int:
        job, fut = self._request(op)
        try:
            reply: int = await fut
            return reply
        finally:
            self._pending.pop(job, None)

    def _request(self, op: int, flags: int = 0) -> tuple[int, asyncio.Future[Any]]:
        """A request of `op` alone sent (or queued): its job and the future of its reply."""
        job = next(self._ids)
        fut = self._pending[job] = self.loop.create_future()
        try:
            self._send(op, job, flags=flags)
        except SpawnerLost:
            self._pending.pop(job, None)
            raise
        return job, fut

    def close(self) -> None:
        self._lose("the sandbox was closed")
        self.sock.close()
        self._pipes.close()
        with contextlib.suppress(OSError):
            os.close(self._devnull)

    # -- wire --------------------------------------------------------------------------

    def _send(self, op: int, job: int, *, sig: int = 0, flags: int = 0,
              fds: Sequence[int] = (), strings: bytes = b"") -> None:
        """Send a request (`strings`: inline, at most MAX_INLINE bytes) now, else queue it
        (with copies of its descriptors) behind the others: never waits."""
        message = REQUEST.pack(op, job, sig, 0, 0, 0, flags, 0, 0)
        self._send_message(op, job, message + strings if strings else message, fds)

    def _send_message(self, op: int, job: int, message: bytes, fds: Sequence[int]) -> None:
        """`_send` of a request already packed."""
        if self.lost:
            raise SpawnerLost(self.lost)
        if not self._outbox:
            try:
                self._sendmsg(message, fds)
                return
            except BlockingIOError:  # its queue is full: it is busy, or stopped
                pass
            except OSError as e:
                self._lose(f"the sandbox's process starter is gone ({e})")
                raise SpawnerLost(self.lost) from None
            self.loop.add_writer(self.sock.fileno(), self._flush)
            self._stuck = self.loop.call_later(SEND_WAIT_S, self._lose,
                                               "the sandbox's process starter stopped reading")
        try:
            copies = [os.dup(fd) for fd in fds]
        except OSError as e:
            self._lose(f"could not queue a request ({e})")
            raise SpawnerLost(self.lost) from None
        self._outbox.append((op, job, message, copies))

    def _send_strings(self, op: int, job: int, strings: bytes, sig: int = 0) -> None:
        """`_send` of a request whose only argument is `strings`: inline, or in a memfd."""
        if len(strings) <= MAX_INLINE:
            self._send(op, job, sig=sig, strings=strings)
            return
        request = memfd(strings)
        try:
            self._send(op, job, sig=sig, fds=[request])
        finally:
            os.close(request)

    def _sendmsg(self, message: bytes, fds: Sequence[int]) -> None:
        anc = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))] if fds else []
        self.sock.sendmsg([message], anc)

    def _flush(self) -> None:
        """The socket is writable: send what waits, in order."""
        while self._outbox:
            _, _, message, fds = self._outbox[0]
            try:
                self._sendmsg(message, fds)
            except BlockingIOError:
                break
            except OSError as e:
                self._lose(f"the sandbox's process starter is gone ({e})")
                return
            self._outbox.pop(0)
            close_all(fds)
            if self._stuck is not None:  # it reads: give it the full time again
                self._stuck.cancel()
                self._stuck = self.loop.call_later(
                    SEND_WAIT_S, self._lose, "the sandbox's process starter stopped reading")
        if not self._outbox:
            self._stop_flushing()

    def _stop_flushing(self) -> None:
        with contextlib.suppress(ValueError, OSError):
            self.loop.remove_writer(self.sock.fileno())
        if self._stuck is not None:
            self._stuck.cancel()
            self._stuck = None

    def _on_reply(self) -> None:
        # One reply a call: the loop calls again while more wait (its epoll is level-
        # triggered), and no read is spent finding the socket empty.
        try:
            data, anc, _, _ = self.sock.recvmsg(
                REPLY.size, _FD_SPACE, _RECV_FLAGS)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as e:
            data, anc = b"", []
            why = str(e)
        else:
            why = "it exited"
        if len(data) != REPLY.size:
            self._lose(f"the sandbox's process starter is gone ({why})")
            return
        kind, job, value, err = REPLY.unpack(data)
        fd = None
        for level, typ, d in anc:  # most replies carry none
            if level == socket.SOL_SOCKET and typ == socket.SCM_RIGHTS:
                fd = array.array("i", d)[0]
                break
        self._deliver(chr(kind), job, value, err, fd)

    def _deliver(self, kind: str, job: int, value: int, err: int, fd: int | None) -> None:
        if kind == "R":
            if not self._ready.done():
                self._ready.set_result(value)
            return
        if kind == "Z":  # a traced command's tree is gone (err: it never started)
            self._ended(job, value)
            self._tracers.done(job, unstarted=err != 0)
            return
        if kind == "D":  # a tracer ended: `job` is its id
            self._tracer_ended(job, value)
            return
        if kind == "T" and self._tracers.arrived(job, fd):  # the tracer NEWTRIAL asked for
            fd = None
        if kind == "X":  # ended
            self._ended(job, value)
            return
        if kind == "E" and job in self._starting:  # never started
            self._starting.discard(job)
            fut = self._exits.get(job)
            if fut is not None and not fut.done():
                fut.set_exception(OSError(err, os.strerror(err)))
            return
        fut = self._pending.pop(job, None)
        if fut is None or fut.done():
            if fd is not None:
                os.close(fd)
            return
        if kind == "E" or err:
            if fd is not None:
                os.close(fd)
            fut.set_exception(OSError(err, os.strerror(err)))
        elif kind == "L":  # a listening socket
            fut.set_result(fd)
        elif kind in "ON":  # an opened file, and whether it could be opened to read; or a
            fut.set_result((fd, value))  # new tracer's socket
        else:  # T (new trial), P (ping), A (all killed)
            fut.set_result(value)

    def _lose(self, why: str) -> None:
        if self.lost:
            return
        self.lost = why
        with contextlib.suppress(ValueError, OSError):
            self.loop.remove_reader(self.sock.fileno())
        self._stop_flushing()
        for *_, fds in self._outbox:
            close_all(fds)
        self._outbox.clear()
        error = SpawnerLost(why)
        for fut in [self._ready, *self._pending.values(), *self._exits.values()]:
            if not fut.done():
                fut.set_exception(error)
                fut.exception()  # retrieved: nobody may be waiting on it
        self._pending.clear()
        self._starting.clear()
        self._tracers.close()  # gone with the box


def _result(cap: proc.Capture, status: int | None, timeout: float, t0: float,
            started: float) -> ExecResult:
    """A command's result from its output and wait status (None: it timed out)."""
    note = f"\nproctor: timed out after {timeout:g}s" if status is None else ""
    return ExecResult(
        exit_code=None if status is None else os.waitstatus_to_exitcode(status),
        stdout=cap.text(1), stderr=cap.text(2) + note,
        duration_s=time.monotonic() - t0, started_at=started, timed_out=status is None,
        truncated=cap.dropped[1] > 0 or cap.dropped[2] > 0)
