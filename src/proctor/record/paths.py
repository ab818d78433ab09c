"""How a trial's messages name the places of its sandbox, whatever the backend.

A check message or an error is read after the sandbox is gone, often on another machine: a
path into proctor's temp dir (`/tmp/proctor-RUN-x1y2/TRIAL/work/a.txt`) is noise there, and
it differs between backends (`/workspace/a.txt` in the box, the host path with
`--isolation none` or in a `runs_in: host` check). So a path inside the workspace reads
relative to it (`a.txt`; the workspace itself is `.`), the trial's other places by the name
the agent knows them by (`$HOME/…`, `$TMPDIR/…`), and anything else under the trial's temp
dir as `<sandbox>/…`.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

# A path starts where no path character precedes it, and a prefix ends at `/` or where no
# path character follows (so /workspace never matches inside /workspace2 or /x/workspace).
_PATH_CHAR = r"[\w.~@+%-]"
_HOST_PLACE_NAMES = {"home": "$HOME", "tmp": "$TMPDIR", "shm": "/dev/shm"}


class PathNames:
    def __init__(self, workspaces: Iterable[str] = (), named: Iterable[tuple[str, str]] = ()):
        rules = [(p, "") for p in workspaces] + list(named)
        rules = [(p.rstrip("/"), name) for p, name in rules if p and p.rstrip("/")]
        self._names = dict(rules)
        self._regex: re.Pattern[str] | None = None  # compiled when a text needs it (rarely)

    @classmethod
    def for_trial(cls, root: Path, sandbox: Any = None) -> PathNames:
        """The names for a trial whose sandbox lives under `root` (its places are
        root/work, root/home, ...); `sandbox` adds the workspace as commands see it."""
        workspaces, named = [], []
        for base in {str(root), _real(root)}:
            workspaces.append(f"{base}/work")
            named += [(f"{base}/{place}", name) for place, name in _HOST_PLACE_NAMES.items()]
            named.append((base, "<sandbox>"))
        if sandbox is not None:  # its places wherever the backend keeps them (a box's own)
            workspaces.append(sandbox.workdir)
            env = sandbox.env
            by_inside = {env.get("HOME"): "$HOME", env.get("TMPDIR"): "$TMPDIR",
                         "/dev/shm": "/dev/shm"}
            for inside, host in sandbox.places if sandbox.capabilities.host_files else ():
                if inside == sandbox.workdir:
                    workspaces.append(str(host))
                elif inside in by_inside:
                    named.append((str(host), by_inside[inside]))
        return cls(workspaces, named)

    def __call__(self, text: str | None) -> str | None:
        if not text or not any(p in text for p in self._names):
            return text
        if self._regex is None:
            alts = sorted(self._names, key=len, reverse=True)  # the longest prefix wins
            self._regex = re.compile(
                rf"(?<![\w.~/@+%-])({'|'.join(re.escape(p) for p in alts)})"
                rf"(?:(/)(?={_PATH_CHAR})|(?!{_PATH_CHAR}|/{_PATH_CHAR}))")
        return self._regex.sub(self._name, text)

    def _name(self, m: re.Match[str]) -> str:
        name = self._names[m.group(1)]
        if m.group(2):  # a path below the place
            return f"{name}/" if name else ""
        return name or "."


def _real(root: Path) -> str:
    """`root` with its symlinks resolved. A trial's directory is proctor's, made (if at all)
    as a plain directory inside the run's: only the run's is resolved, once (eight lstat
    calls a trial fewer)."""
    return os.path.join(_real_dir(str(root.parent)), root.name)


@functools.lru_cache(maxsize=64)
def _real_dir(path: str) -> str:
    return os.path.realpath(path)
