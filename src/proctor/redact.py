"""The one redaction helper every writer uses: secret values become [REDACTED:NAME]."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any


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
        for p in self._patterns:
            s = p.sub("[REDACTED]", s)
        return s

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
