"""`exit_code: N` — the last agent command exited with N."""

from __future__ import annotations

from pydantic import Field

from proctor.checks.base import CheckConfig, CheckContext, CheckType
from proctor.model import CheckOutcome


class Config(CheckConfig):
    code: int = Field(description="Expected exit code of the last agent command.")


async def evaluate(cfg: Config, ctx: CheckContext) -> CheckOutcome:
    raise NotImplementedError


CHECK = CheckType(
    name="exit_code",
    summary="the last agent command exited with N",
    config=Config,
    evaluate=evaluate,
    assertion=True,
    scalar_field="code",
)
