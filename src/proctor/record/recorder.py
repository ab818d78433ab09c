"""Per-trial trace.jsonl (model calls, tool calls) and audit.jsonl (commands, file writes,
DB writes, HTTP calls). Every event passes through the redactor before it touches disk."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from proctor.redact import Redactor


class Recorder:
    """Each line is appended with one write as it comes (no buffer): on disk at once for a
    custom check or a reader of a run cut short, and a handful of system calls a trial."""

    def __init__(self, trial_dir: Path, redactor: Redactor):
        self.trial_dir = trial_dir
        self.trace_path = trial_dir / "trace.jsonl"
        self.audit_path = trial_dir / "audit.jsonl"
        self.redactor = redactor
        self._fds: dict[Path, int] = {}

    def trace(self, event: dict[str, Any]) -> None:
        """One trace line, e.g. {"type": "command", ...} or {"type": "model_call", ...}."""
        event.setdefault("time", time.time())
        self._append(self.trace_path, event)

    def audit(self, type_: str, details: dict[str, Any]) -> None:
        """One audit line: {"type": "command"|"file_write"|"db_write"|"http_call", "time", "details"}."""
        self._append(self.audit_path, {"type": type_, "time": time.time(), "details": details})

    def _append(self, path: Path, event: dict[str, Any]) -> None:
        fd = self._fds.get(path)
        if fd is None:
            if not self._fds:
                self.trial_dir.mkdir(parents=True, exist_ok=True)
            fd = self._fds[path] = os.open(
                path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o666)
        line = (json.dumps(self.redactor.data(event), default=str) + "\n").encode()
        while line:  # a regular file takes it whole; a signal may cut a write short
            line = line[os.write(fd, line):]

    def close(self) -> None:
        fds, self._fds = self._fds, {}
        for fd in fds.values():
            os.close(fd)
