"""`verify: {run, output_contains?, output_equals?}` — a command run after the agent exits 0
and its stdout passes the given checks."""

from __future__ import annotations

from pydantic import Field

from proctor.checks.base import CheckConfig, CheckContext, CheckType
from proctor.model import CheckOutcome


class Config(CheckConfig):
    run: str = Field(description="Shell command run with `sh -c` in the workdir after the agent finished.")
    output_contains: str | None = Field(None, description="Substring its stdout must contain.")
    output_equals: str | None = Field(None, description="Exact stdout (both sides stripped).")
    timeout: float = Field(60, gt=0, description="Seconds before the command is killed (counts as failed).")


async def evaluate(cfg: Config, ctx: CheckContext) -> CheckOutcome:
    raise NotImplementedError


CHECK = CheckType(
    name="verify",
    summary="`sh -c run` exits 0, then each given output check holds",
    config=Config,
    evaluate=evaluate,
    assertion=True,
)
