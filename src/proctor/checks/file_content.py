"""`file_content` — every given clause (contains, not_contains, pattern) holds."""

from __future__ import annotations

from pydantic import Field, model_validator

from proctor.checks.base import CheckConfig, CheckContext, CheckType
from proctor.model import CheckOutcome


class Config(CheckConfig):
    path: str = Field(description="File to read; relative paths are inside the workspace.")
    contains: str | None = Field(None, description="Substring that must appear.")
    not_contains: str | None = Field(None, description="Substring that must not appear.")
    pattern: str | None = Field(None, description="Regex that must match (re.search, re.MULTILINE).")

    @model_validator(mode="after")
    def _some_clause(self) -> Config:
        if self.contains is None and self.not_contains is None and self.pattern is None:
            raise ValueError("give at least one of contains, not_contains, pattern")
        return self


async def evaluate(cfg: Config, ctx: CheckContext) -> CheckOutcome:
    raise NotImplementedError


CHECK = CheckType(
    name="file_content",
    summary="every given clause holds: contains, not_contains, pattern (re.MULTILINE)",
    config=Config,
    evaluate=evaluate,
    invariant=True,
)
