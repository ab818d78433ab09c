"""Recording every process an agent starts, from outside the agent, with strace.

strace runs outside the sandbox boundary (it wraps the `nsenter` that enters the box), writes
to a file in the trial's private directory, and filters in the kernel (`--seccomp-bpf`: only
execve and the fork family stop the tracee, so tracing costs next to nothing). Forks give
the process tree: each exec knows the exec it descends from (`parents`), so what an agent
runs for itself can be set aside with everything it started. Only successful execve calls are
kept: what actually ran, not what the shell tried on $PATH. A trace that does not end with
the top process's exit is incomplete: the recording was lost (the tracer was killed), and
the sandbox reports that as a fault, never as "the agent ran nothing".
"""

from __future__ import annotations

import ast
import re
import shutil
from pathlib import Path

from proctor.errors import SetupError

# 1234  execve("/usr/bin/ls", ["ls", "-l"], 0x7ff... /* 35 vars */) = 0
# With -f, a call may be split into "<unfinished ...>" and "<... execve resumed>) = 0".
_LINE = re.compile(r'^(\d+)\s+execve\("((?:[^"\\]|\\.)*)", (\[.*?\])(?:, 0x[0-9a-f]+.*)?')
# In a PID namespace the child's pid is also given as strace sees it (--decode-pids=pidns).
_FORK = re.compile(r"^(\d+)\s+(?:clone3?|v?fork)\(.*\)\s+= (\d+)"
                   r"(?: /\* (\d+) in strace's PID NS \*/)?$")
_UNFINISHED = " <unfinished ...>"
_CUT_STRING = re.compile(r'"\.\.\.')
_CUT_ARRAY = re.compile(r",\s*\.\.\.\]$")


def strace_argv(out: Path) -> list[str]:
    exe = shutil.which("strace")
    if exe is None:
        raise SetupError("the command agent records processes with strace, which is not "
                         "installed; install the Debian package `strace`")
    # -s: long argument strings; -q/-e signal=none: the execve lines we parse and the exit
    # lines that prove the trace is complete.
    return [exe, "-f", "--seccomp-bpf", "-q", "--decode-pids=pidns",
            "-e", "trace=execve,clone,clone3,fork,vfork",
            "-e", "signal=none",
            "-s", "4096", "-o", str(out)]


_EXIT = re.compile(r"^(\d+)\s+\+\+\+ (exited with|killed by) ")


class Trace:
    """Every successful execve in order (`execs`, argv each) and, for each, the index of the
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
    trace = Trace()
    try:
        lines = path.read_text(errors="replace").splitlines()
    except FileNotFoundError:
        return trace
    top = lines[0].partition(" ")[0] if lines else ""
    trace.complete = any((m := _EXIT.match(line)) and m.group(1) == top
                         for line in reversed(lines))
    _read(lines, trace)
    return trace


def _read(lines: list[str], trace: Trace) -> None:
    pending: dict[str, str] = {}  # pid -> the first half of an interrupted call
    forked: dict[str, str] = {}  # child pid -> parent pid
    execs: list[tuple[str, str]] = []  # (pid, the whole execve line), in order
    for line in lines:
        pid, _, rest = line.partition(" ")
        rest = rest.lstrip()
        if rest.endswith(_UNFINISHED):
            pending[pid] = line[: -len(_UNFINISHED)]
            continue
        if rest.startswith("<... "):  # "<... execve resumed>) = 0", "<... clone resumed>…"
            head = pending.pop(pid, None)
            if head is None:
                continue
            line = head + rest[rest.index(">") + 1:]
        if (f := _FORK.match(line)) is not None:
            forked[f.group(3) or f.group(2)] = pid
        elif line.rstrip().endswith("= 0"):  # failed lookups along $PATH are not processes
            execs.append((pid, line))
    # A child's execve can be written before its parent's fork returns: forks first, then
    # each exec's parent is what its process (else its parent process) was running.
    running: dict[str, int] = {}  # pid -> index of the exec it is running
    for pid, line in execs:
        m = _LINE.match(line)
        if m is None:
            continue
        # strace marks cut strings as "abc"... and cut argument lists as [..., ...].
        text = _CUT_ARRAY.sub("]", _CUT_STRING.sub('"', m.group(3)))
        try:
            argv = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            continue
        if isinstance(argv, list):
            trace.parents.append(_running_in(pid, running, forked))
            running[pid] = len(trace.execs)
            trace.execs.append([str(a) for a in argv])


def _running_in(pid: str, running: dict[str, int], forked: dict[str, str]) -> int:
    """The exec `pid` runs, else the nearest ancestor's (subshells fork without exec)."""
    for _ in range(10_000):  # a bound, not a depth anyone reaches
        if pid in running:
            return running[pid]
        if pid not in forked:
            return -1
        pid = forked[pid]
    return -1
