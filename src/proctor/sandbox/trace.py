"""Recording every process an agent starts, from outside the agent.

proctor's own tracer (`exectrace.c`, built once with the C compiler, sandbox/native.py) runs
outside the sandbox boundary: it wraps the `nsenter` that enters the box, writes to a file in
the trial's private directory, and filters in the kernel: a seccomp filter stops a process
only at execve/execveat, forks and exits arrive as ptrace events, so a many-threaded agent
runs at full speed (strace --seccomp-bpf stops every new thread at each of its system calls).
Forks give the process tree: each exec knows the exec it descends from (`parents`), so what
an agent runs for itself can be set aside with everything it started. Only execs that
succeeded are kept: what actually ran, not what the shell tried on $PATH. A trace without the
top process's exit is incomplete: the recording was lost (the tracer was killed), and the
sandbox reports that as a fault, never as "the agent ran nothing".
"""

from __future__ import annotations

import json
from pathlib import Path

from proctor.sandbox import native


def tracer() -> Path:
    """The tracer binary (built once per machine and source, see sandbox/native.py)."""
    return native.binary("exectrace")


def tracer_argv(out: Path, binary: str | None = None) -> list[str]:
    """Run a command under the tracer, writing its trace to `out`."""
    return [binary or str(tracer()), "-o", str(out), "--"]


class Trace:
    """Every successful exec in order (`execs`, argv each) and, for each, the index of the
    exec it descends from (`parents`: the program its process ran before, or the one its
    parent process was running when it forked; -1 for the first)."""

    def __init__(self) -> None:
        self.execs: list[list[str]] = []
        self.parents: list[int] = []
        self.complete = False  # the trace saw the top process end

    def drop_leading(self, n: int) -> None:
        """Forget the first n execs (proctor's own wrappers)."""
        self.execs = self.execs[n:]
        self.parents = [p - n if p >= n else -1 for p in self.parents[n:]]


def parse_trace(path: Path) -> Trace:
    """Read the tracer's lines: `S top`, `F parent child`, `E pid [argv]`, `X|K pid n`.
    The tracer writes a child's F line before anything the child does."""
    trace = Trace()
    try:
        lines = path.read_text(errors="replace").splitlines()
    except FileNotFoundError:
        return trace
    top = ""
    running: dict[str, int] = {}  # pid -> the exec it is running (its own, else inherited)
    for line in lines:
        kind, _, rest = line.partition(" ")
        pid, _, arg = rest.partition(" ")
        if kind == "S":
            top = pid
        elif kind == "F":  # a reused pid starts afresh here
            running[arg] = running.get(pid, -1)
        elif kind == "E":
            try:
                argv = json.loads(arg)
            except ValueError:
                continue
            trace.parents.append(running.get(pid, -1))
            running[pid] = len(trace.execs)
            trace.execs.append([str(a) for a in argv])
        elif kind in ("X", "K") and pid == top:
            trace.complete = True
    return trace
