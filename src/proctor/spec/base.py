"""What every spec model shares: unknown keys are errors, and a few field types."""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from proctor.spec.plain import ENV_NAME, ENV_NAME_RULE

__all__ = ["ENV_NAME", "ENV_NAME_RULE", "EnvMap", "Limits", "SpecModel", "valid_regexes"]


class SpecModel(BaseModel):
    # Numbers where text is expected are taken as text (`output_equals: 100`), as YAML users expect.
    # defer_build: a model's validator is built at its first use, not at import (start-up
    # time: a run builds the few models its specs use, not the whole dialect's ~70).
    model_config = ConfigDict(extra="forbid", coerce_numbers_to_str=True, defer_build=True)


def _env_value(v: Any) -> Any:
    # `DEBUG: true` and `PORT: 8080` mean the strings a shell would see.
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return str(v)
    return "" if v is None else v


def _env_names(v: Any) -> Any:
    if isinstance(v, dict):
        bad = [str(k) for k in v if not ENV_NAME.match(str(k))]
        if bad:
            raise ValueError(f"{bad[0]!r} is not an environment variable name ({ENV_NAME_RULE})")
    return v


EnvMap = Annotated[dict[str, Annotated[str, BeforeValidator(_env_value)]], BeforeValidator(_env_names)]


def valid_regexes(patterns: list[str]) -> list[str]:
    """A validator's body: every pattern compiles (`ignore_commands`, ...)."""
    for p in patterns:
        try:
            re.compile(p)
        except re.error as e:
            raise ValueError(f"invalid regex {p!r}: {e}") from None
    return patterns


class Limits(SpecModel):
    """Limits that stop the agent (every model-driven agent: `llm`, `claude-code`, `codex`,
    `mini-swe-agent`). The model response that reaches one is the last: its tool calls are
    not run, the agent is stopped as at a timeout, what it did until then is checked, and
    the trial records `limit_hit`."""

    turns: int | None = Field(None, ge=1, description="Model responses the agent may get.")
    tokens: int | None = Field(None, ge=1, description="Input + output tokens over every "
                               "model call.")
    cost_usd: float | None = Field(None, gt=0, description="USD over every model call (from "
                                   "the price table; an unknown price never reaches it).")

    def to_def(self, under: Limits | None = None) -> Any:
        """The model's Limits: these keys over `under`'s (a suite's default), key by key; a
        key set to null here lifts `under`'s."""
        from proctor.model import Limits as LimitsDef

        merged = {**(under.model_dump(exclude_unset=True) if under else {}),
                  **self.model_dump(exclude_unset=True)}
        return LimitsDef(**merged)
