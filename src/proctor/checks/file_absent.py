"""`file_absent` — the path does not exist."""

from __future__ import annotations

from pydantic import Field

from proctor.checks.base import CheckConfig, CheckContext, CheckType
from proctor.model import CheckOutcome


class Config(CheckConfig):
    path: str = Field(description="File or directory; relative paths are inside the workspace.")


async def evaluate(cfg: Config, ctx: CheckContext) -> CheckOutcome:
    raise NotImplementedError


CHECK = CheckType(
    name="file_absent",
    summary="the path does not exist",
    config=Config,
    evaluate=evaluate,
    invariant=True,
)
