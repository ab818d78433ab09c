"""The trial's tracers proctor holds (spawner.c's TRACER): which is idle, which traces which
command, which belong to a trial that has ended.

A tracer takes one traced command at a time on its own socket (`order`); the spawner made it
in the trial's PID namespace, so one is never given a command of a later trial: at a trial's
end (`retire`) the idle ones are let go and the busy ones once idle. Letting one go closes
proctor's end of its socket, and the tracer exits when it reads that. The spawner's replies
about tracers (Z, D, the T of a NEWTRIAL that brings one) come through spawn.Spawner, which
tells this bookkeeping what they mean.
"""

from __future__ import annotations

import array
import socket

IDLE_TRACERS = 2  # idle tracers kept for the trial's next traced commands; more are let go


class Tracer:
    """One tracer: its id (that of the TRACER or NEWTRIAL request that made it), proctor's
    end of its socket, and whether it captures its commands' output."""

    __slots__ = ("id", "sock", "capture", "job", "killed", "retired")

    def __init__(self, id_: int, sock: socket.socket, capture: bool):
        self.id, self.sock, self.capture = id_, sock, capture
        self.job: int | None = None  # the command it traces
        self.killed = False  # a KILL was sent for it: it takes no other command
        self.retired = False  # its trial's PID namespace is gone: let go once idle


class Tracers:
    def __init__(self) -> None:
        self._all: dict[int, Tracer] = {}  # by id, until let go
        self._idle: list[Tracer] = []  # the current trial's, waiting for a command
        self._busy: dict[int, Tracer] = {}  # by the job of the command each traces
        self.capture: bool | None = None  # the kind of the last traced command (None: none)
        self._generation = 0  # counts the trials' PID namespaces that ended
        # A tracer on its way with a NEWTRIAL's T, by that request's job: its kind, and the
        # generation it is of (one that comes for a trial already ended is let go).
        self._coming: dict[int, tuple[bool, int]] = {}

    def __len__(self) -> int:
        return len(self._all)

    def take_idle(self, capture: bool) -> Tracer | None:
        """An idle tracer of the kind asked for, taken out of the idle ones; None if none."""
        for i in range(len(self._idle) - 1, -1, -1):  # the last idled first: its memory warm
            if self._idle[i].capture == capture:
                return self._idle.pop(i)
        return None

    def add(self, fd: int, id_: int, capture: bool) -> Tracer:
        """A new tracer, `fd` proctor's end of its socket."""
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET, 0, fd)
        tracer = self._all[id_] = Tracer(id_, sock, capture)
        return tracer

    def order(self, tracer: Tracer, job: int, order: bytes, fds: list[int]) -> bool:
        """Command `job` (its RUN request and descriptors) sent to `tracer`; False (and the
        tracer let go) if it is gone. An idle tracer waits in a read of its socket: the send
        never waits."""
        try:
            tracer.sock.sendmsg([order], [(socket.SOL_SOCKET, socket.SCM_RIGHTS,
                                           array.array("i", fds))], socket.MSG_DONTWAIT)
        except OSError:  # it ended (its socket closed), or cannot take it: never used again
            self.let_go(tracer)
            return False
        tracer.job = job
        self._busy[job] = tracer
        return True

    def tracing(self, job: int) -> Tracer | None:
        """The tracer of command `job`, while it runs; None if it is not traced."""
        return self._busy.get(job)

    def done(self, job: int, unstarted: bool = False) -> None:
        """Z: command `job`'s tree is gone, its tracer idle: kept for the trial's next
        command, unless killed, of a trial that ended, one too many, or `unstarted`: it could
        not start the command (its trial's PID namespace gone with its init, say: the next
        command's new tracer is made in a new one)."""
        tracer = self._busy.pop(job, None)
        if tracer is None:
            return
        tracer.job = None
        if tracer.killed or tracer.retired or unstarted or len(self._idle) >= IDLE_TRACERS:
            self.let_go(tracer)
        else:
            self._idle.append(tracer)

    def ended(self, id_: int) -> int | None:
        """D: tracer `id_` ended; the job of the command it had, if any."""
        tracer = self._all.get(id_)
        if tracer is None:
            return None
        job = tracer.job
        self.let_go(tracer)
        if job is not None:
            self._busy.pop(job, None)
        return job

    def let_go(self, tracer: Tracer) -> None:
        """Its socket closed: an idle tracer exits; a busy one once its command is done."""
        tracer.sock.close()
        self._all.pop(tracer.id, None)
        if tracer in self._idle:
            self._idle.remove(tracer)

    def retire(self) -> None:
        """The trial's PID namespace ends: its idle tracers let go, the busy ones once idle
        (a tracer starts its commands in its trial's PID namespace, chosen once)."""
        for tracer in self._idle[:]:
            self.let_go(tracer)
        for tracer in self._busy.values():
            tracer.retired = True
        self._generation += 1

    def expect(self, job: int, capture: bool) -> None:
        """NEWTRIAL `job` brings the next trial's first tracer, of kind `capture`."""
        self._coming[job] = (capture, self._generation)

    def arrived(self, job: int, fd: int | None) -> bool:
        """T of NEWTRIAL `job`: whether it was to bring a tracer (then `fd`, its socket if it
        came, is taken: kept idle, or let go if its trial ended before it came)."""
        coming = self._coming.pop(job, None)
        if coming is None:
            return False
        capture, generation = coming
        if fd is not None:
            tracer = self.add(fd, job, capture)
            if generation == self._generation:
                self._idle.append(tracer)
            else:
                self.let_go(tracer)
        return True

    def close(self) -> None:
        """Every tracer let go: the box is gone."""
        for tracer in list(self._all.values()):
            self.let_go(tracer)
        self._busy.clear()
        self._coming.clear()
