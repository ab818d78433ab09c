"""`sql` — the first column of the first row of query equals `equals`."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from proctor.checks.base import CheckConfig, CheckContext, CheckType
from proctor.model import CheckOutcome


class Config(CheckConfig):
    service: str = Field(description="Name of a postgres or mysql service declared in `services`.")
    query: str = Field(description="SQL query; the first column of the first row is compared.")
    equals: Any = Field(description="Expected value: numbers compare numerically, others as strings, null matches SQL NULL.")


async def evaluate(cfg: Config, ctx: CheckContext) -> CheckOutcome:
    raise NotImplementedError


CHECK = CheckType(
    name="sql",
    summary="the first column of the first row equals `equals`",
    config=Config,
    evaluate=evaluate,
    invariant=True,
)
