"""Fixtures for check tests: a real LocalSandbox, a real Recorder, a minimal TaskDef/Trial."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from proctor.checks import registry
from proctor.checks.base import CheckContext
from proctor.model import AgentDef, CheckOutcome, CommandRecord, TaskDef, Trial
from proctor.record.recorder import Recorder
from proctor.redact import Redactor
from proctor.sandbox.local.backend import LocalSandbox
from tests.checks.helpers import make_record


@pytest.fixture
def cmd() -> Callable[..., CommandRecord]:
    return make_record


@pytest.fixture
def spec_dir(tmp_path: Path) -> Path:
    """The directory the (imaginary) spec file lives in: relative custom scripts resolve here."""
    d = tmp_path / "spec"
    d.mkdir()
    return d


@pytest.fixture
async def make_ctx(tmp_path: Path, spec_dir: Path):
    """make_ctx(commands=[...], params=..., services=..., secrets=..., prompt=..., sandbox=...)."""
    sandboxes: list[LocalSandbox] = []

    def make(commands: list[CommandRecord | str] = (), *, params: dict[str, Any] | None = None,
             services: dict[str, Any] | None = None, secrets: dict[str, str] | None = None,
             prompt: str = "Do the task.", sandbox: Any = None) -> CheckContext:
        if sandbox is None:
            sandbox = LocalSandbox(tmp_path / f"sb{len(sandboxes)}", env={})
            sandboxes.append(sandbox)
        task = TaskDef(id="task", dialect="scenario", source=str(spec_dir / "spec.yaml"),
                       base_dir=str(spec_dir), prompt=prompt, agent=AgentDef(), checks=[])
        trial = Trial(id="task.r0", task_id="task", agent="llm", model=None, help_mode=None,
                      replica=0, params=dict(params or {}))
        recorder = Recorder(tmp_path / "run" / "trials" / trial.id, Redactor())
        records = [make_record(c) if isinstance(c, str) else c for c in commands]
        return CheckContext(task=task, trial=trial, sandbox=sandbox, commands=records,
                            agent_output="", recorder=recorder, services=dict(services or {}),
                            secrets=dict(secrets or {}))

    yield make
    for sb in sandboxes:
        await sb.close()


@pytest.fixture
def ctx(make_ctx) -> CheckContext:
    """A context in which the agent ran nothing (tests append to ctx.commands)."""
    return make_ctx()


@pytest.fixture
def check() -> Callable[..., Any]:
    """await check("type", ctx, **config): validate config like the loader, then evaluate."""

    async def run(type_: str, ctx: CheckContext, **config: Any) -> CheckOutcome:
        ct = registry()[type_]
        return await ct.evaluate(ct.config(**config), ctx)

    return run
