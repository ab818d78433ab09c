"""The one redaction helper every writer uses: secret values become [REDACTED:NAME]."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any, Literal

from proctor.text import CUT_MARKER, cut

# The shortest piece of a secret, left at a cut, that is masked (shorter ones say nothing).
MIN_PIECE = 2
_MARK = re.compile(r"\[REDACTED(?::[^\]]*)?\]")


class Redactor:
    """Replaces known secret values (and optional regex patterns) in text and JSON-like data."""

    def __init__(self, secrets: Mapping[str, str] | None = None, patterns: Iterable[str] = ()):
        self._secrets: dict[str, str] = {}
        self._patterns = [re.compile(p) for p in patterns]
        self._regex: re.Pattern[str] | None = None
        for name, value in (secrets or {}).items():
            self.add(name, value)

    def add(self, name: str, value: str | None) -> None:
        # Very short values would redact half of every log; they cannot be secret anyway.
        if value and len(value) >= 4:
            self._secrets[value] = name
            self._regex = None

    def __bool__(self) -> bool:
        return bool(self._secrets or self._patterns)

    def text(self, s: str) -> str:
        if not s or not self:
            return s
        if self._secrets:
            if self._regex is None:
                # Longest first, so a secret containing another is replaced whole.
                alts = sorted(self._secrets, key=len, reverse=True)
                self._regex = re.compile("|".join(re.escape(a) for a in alts))
            s = self._regex.sub(lambda m: f"[REDACTED:{self._secrets[m.group(0)]}]", s)
            if CUT_MARKER.search(s):
                s = self._mask_cut_edges(s)
        for p in self._patterns:
            s = p.sub("[REDACTED]", s)
        return s

    def _mask_cut_edges(self, s: str) -> str:
        """Where text was dropped (a `cut` note, the output cap's note) a secret may have been
        split: the text before a note may end with a secret's start, the text after it may
        begin with its end. Mask those pieces too, so no part of a secret is ever written."""
        parts = CUT_MARKER.split(s)
        notes = CUT_MARKER.findall(s)
        for i, part in enumerate(parts):
            if i < len(notes):
                part = self._mask_edge(part, at_end=True)
            if i > 0:
                part = self._mask_edge(part, at_end=False)
            parts[i] = part
        out = [parts[0]]
        for note, part in zip(notes, parts[1:], strict=True):
            out += [note, part]
        return "".join(out)

    def _mask_edge(self, text: str, *, at_end: bool) -> str:
        best = 0
        name = ""
        for value, secret_name in self._secrets.items():
            for k in range(min(len(value) - 1, len(text)), MIN_PIECE - 1, -1):
                piece = value[:k] if at_end else value[-k:]
                if (text.endswith(piece) if at_end else text.startswith(piece)):
                    if k > best:
                        best, name = k, secret_name
                    break
        if not best:
            return text
        mark = f"[REDACTED:{name}]"
        return text[:-best] + mark if at_end else mark + text[best:]

    def cut(self, s: str, limit: int, *, keep: Literal["head", "tail", "both"] = "tail") -> str:
        """Redact first, then cut: a secret whole in `s` is never written in part, and a
        `[REDACTED:NAME]` mark the cut would split is kept whole (the limit stretches)."""
        s = self.text(s)
        if len(s) <= limit or not self:
            return cut(s, limit, keep=keep)
        for m in _MARK.finditer(s):
            if keep in ("tail", "both") and m.start() < len(s) - limit < m.end():
                limit = len(s) - m.start()
            if keep in ("head", "both") and m.start() < limit < m.end():
                limit = m.end()
        return cut(s, limit, keep=keep)

    def data(self, obj: Any) -> Any:
        """Redact every string inside dicts/lists/tuples (keys included)."""
        if not self:
            return obj
        if isinstance(obj, str):
            return self.text(obj)
        if isinstance(obj, dict):
            return {self.data(k): self.data(v) for k, v in obj.items()}
        if isinstance(obj, (list, tuple)):
            return [self.data(v) for v in obj]
        return obj
