"""What a dialect's loader is given: one load's problems, files and task ids. `load.Loader`
is it; the dialects (suite, scenario, harbor) type against this Protocol and never import
load.py, which imports each of them (no import circle)."""

from __future__ import annotations

from typing import Protocol

from proctor.spec.diagnostics import Issues
from proctor.spec.yamlpos import Doc, Path


class LoadContext(Protocol):
    issues: Issues
    sources: list[str]  # files read besides YAML ones (a Harbor task.toml)

    def open_doc(self, path: str, display: str) -> Doc | None:
        """A file named by a `file://` include."""

    def read_file(self, path: str) -> Doc | None:
        """A YAML file a task directory holds, never taken for a spec of its own."""

    def claim_id(self, task_id: str, doc: Doc, path: Path) -> None:
        """A task id at its place; an error when another task has it."""

    def claim_file_id(self, task_id: str, file: str) -> bool:
        """A task id from a non-YAML file; False, with an error, when another task has it."""
