"""The Check contract. A check type is one module declaring `CHECK = CheckType(...)`:
its name, its config model (which also gives the JSON Schema and the docs table), and an
async `evaluate(config, ctx) -> CheckOutcome`."""

from __future__ import annotations

import posixpath
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict

from proctor.model import CheckOutcome, CommandRecord, RunOptions, TaskDef, Trial
from proctor.text import cut

__all__ = ["CheckConfig", "CheckContext", "CheckType", "Evaluate", "cut"]

if TYPE_CHECKING:
    from proctor.record.recorder import Recorder
    from proctor.sandbox.base import Sandbox
    from proctor.services.base import ServiceHandle


class CheckConfig(BaseModel):
    """Base of every check's config: unknown keys are errors."""

    # `output_equals: 100` means the text "100", as a YAML user expects.
    model_config = ConfigDict(extra="forbid", coerce_numbers_to_str=True)


@dataclass
class CheckContext:
    """Everything a check may look at once the agent has finished."""

    task: TaskDef
    trial: Trial
    sandbox: Sandbox
    commands: list[CommandRecord]  # agent commands only, in order (SPEC §2)
    agent_output: str
    recorder: Recorder
    options: RunOptions = field(default_factory=RunOptions)
    services: dict[str, ServiceHandle] = field(default_factory=dict)
    secrets: dict[str, str] = field(default_factory=dict)

    @property
    def workdir(self) -> Path:
        """The workspace as commands in the sandbox see it."""
        return Path(self.sandbox.workdir)

    @property
    def last_command(self) -> CommandRecord | None:
        return self.commands[-1] if self.commands else None

    def resolve(self, path: str) -> str:
        """A path from the spec, as the sandbox sees it: relative ones are inside the workdir."""
        return posixpath.normpath(posixpath.join(self.sandbox.workdir, path))


Evaluate = Callable[[Any, CheckContext], Awaitable[CheckOutcome]]


@dataclass(frozen=True)
class CheckType:
    name: str
    summary: str  # one line: passes when ...
    config: type[CheckConfig]
    evaluate: Evaluate
    assertion: bool = False  # allowed in a suite task's `assert` list
    invariant: bool = False  # allowed as a scenario invariant's `check.type`
    scalar_field: str | None = None  # `- TYPE: value` in an assert list fills this field
