"""`error_contains: S` — S is a substring of the last agent command's stderr."""

from __future__ import annotations

from pydantic import Field

from proctor.checks.base import CheckConfig, CheckContext, CheckType
from proctor.model import CheckOutcome


class Config(CheckConfig):
    text: str = Field(description="Substring that must appear in the last command's stderr.")


async def evaluate(cfg: Config, ctx: CheckContext) -> CheckOutcome:
    raise NotImplementedError


CHECK = CheckType(
    name="error_contains",
    summary="S is a substring of the last agent command's stderr",
    config=Config,
    evaluate=evaluate,
    assertion=True,
    scalar_field="text",
)
