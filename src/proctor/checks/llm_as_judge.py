"""`llm_as_judge` — a model scores the input against criteria; passes when score >= pass_threshold."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from proctor.checks.base import CheckConfig, CheckContext, CheckType
from proctor.model import CheckOutcome


class Config(CheckConfig):
    model: str = Field("paragon-fast", description="provider/model, or the aliases paragon-fast / paragon-max (PROCTOR_JUDGE_FAST, PROCTOR_JUDGE_MAX).")
    criteria: str = Field(description="What to evaluate, in free text.")
    input_from: str = Field("agent_output", description="agent_output, stdout, workspace, or SERVICE.FIELD of an http_mock.")
    rubric: dict[str, Any] | str | None = Field(None, description="Optional {pass, fail} descriptions shown to the judge.")
    temperature: float = Field(0, ge=0, le=2, description="Sampling temperature for the judge.")
    pass_threshold: float = Field(0.5, ge=0, le=1, description="The judge's score must be >= this to pass.")


async def evaluate(cfg: Config, ctx: CheckContext) -> CheckOutcome:
    raise NotImplementedError


CHECK = CheckType(
    name="llm_as_judge",
    summary="the judge model's score >= pass_threshold (continuous score)",
    config=Config,
    evaluate=evaluate,
    invariant=True,
)
