"""Errors a user can cause. Each renders as one clear line; none should ever traceback."""

from __future__ import annotations

from dataclasses import dataclass

from proctor.fieldwise import FrozenFieldwise


@dataclass(frozen=True, eq=False, repr=False)
class SpecIssue(FrozenFieldwise):
    """One problem of a spec, at FILE:LINE:COL and a field path."""
    file: str
    line: int  # 1-based; 0: the path itself (missing, empty): no position to give
    col: int  # 1-based
    path: str  # field path, e.g. "tasks[3].assert[1]"
    message: str
    severity: str = "error"  # or "warning"
    moot_with: str = ""  # a warning that no longer applies when running with this backend

    def __str__(self) -> str:
        if self.severity == "warning":
            where = f"{self.path}: " if self.path else ""
            return f"{self.file}:{self.line}:{self.col}: warning: {where}{self.message}"
        if self.line == 0:  # `nothere/: no such file or directory`, not `nothere/:1:1: <root>`
            return f"{self.file}: {self.message}"
        return f"{self.file}:{self.line}:{self.col}: {self.path or '<root>'}: {self.message}"


class ProctorError(Exception):
    """Base for errors shown to the user as a message, with an exit code."""

    exit_code = 2


class SpecError(ProctorError):
    """One or more problems in spec files; `issues` holds every one of them."""

    def __init__(self, issues: list[SpecIssue]):
        self.issues = issues
        super().__init__("\n".join(str(i) for i in issues))


class UsageError(ProctorError):
    """Bad command-line usage or configuration (missing API key, unknown run dir, ...)."""


class SetupError(ProctorError):
    """The environment cannot run what was asked (missing server binary, bad seed, ...).

    Raised before any trial runs; exit code 2 like other input errors.
    """


class ServiceError(Exception):
    """A backing service failed for one trial (server died, clone failed). The trial is
    `error` with this message; the run goes on."""
