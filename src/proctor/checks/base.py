"""The Check contract. A check type is one module declaring `CHECK = CheckType(...)`:
its name, its config (a declared class, proctor/declared.py: read without pydantic when plainly
valid; its pydantic model words errors and gives the JSON Schema and the docs table), and an
async `evaluate(config, ctx) -> CheckOutcome`."""

from __future__ import annotations

import posixpath
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

from proctor.declared import Declared
from proctor.fieldwise import Fieldwise, FrozenFieldwise
from proctor.model import CheckOutcome, CommandRecord, RunOptions, TaskDef, Trial
from proctor.providers.base import ToolCall
from proctor.results import TrialRecord
from proctor.text import cut

__all__ = ["CheckConfig", "CheckContext", "CheckType", "Evaluate", "Spent", "ToolCall", "cut"]

if TYPE_CHECKING:
    from proctor.record.recorder import Recorder
    from proctor.sandbox.base import Sandbox
    from proctor.services.base import ServiceHandle


class CheckConfig(Declared):
    """Base of every check's config: unknown keys are errors.

    The rest of proctor reads a config only through the methods below, never a field by
    name: a check whose config reads files, calls a model or has a time limit says so by
    overriding them (the defaults: none of these)."""

    # `output_equals: 100` means the text "100", as a YAML user expects.
    __model_config__ = {"extra": "forbid", "coerce_numbers_to_str": True,
                        "defer_build": True}

    def files(self) -> list[str]:
        """Spec-side files and directories the check reads, as written (relative to the spec
        file's directory, `~` allowed): `--resume` fingerprints them, a Ray run ships them."""
        return []

    def relocated(self, move: Callable[[str], str]) -> Self:
        """This config with each absolute spec-side path it runs passed through `move` (the
        copy of the spec's files on a Ray node)."""
        return self

    def judge_models(self) -> list[str]:
        """The models the check calls (checked before the run; their mock scripts found)."""
        return []

    def scaled(self, factor: float) -> Self:
        """This config with its time limit multiplied by `factor` (proctor.toml's
        `timeout_multiplier`)."""
        return self


@dataclass(eq=False, repr=False)
class Spent(Fieldwise):
    """What the trial's agent used, as recorded (`budget` reads it); None: unknown (a
    command agent's model calls are not seen by proctor)."""

    turns: int = 0
    tokens_in: int | None = 0
    tokens_out: int | None = 0
    cost_usd: float | None = None  # None: unknown (a model without a price)
    duration_s: float = 0.0  # the agent's wall time, from its start to its end

    @classmethod
    def of(cls, result: TrialRecord, agent_s: float) -> Spent:
        """The trial's figures so far (every step's), with the agent's wall time."""
        return cls(turns=result["turns"], tokens_in=result["tokens"].get("input"),
                   tokens_out=result["tokens"].get("output"), cost_usd=result["cost_usd"],
                   duration_s=round(agent_s, 4))


@dataclass(eq=False, repr=False)
class CheckContext(Fieldwise):
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
    # The model's tool calls, in order, for every model-driven agent: as the built-in agent
    # got them, or as proctor's model proxy read them from the answers (SPEC §2 tool_used).
    tool_calls: list[ToolCall] = field(default_factory=list)
    spent: Spent = field(default_factory=Spent)
    # Files grading ran or would load that the agent changed (SPEC §4): {"path", "change"};
    # any makes the trial fail (checks/_tamper.py).
    tampering: list[dict[str, str]] = field(default_factory=list)

    def tampered(self, found: list[dict[str, str]]) -> None:
        self.tampering += [f for f in found if f not in self.tampering]

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


@dataclass(frozen=True, eq=False, repr=False)
class CheckType(FrozenFieldwise):
    """A kind of check: its name, config, evaluation, and where it is allowed."""
    name: str
    summary: str  # one line: passes when ...
    config: type[CheckConfig]
    evaluate: Evaluate
    assertion: bool = False  # allowed in a suite task's `assert` list
    invariant: bool = False  # allowed as a scenario invariant's `check.type`
    scalar_field: str | None = None  # `- TYPE: value` in an assert list fills this field
    # The config's regexes that fall back to a literal match when invalid (SPEC §2), each
    # with its place in the config, e.g. (("pattern",), "git commit["): `validate` warns.
    regexes: Callable[[Any], Iterable[tuple[tuple[str | int, ...], str]]] | None = None
