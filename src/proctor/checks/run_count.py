"""`run_count: {pattern, min, max}` — min <= matching agent commands <= max."""

from __future__ import annotations

from pydantic import Field, model_validator

from proctor.checks.base import CheckConfig, CheckContext, CheckType
from proctor.model import CheckOutcome


class Config(CheckConfig):
    pattern: str = Field(description="Regular expression searched in each agent command string.")
    min: int = Field(0, ge=0, description="At least this many matching commands (inclusive).")
    max: int | None = Field(None, ge=0, description="At most this many (inclusive); unbounded if unset.")

    @model_validator(mode="after")
    def _min_le_max(self) -> Config:
        if self.max is not None and self.min > self.max:
            raise ValueError(f"min ({self.min}) is greater than max ({self.max}); swap them or raise max")
        return self


async def evaluate(cfg: Config, ctx: CheckContext) -> CheckOutcome:
    raise NotImplementedError


CHECK = CheckType(
    name="run_count",
    summary="min <= number of agent commands matching pattern <= max",
    config=Config,
    evaluate=evaluate,
    assertion=True,
)
