"""`command_exit` — `sh -c command` in the workspace exits with exit_code."""

from __future__ import annotations

from pydantic import Field

from proctor.checks.base import CheckConfig, CheckContext, CheckType
from proctor.model import CheckOutcome


class Config(CheckConfig):
    command: str = Field(description="Shell command run with `sh -c` in the workspace.")
    exit_code: int = Field(0, description="Expected exit code.")
    timeout: float = Field(60, gt=0, description="Seconds before the command is killed (counts as failed).")


async def evaluate(cfg: Config, ctx: CheckContext) -> CheckOutcome:
    raise NotImplementedError


CHECK = CheckType(
    name="command_exit",
    summary="`sh -c command` in the workspace exits with exit_code",
    config=Config,
    evaluate=evaluate,
    invariant=True,
)
