"""The one way proctor shortens text it shows: say what was left out, never silently."""

from __future__ import annotations

from typing import Literal


def cut(text: str, limit: int = 2000, *, keep: Literal["head", "tail", "both"] = "head",
        what: str = "") -> str:
    """`text` in at most `limit` characters (plus the note): the start (`head`), the end
    (`tail`: errors and logs say what matters last) or both ends (`both`)."""
    if len(text) <= limit:
        return text
    gone = len(text) - limit
    if keep == "tail":
        return f"[{gone} earlier characters] ..." + text[-limit:]
    if keep == "both":
        head = limit // 2
        of = f" of {what}" if what else ""
        return (f"{text[:head]}\n[... {gone} of {len(text)} characters{of} cut ...]\n"
                f"{text[len(text) - (limit - head):]}")
    return text[:limit] + f"... [{gone} more characters]"
