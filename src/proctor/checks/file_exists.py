"""`file_exists: P` — P exists (file or directory); relative P is inside the workdir."""

from __future__ import annotations

from pydantic import Field

from proctor.checks.base import CheckConfig, CheckContext, CheckType
from proctor.model import CheckOutcome


class Config(CheckConfig):
    path: str = Field(description="File or directory; relative paths are inside the workdir.")


async def evaluate(cfg: Config, ctx: CheckContext) -> CheckOutcome:
    raise NotImplementedError


CHECK = CheckType(
    name="file_exists",
    summary="the path exists (file or directory)",
    config=Config,
    evaluate=evaluate,
    assertion=True,
    invariant=True,
    scalar_field="path",
)
