"""Per-trial trace.jsonl (model calls, tool calls) and audit.jsonl (commands, file writes,
DB writes, HTTP calls). Every event passes through the redactor before it touches disk."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, TextIO

from proctor.redact import Redactor


class Recorder:
    def __init__(self, trial_dir: Path, redactor: Redactor):
        self.trial_dir = trial_dir
        self.trace_path = trial_dir / "trace.jsonl"
        self.audit_path = trial_dir / "audit.jsonl"
        self.redactor = redactor
        self._trace: TextIO | None = None
        self._audit: TextIO | None = None

    def _open(self, path: Path) -> TextIO:
        self.trial_dir.mkdir(parents=True, exist_ok=True)
        return path.open("a", encoding="utf-8")

    def trace(self, event: dict[str, Any]) -> None:
        """One trace line, e.g. {"type": "command", ...} or {"type": "model_call", ...}."""
        if self._trace is None:
            self._trace = self._open(self.trace_path)
        event.setdefault("time", time.time())
        self._trace.write(json.dumps(self.redactor.data(event), default=str) + "\n")

    def audit(self, type_: str, details: dict[str, Any]) -> None:
        """One audit line: {"type": "command"|"file_write"|"db_write"|"http_call", "time", "details"}."""
        if self._audit is None:
            self._audit = self._open(self.audit_path)
        line = {"type": type_, "time": time.time(), "details": details}
        self._audit.write(json.dumps(self.redactor.data(line), default=str) + "\n")

    def flush(self) -> None:
        for f in (self._trace, self._audit):
            if f is not None:
                f.flush()

    def close(self) -> None:
        for f in (self._trace, self._audit):
            if f is not None:
                f.close()
        self._trace = self._audit = None
