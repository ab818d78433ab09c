"""What the agent changed in the places it can write: a diff of two sandbox snapshots.

Snapshots (Sandbox.snapshot) compare files by content hash, symlinks by target, so a write
that keeps the size and restores the mtime is still a change. This is how file writes reach
the audit log whatever the agent is.
"""

from __future__ import annotations

from typing import Literal, TypedDict

from proctor.sandbox.base import Snapshot

__all__ = ["DELETED", "FileChange", "Snapshot", "diff"]

DELETED = "deleted"  # Entry.digest of a path the image had and the trial removed


class FileChange(TypedDict):
    """One path the agent changed: an audit log `file_write` (docs/internals.md)."""

    path: str  # absolute, as the sandbox's commands see it
    change: Literal["created", "modified", "deleted"]
    size: int  # bytes now (0: deleted)
    kind: str  # file, symlink, dir (what it is now; what it was, when deleted)


def diff(before: Snapshot, after: Snapshot) -> list[FileChange]:
    """Created, modified and deleted entries (directories only when they became something
    else), sorted by path."""
    changes: list[FileChange] = []
    for path, entry in after.items():
        old = before.get(path)
        if entry.digest == DELETED:  # a container snapshot's mark for a file of the image
            if old is None or old.digest != DELETED:
                changes.append({"path": path, "change": "deleted", "size": 0,
                                "kind": old.kind if old else "file"})
            continue
        if old is None:
            if entry.kind != "dir":
                changes.append({"path": path, "change": "created", "size": entry.size,
                                "kind": entry.kind})
        elif old != entry and not (old.kind == entry.kind == "dir"):
            changes.append({"path": path, "change": "modified", "size": entry.size,
                            "kind": entry.kind})
    for path in before.keys() - after.keys():
        if before[path].kind != "dir":
            changes.append({"path": path, "change": "deleted", "size": 0,
                            "kind": before[path].kind})
    return sorted(changes, key=lambda c: c["path"])
