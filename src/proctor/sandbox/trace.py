"""Recording every process an agent starts, and what it prints, from outside the agent.

proctor's own tracer (`exectrace.c`, built once with the C compiler, sandbox/native.py; its
trace format is documented at the top of that file) runs outside the agent's reach: in a box,
the box's spawner forks it beside the command, in the box's PID namespace, not the trial's
(spawner.c shares exectrace.c's code), and writes to a memfd proctor made and passed it
(`TraceFd`); elsewhere it wraps the command and writes to a file in the trial's private
directory. Neither is ever where the agent can reach it. It filters in the kernel: a
seccomp filter stops a process only at execve/execveat (and, when
output is captured, at a write to fd 1 or 2); forks, execs and exits arrive as ptrace events,
so a many-threaded agent runs at full speed (strace --seccomp-bpf stops every new thread at
each of its system calls). Forks give the process tree: each program knows the program it
descends from (`parent`), so what an agent runs for itself can be set aside with everything
it started, and a tool call's processes are the programs under its shell. Only execs that
succeeded are kept: what actually ran, not what the shell tried on $PATH. A trace without the
top process's exit is incomplete: the recording was lost (the tracer was killed), and the
sandbox reports that as a fault, never as "the agent ran nothing" (a command killed at its
timeout leaves an incomplete trace too: everything up to the kill is in it).
"""

from __future__ import annotations

import json
import os
import posixpath
from dataclasses import dataclass, field
from pathlib import Path

from proctor.fieldwise import Fieldwise
from proctor.sandbox import native

# With output capture, bytes kept of everything the traced processes write to fd 1 and 2,
# over the per-process limit (the sandbox's output limit).
CAPTURE_TOTAL_MIN = 16 << 20


def tracer() -> Path:
    """The tracer binary (built once per machine and source, see sandbox/native.py)."""
    return native.binary("exectrace")


def capture_limits(capture: int) -> tuple[int, int]:
    """The tracer's output capture limits (bytes per process, in all) for `capture` bytes per
    process: what `-w` takes, and a box's spawner too."""
    return capture, max(CAPTURE_TOTAL_MIN, 16 * capture)


def tracer_argv(out: Path, binary: str | None = None, capture: int | None = None) -> list[str]:
    """Run a command under the tracer, writing its trace to `out`; with `capture` (bytes per
    process), also what each process writes to fd 1 and 2."""
    argv = [binary or str(tracer()), "-o", str(out)]
    if capture is not None:
        argv += ["-w", "{},{}".format(*capture_limits(capture))]
    return [*argv, "--"]


# (program index, fd): "a copy of that program's fd 1 or 2 as it was when the program
# started". Kept through forks, execs and dups onto fd 1 / 2 (`cmd >&2`); None: anything
# else (a file opened, a dup of another fd), where only the target tells.
Origin = tuple[int, int]


@dataclass(slots=True, eq=False, repr=False)
class Program(Fieldwise):
    """One successful exec: a program a process ran."""

    argv: list[str]
    pid: int
    parent: int  # index of the program it descends from: its process's previous program,
    #              else the one its parent process was running when it forked; -1: the first
    started: float  # unix time
    fds: tuple[str, str] | None = None  # where fd 1 and fd 2 pointed (with output capture)
    exe: str = ""  # the file it was loaded from (the tracer's P line), whatever argv[0] says
    exe_lead: int = 1  # how many leading argv entries `exe` stands for (ld.so PROGRAM: more)
    status: int | None = None  # how its process ended, if this was its last program: the
    #                            exit code, or -SIGNAL; None: it exec'd again, or never ended
    ended: float | None = None
    next: int = -1  # the program its process exec'd next
    # With output capture: what its fd 1 and fd 2 were copies of when it started (see
    # `Origin`), so a write can be traced back to the fd of an earlier program it went to.
    origins: tuple[Origin | None, Origin | None] = (None, None)


@dataclass(slots=True, eq=False, repr=False)
class Write(Fieldwise):
    """What a program (or a thread or fork of it) wrote to its fd 1 or 2."""

    program: int  # index of the program running in the writing process; -1: none traced
    fd: int
    target: str  # where the fd pointed: "pipe:[INODE]", "/dev/pts/0", a path
    data: bytes  # the bytes kept: a prefix of what was written
    size: int  # bytes written
    origin: Origin | None = None  # what the fd written to was a copy of


@dataclass(eq=False, repr=False)
class Trace(Fieldwise):
    """Every successful exec in order, and (with output capture) every write to fd 1 / 2."""

    programs: list[Program] = field(default_factory=list)
    writes: list[Write] = field(default_factory=list)
    complete: bool = False  # the trace saw the top process end
    finished: bool = False  # ... and everything it left running (nothing more will come)
    source: TraceSource | None = None  # where it is, while not finished (`reread`)
    wrappers: int = 0  # leading programs dropped (proctor's own)

    @property
    def execs(self) -> list[list[str]]:
        return [p.argv for p in self.programs]

    @property
    def parents(self) -> list[int]:
        return [p.parent for p in self.programs]

    def drop_leading(self, n: int) -> None:
        """Forget the first n programs (proctor's own wrappers) and what they wrote."""
        if n <= 0:
            return
        self.programs = self.programs[n:]
        for p in self.programs:
            p.parent = p.parent - n if p.parent >= n else -1
            p.next = p.next - n if p.next >= n else -1
            p.origins = (_shift(p.origins[0], n), _shift(p.origins[1], n))
        self.writes = [w for w in self.writes if w.program >= n]
        for w in self.writes:
            w.program -= n
            w.origin = _shift(w.origin, n)

    def exit_of(self, i: int) -> tuple[int | None, float | None]:
        """How the process that ran program i ended (following its later execs), and when."""
        p = self.programs[i]
        while p.next >= 0:
            p = self.programs[p.next]
        return p.status, p.ended

    def below(self, i: int) -> list[int]:
        """Every program that descends from program i, in order."""
        inside = {i}
        out = []
        for j in range(i + 1, len(self.programs)):
            if self.programs[j].parent in inside:
                inside.add(j)
                out.append(j)
        return out

    def output(self, i: int, members: list[int] | None = None) -> tuple[bytes, bytes, int]:
        """(stdout, stderr, bytes not kept) of program i and everything below it: what they
        wrote to program i's fd 1 and fd 2. A write whose fd is a copy of one of those (by
        inheritance or a dup: `cmd >&2` writes to its fd 1, a copy of fd 2) goes to that
        stream; one to an fd of unknown origin counts by where it went (where fd 1 and 2
        point to one place, a pty or a merged pipe, by the fd number written to).
        `members`: `below(i)`, if known."""
        fds = self.programs[i].fds
        if not fds:
            return b"", b"", 0
        inside = {i, *(self.below(i) if members is None else members)}
        out: dict[int, list[bytes]] = {1: [], 2: []}
        dropped = 0
        for w in self.writes:
            stream = self._stream(w, i, fds, inside)
            if stream:
                out[stream].append(w.data)
                dropped += w.size - len(w.data)
        return b"".join(out[1]), b"".join(out[2]), dropped

    def _stream(self, w: Write, i: int, fds: tuple[str, str], inside: set[int]) -> int:
        """1 or 2: which of program i's streams write `w` went to; 0: neither."""
        origin = w.origin
        while origin is not None:
            program, fd = origin
            if program == i:
                return fd
            if program < i:  # a copy of something older than program i: not its stream
                return 0
            origin = self.programs[program].origins[fd - 1]
        if w.program not in inside or not w.target or w.target not in fds:
            return 0
        return w.fd if fds[0] == fds[1] else 1 if w.target == fds[0] else 2


def _shift(origin: Origin | None, n: int) -> Origin | None:
    return None if origin is None or origin[0] < n else (origin[0] - n, origin[1])


def _text(s: str) -> str:
    """A trace string (one character per byte) as the UTF-8 text it holds."""
    return s if s.isascii() else s.encode("latin-1").decode("utf-8", "replace")


_decode = json.JSONDecoder().raw_decode


def _strings(s: str) -> tuple[str, str]:
    """The two JSON strings of `"A" "B"` (either may hold spaces)."""
    first, end = _decode(s)
    second, _ = _decode(s, end + 1)
    return first, second


class TraceFd:
    """A memfd a box's tracer writes a trace to: no file to make, name and remove per
    command. Closed once (a trace may be released by its reader and by its sandbox).
    `spares`: its box's memfds of finished traces, emptied, where this one goes once its
    trace is finished (`recycle`): one memfd serves command after command."""

    def __init__(self, spares: list[TraceFd] | None = None) -> None:
        self.fd = os.memfd_create("proctor-trace", os.MFD_CLOEXEC)
        self.spares = spares
        self.end = 0  # where its trace ended when last read (`_read`)

    @classmethod
    def take(cls, spares: list[TraceFd]) -> TraceFd:
        """An empty memfd for a command's trace: a spare of the box's, else a new one."""
        return spares.pop() if spares else cls(spares)

    def close(self) -> None:
        if self.fd >= 0:
            fd, self.fd = self.fd, -1
            os.close(fd)


TraceSource = Path | TraceFd  # where a tracer writes


def _read(source: TraceSource) -> bytes:
    """All of it, in raw reads (read_bytes' buffered file costs five calls more); a memfd
    from its start to its offset (the tracer's, shared: where its next write goes, so the
    end of this trace whatever a recycled memfd holds past it), in one read of that size,
    leaving the offset alone."""
    if isinstance(source, TraceFd):
        if source.fd < 0:
            raise FileNotFoundError("the trace was released")
        end = source.end = os.lseek(source.fd, 0, os.SEEK_CUR)
        parts, at = [], 0
        while at < end and (chunk := os.pread(source.fd, end - at, at)):
            parts.append(chunk)
            at += len(chunk)
        return parts[0] if len(parts) == 1 else b"".join(parts)
    fd = os.open(source, os.O_RDONLY | os.O_CLOEXEC)
    try:
        parts = []
        while chunk := os.read(fd, 1 << 16):
            parts.append(chunk)
        return b"".join(parts)
    finally:
        os.close(fd)


def release(source: TraceSource) -> None:
    """Done with a trace: its file removed, or its memfd closed."""
    if isinstance(source, TraceFd):
        source.close()
    else:
        source.unlink(missing_ok=True)


# A recycled memfd keeps up to this much of its last trace past its offset (never read:
# `_read` stops at the offset) rather than be truncated for each command (~4 us).
_KEEP_STALE = 1 << 20


def recycle(source: TraceSource) -> None:
    """Done with a finished trace: its memfd emptied for its box's next command, else as
    `release`. Only a finished one: its tracer's last write (the whole Z line, seen) is
    done and it writes no more, only closes; a tracer still with what a command left
    running keeps its memfd to itself. The offset is shared with the tracer: back to 0,
    which empties it for `_read` (the bytes past it are truncated only when many)."""
    if isinstance(source, TraceFd) and source.spares is not None and source.fd >= 0 \
            and not source.spares:
        if source.end > _KEEP_STALE:
            os.ftruncate(source.fd, 0)
        os.lseek(source.fd, 0, os.SEEK_SET)
        source.spares.append(source)
    else:
        release(source)


def parse_trace(path: TraceSource) -> Trace:
    """Read the tracer's lines (format: exectrace.c). The tracer writes a child's F line
    before anything the child does."""
    trace = Trace()
    try:
        data = _read(path)
    except FileNotFoundError:
        return trace
    lines = data.decode("ascii", "replace").splitlines()
    programs = trace.programs
    top = ""
    running: dict[str, int] = {}  # pid -> the program it is running (its own, else inherited)
    own: dict[str, int] = {}  # pid -> the last program it exec'd itself
    copies: dict[str, dict[int, Origin | None]] = {}  # pid -> fd -> what it is a copy of
    nothing: dict[int, Origin | None] = {}
    for line in lines:
        kind, _, rest = line.partition(" ")
        try:
            if kind == "W":
                trace.writes.append(_write(rest, running, copies))
            elif kind == "D":
                pid, new, old = rest.split(" ", 2)
                fds = copies.setdefault(pid, {})
                fds[int(new)] = fds.get(int(old))
            elif kind == "F":  # a reused pid starts afresh here
                pid, child = rest.split(" ", 1)
                running[child] = running.get(pid, -1)
                own.pop(child, None)
                copies[child] = dict(copies.get(pid, nothing))
            elif kind == "E":
                _exec(rest, programs, running, own, copies)
            elif kind == "P":
                pid, name = rest.split(" ", 1)
                if pid in own:
                    exe, end = _decode(name)
                    program = programs[own[pid]]
                    program.exe = _text(str(exe))
                    program.exe_lead = max(1, int(name[end:].strip() or 1))
            elif kind == "O":
                pid, strings = rest.split(" ", 1)
                if pid in own:
                    fd1, fd2 = _strings(strings)
                    programs[own[pid]].fds = (_text(fd1), _text(fd2))
            elif kind in ("X", "K"):
                pid, code, when = rest.split(" ", 2)
                if pid in own:
                    p = programs[own.pop(pid)]
                    p.status = int(code) if kind == "X" else -int(code)
                    p.ended = float(when)
                if pid == top:
                    trace.complete = True
            elif kind == "S":
                top = rest.split(" ", 1)[0]
            elif kind == "Z":  # whole (its newline seen): the tracer's last write is done
                trace.finished = data.endswith(b"\n")
        except ValueError:
            continue  # a line cut short (the tracer was killed while writing it)
    return trace


_NO_COPIES: dict[int, Origin | None] = {}


def _write(rest: str, running: dict[str, int],
           copies: dict[str, dict[int, Origin | None]]) -> Write:
    """A W line: a write to fd 1 or 2, by the program its process runs."""
    pid, fd, size, strings = rest.split(" ", 3)
    target, data = _strings(strings)
    n = int(fd)
    return Write(running.get(pid, -1), n, _text(target), data.encode("latin-1"), int(size),
                 copies.get(pid, _NO_COPIES).get(n))


def _exec(rest: str, programs: list[Program], running: dict[str, int], own: dict[str, int],
          copies: dict[str, dict[int, Origin | None]]) -> None:
    """An E line: a new program, the next of the one its process ran; its fd 1 and 2 its own
    from now on."""
    pid, when, argv = rest.split(" ", 2)
    try:  # json.loads without its wrapper, for the tracer's plain `[...]`
        strings, end = _decode(argv)
    except ValueError:
        end = -1
    if end != len(argv):  # anything else as json.loads takes it (or refuses it)
        strings = json.loads(argv)
    args = [a if type(a) is str and a.isascii() else _text(str(a)) for a in strings]
    i = len(programs)
    if pid in own:
        programs[own[pid]].next = i
    fds = copies.get(pid, _NO_COPIES)
    programs.append(Program(args, int(pid), running.get(pid, -1), float(when),
                            origins=(fds.get(1), fds.get(2))))
    running[pid] = own[pid] = i
    copies[pid] = {**fds, 1: (i, 1), 2: (i, 2)}


def read_trace(source: TraceSource, wrappers: tuple[str, ...] = ()) -> Trace:
    """The trace at `source` (released once finished), without the leading programs named
    in `wrappers` (proctor's own way into a container: setpriv). A trace whose command ended
    but left something running is not finished: its `source` says where to read the rest."""
    trace = parse_trace(source)
    if trace.complete and not trace.finished:
        trace.source = source  # its tracer is still with what the command left running
    elif trace.finished:
        recycle(source)  # nothing more comes: its memfd serves the box's next command
    else:
        release(source)  # its tracer was killed: nothing more comes
    n = 0
    while wrappers and n < len(trace.programs) and posixpath.basename(
            trace.programs[n].argv[0] if trace.programs[n].argv else "") in wrappers:
        n += 1
    trace.drop_leading(n)
    trace.wrappers = n
    return trace


async def reread(trace: Trace, wait: float = 2.0) -> Trace:
    """`trace` as its tracer finished it, once what it left running has ended (waited for
    up to `wait` seconds; then as far as it got)."""
    import asyncio
    import time

    if trace.source is None:
        return trace
    deadline = time.monotonic() + wait
    while True:
        again = parse_trace(trace.source)
        if again.finished or time.monotonic() >= deadline:
            break
        await asyncio.sleep(0.02)
    release(trace.source)
    again.drop_leading(trace.wrappers)
    return again
