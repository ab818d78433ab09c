"""`output_equals: S` — the last command's stdout, stripped, equals S stripped."""

from __future__ import annotations

from pydantic import Field

from proctor.checks.base import CheckConfig, CheckContext, CheckType
from proctor.model import CheckOutcome


class Config(CheckConfig):
    text: str = Field(description="Exact stdout of the last command (both sides stripped of surrounding whitespace).")


async def evaluate(cfg: Config, ctx: CheckContext) -> CheckOutcome:
    raise NotImplementedError


CHECK = CheckType(
    name="output_equals",
    summary="the last command's stdout, stripped, equals S stripped",
    config=Config,
    evaluate=evaluate,
    assertion=True,
    scalar_field="text",
)
