"""Recording every process an agent starts, from outside the agent, with strace.

strace runs outside the sandbox boundary (it wraps the `nsenter` that enters the box), writes
to a file in the trial's private directory, and filters in the kernel (`--seccomp-bpf`: only
execve stops the tracee, so tracing costs next to nothing). Only successful execve calls are
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
    return [exe, "-f", "--seccomp-bpf", "-q", "-e", "trace=execve", "-e", "signal=none",
            "-s", "4096", "-o", str(out)]


_EXIT = re.compile(r"^(\d+)\s+\+\+\+ (exited with|killed by) ")


def parse_trace(path: Path) -> tuple[list[list[str]], bool]:
    """(argv of every successful execve, in order; whether the trace saw the top process end)."""
    try:
        lines = path.read_text(errors="replace").splitlines()
    except FileNotFoundError:
        return [], False
    top = lines[0].partition(" ")[0] if lines else ""
    complete = any((m := _EXIT.match(line)) and m.group(1) == top for line in reversed(lines))
    return _execs(lines), complete


def _execs(lines: list[str]) -> list[list[str]]:
    pending: dict[str, str] = {}  # pid -> the first half of an interrupted call
    execs: list[list[str]] = []
    for line in lines:
        pid, _, rest = line.partition(" ")
        rest = rest.lstrip()
        if rest.endswith(_UNFINISHED):
            pending[pid] = line[: -len(_UNFINISHED)]
            continue
        if rest.startswith("<... execve resumed>"):
            head = pending.pop(pid, None)
            if head is None:
                continue
            line = head + rest[len("<... execve resumed>"):]
        if not line.rstrip().endswith("= 0"):
            continue  # failed lookups along $PATH (ENOENT) are not processes
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
            execs.append([str(a) for a in argv])
    return execs
