"""`custom` — a script reads the context JSON on stdin and prints {passed, score, reason, details}."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from proctor.checks.base import CheckConfig, CheckContext, CheckType
from proctor.model import CheckOutcome


class Config(CheckConfig):
    script: str = Field(description="Script path; relative to the spec file's directory. Run directly if executable, else with the interpreter its suffix implies.")
    runs_in: Literal["host", "sandbox"] = Field("host", description="host: run by proctor with read access to the workspace; sandbox: run inside the trial's sandbox.")
    timeout: float = Field(60, gt=0, description="Seconds before the script is killed (the check errors).")


async def evaluate(cfg: Config, ctx: CheckContext) -> CheckOutcome:
    raise NotImplementedError


CHECK = CheckType(
    name="custom",
    summary="the script prints JSON with passed: true (exit != 0 means the check errored)",
    config=Config,
    evaluate=evaluate,
    invariant=True,
)
