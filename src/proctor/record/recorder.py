"""Per-trial trace.jsonl (model calls, tool calls) and audit.jsonl (commands, file writes,
DB writes, HTTP calls). Every event passes through the redactor before it touches disk."""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from proctor.jsontext import encoder
from proctor.redact import Redactor

if TYPE_CHECKING:
    from proctor.record.events import Timings, TraceEvent

_APPEND = os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC
_REPLACE = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC
# One encoder for every line: json.dumps(..., default=str) builds a new one per call (half
# of what a small line costs; a trial writes several), the C encoder made once (jsontext).
_encode = encoder(default=str)


class Recorder:
    """Each line is appended with one write as it comes (no buffer): on disk at once for a
    custom check or a reader of a run cut short, and a handful of system calls a trial."""

    def __init__(self, trial_dir: Path, redactor: Redactor):
        self.trial_dir = trial_dir
        self._dir = str(trial_dir)  # the files opened by name: joined as text, once each
        self.redactor = redactor
        self._trace_fd: int | None = None  # trace.jsonl, once its first line is written
        self._audit_fd: int | None = None  # audit.jsonl, likewise

    @property
    def trace_path(self) -> Path:
        return self.trial_dir / "trace.jsonl"

    @property
    def audit_path(self) -> Path:
        return self.trial_dir / "audit.jsonl"

    @classmethod
    def fresh(cls, trial_dir: Path, redactor: Redactor) -> Recorder:
        """A recorder for a trial directory made now, empty: whatever an earlier attempt of
        the trial left there (a run cut short, then resumed) is removed first."""
        try:
            os.mkdir(trial_dir)
        except FileExistsError:
            shutil.rmtree(trial_dir, ignore_errors=True)
            trial_dir.mkdir(exist_ok=True)
        except FileNotFoundError:  # the run's first trial: its directories too
            trial_dir.mkdir(parents=True, exist_ok=True)
        return cls(trial_dir, redactor)

    def trace(self, event: TraceEvent) -> None:
        """One trace line: an event of record/events.py, given its `time` here (when the
        writer gave none)."""
        line: dict[str, Any] = event  # type: ignore[assignment]  # the event is its JSON form
        if "time" not in line:
            line["time"] = time.time()
        fd = self._trace_fd
        if fd is None:
            fd = self._trace_fd = self._open("trace.jsonl")
        _write(fd, (_encode(self.redactor.data(line)) + "\n").encode())

    def timings(self, timings: Timings) -> None:
        """`timings.json`: the trial's wall seconds per phase (docs/reports.md). Beside the
        trace, not in results.json: every report reads results.json whole."""
        data = (_encode(timings) + "\n").encode()
        path = os.path.join(self._dir, "timings.json")
        try:  # one open and one write (a text file object costs five calls more)
            fd = os.open(path, _REPLACE, 0o666)
        except FileNotFoundError:  # the trial's directory was removed under it
            self.trial_dir.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, _REPLACE, 0o666)
        try:
            _write(fd, data)
        finally:
            os.close(fd)

    def audit(self, type_: str, details: Mapping[str, object]) -> None:
        """One audit line: {"type": "command"|"file_write"|"db_write"|"http_call", "time", "details"}."""
        fd = self._audit_fd
        if fd is None:
            fd = self._audit_fd = self._open("audit.jsonl")
        event = {"type": type_, "time": time.time(), "details": details}
        _write(fd, (_encode(self.redactor.data(event)) + "\n").encode())

    def _open(self, name: str) -> int:
        """The trial's log `name`, opened for appending (at its first line)."""
        path = os.path.join(self._dir, name)
        try:
            return os.open(path, _APPEND, 0o666)
        except FileNotFoundError:  # the trial's directory is made with its first line
            self.trial_dir.mkdir(parents=True, exist_ok=True)
            return os.open(path, _APPEND, 0o666)

    def close(self) -> None:
        fds = (self._trace_fd, self._audit_fd)
        self._trace_fd = self._audit_fd = None
        for fd in fds:
            if fd is not None:
                os.close(fd)


def _write(fd: int, line: bytes) -> None:
    while line:  # a regular file takes it whole; a signal may cut a write short
        line = line[os.write(fd, line):]
