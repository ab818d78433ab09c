"""What the agent changed in the workspace: a cheap before/after listing (size, mtime).

This is how file writes reach the audit log whatever the agent is. Writes outside the
workspace are not seen by it. Listings stop at MAX_ENTRIES so a huge tree costs a bound.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

MAX_ENTRIES = 20_000
Snapshot = dict[str, tuple[int, int]]  # relative path -> (size, mtime_ns)


def snapshot(root: Path) -> Snapshot:
    out: Snapshot = {}
    base = len(str(root)) + 1
    stack = [str(root)]
    while stack and len(out) < MAX_ENTRIES:
        try:
            with os.scandir(stack.pop()) as entries:
                for e in entries:
                    try:
                        if e.is_dir(follow_symlinks=False):
                            stack.append(e.path)
                        else:
                            st = e.stat(follow_symlinks=False)
                            out[e.path[base:]] = (st.st_size, st.st_mtime_ns)
                    except OSError:
                        continue
        except OSError:
            continue
    return out


def diff(before: Snapshot, after: Snapshot) -> list[dict[str, Any]]:
    changes = []
    for path, (size, mtime) in after.items():
        old = before.get(path)
        if old is None:
            changes.append({"path": path, "change": "created", "size": size})
        elif old != (size, mtime):
            changes.append({"path": path, "change": "modified", "size": size})
    for path in before.keys() - after.keys():
        changes.append({"path": path, "change": "deleted", "size": 0})
    return sorted(changes, key=lambda c: c["path"])
