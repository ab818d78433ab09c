"""Recording every process an agent starts, from outside the agent, with strace.

Only successful execve calls are kept: what actually ran, not what the shell tried on $PATH.
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
    # -s: long argument strings; -qq/-e signal=none: only the execve lines we parse.
    return [exe, "-f", "-qq", "-e", "trace=execve", "-e", "signal=none", "-s", "4096",
            "-o", str(out)]


def parse_execs(path: Path) -> list[list[str]]:
    """argv of every successful execve in an strace -f output file, in order."""
    try:
        lines = path.read_text(errors="replace").splitlines()
    except FileNotFoundError:
        return []
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
