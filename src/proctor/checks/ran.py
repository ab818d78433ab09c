"""`ran: R` — some agent command matches regex R (re.search; an invalid regex matches literally)."""

from __future__ import annotations

from pydantic import Field

from proctor.checks.base import CheckConfig, CheckContext, CheckType
from proctor.model import CheckOutcome


class Config(CheckConfig):
    pattern: str = Field(description="Regular expression searched in each agent command string.")


async def evaluate(cfg: Config, ctx: CheckContext) -> CheckOutcome:
    raise NotImplementedError


CHECK = CheckType(
    name="ran",
    summary="some agent command matches regex R (re.search; an invalid regex matches literally)",
    config=Config,
    evaluate=evaluate,
    assertion=True,
    scalar_field="pattern",
)
