"""Mock model scripts: what `mock/…` models and `proctor mock-llm` answer.

The same engine serves both. A conversation is picked by its first user message / system
prompt (`when`), and the reply is its turn number N, where N = the number of assistant
messages already in the request. That makes the script stateless per conversation, so
concurrent trials each walk their own copy. Faults (`fail`) are the only state: each fires
once for its (conversation, turn) before the turn answers normally, so a retry succeeds.
Format: docs/models.md "Mock models". The engine that answers from a script, and the
built-in scripts, are proctor.providers.script_engine (no pydantic).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from proctor.errors import UsageError
from proctor.providers.base import ToolCall
from proctor.providers.script_engine import (  # the engine's names, for this module's users
    RUN_COMMAND,
    Fault,
    Reply,
    RunAs,
    ScriptState,
    estimate_tokens,
    run_calls,
)

__all__ = ["RUN_COMMAND", "Conversation", "Fault", "FaultSpec", "RateLimitSpec", "Reply",
           "RunAs", "Script", "ScriptState", "ToolSpec", "Turn", "UsageSpec", "When",
           "estimate_tokens", "load_script"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)  # built at first use


class UsageSpec(_Strict):
    input: int = Field(ge=0)
    output: int = Field(ge=0)


class FaultSpec(_Strict):
    status: int | Literal["malformed"] = Field(
        description="HTTP status to answer with (429, 500, ...), or `malformed`: a 200 whose "
        "body is not valid JSON.")
    retry_after: float | None = Field(None, ge=0, description="Retry-After header, seconds.")
    times: int = Field(1, ge=1, description="How many consecutive requests get this fault.")


class ToolSpec(_Strict):
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)


class Turn(_Strict):
    say: str | None = Field(None, description="Text of the reply. Alone, it is a final answer.")
    run: list[str] = Field(default_factory=list, description="run_command tool call(s).")
    tool: list[ToolSpec] = Field(default_factory=list, description="Any other tool call(s).")
    fail: list[FaultSpec] = Field(default_factory=list, description="Faults before the reply.")
    retry_after: float | None = Field(None, ge=0, description="Default Retry-After of `fail`s.")
    usage: UsageSpec | None = None
    delay: float = Field(0, ge=0, description="Seconds to wait before answering (latency).")

    @field_validator("run", "tool", mode="before")
    @classmethod
    def _listify(cls, v: Any) -> Any:
        return v if isinstance(v, list) else [v]

    @field_validator("fail", mode="before")
    @classmethod
    def _faults(cls, v: Any) -> list[Any]:  # `fail: 429`, `fail: [429, 500]`, `fail: {status: …}`
        v = v if isinstance(v, list) else [v]
        return [{"status": f} if isinstance(f, int | str) else f for f in v]

    @model_validator(mode="after")
    def _has_reply(self) -> Turn:
        if self.say is None and not self.run and not self.tool:
            raise ValueError("a turn needs `say`, `run` or `tool` (what to answer after any `fail`)")
        return self

    def tool_calls(self, turn_no: int) -> list[ToolCall]:
        return run_calls(self.run, turn_no, [(t.name, t.arguments) for t in self.tool])


class When(_Strict):
    prompt_contains: str | None = None
    prompt_matches: str | None = Field(None, description="Regex searched in the first user message.")
    system_contains: str | None = None

    def matches(self, system: str, prompt: str) -> bool:
        return ((self.prompt_contains is None or self.prompt_contains in prompt)
                and (self.prompt_matches is None or re.search(self.prompt_matches, prompt) is not None)
                and (self.system_contains is None or self.system_contains in system))


class Conversation(_Strict):
    when: When | None = None
    turns: list[Turn] = Field(default_factory=list)
    end: str | None = Field(None, description="Final answer once the turns run out.")
    usage: UsageSpec | None = None


class RateLimitSpec(_Strict):
    concurrent: int = Field(ge=1, description="Calls in flight above this many are refused.")
    status: int = Field(429, ge=400, le=599, description="What a refused call is answered.")
    retry_after: float | None = Field(None, ge=0, description="Retry-After of a refusal, seconds.")


class Script(_Strict):
    turns: list[Turn] = Field(default_factory=list)
    rate_limit: RateLimitSpec | None = Field(
        None, description="`proctor mock-llm` only: refuse calls above a concurrency, as a "
        "provider's rate limit does.")
    conversations: list[Conversation] = Field(default_factory=list)
    end: str = Field("done", description="Final answer once the turns run out.")
    usage: UsageSpec | None = Field(None, description="Usage of every reply (else estimated).")

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, v: Any) -> Any:
        return {"turns": v} if isinstance(v, list) else v

    @model_validator(mode="after")
    def _one_form(self) -> Script:
        if self.turns and self.conversations:
            raise ValueError("give `turns` or `conversations`, not both")
        if not self.conversations:
            self.conversations = [Conversation(turns=self.turns)]
        return self

    @classmethod
    def solver(cls, solution: list[str]) -> Script:
        """mock/solver: run the task's solution commands one per turn, then answer done."""
        return cls(turns=[Turn(run=[c]) for c in solution], end="done")


def load_script(path: str | Path) -> Script:
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as e:
        raise UsageError(f"mock script {p}: {e.strerror or e}") from None
    import yaml

    try:
        data = json.loads(text) if p.suffix == ".json" else yaml.safe_load(text)
    except (ValueError, yaml.YAMLError) as e:
        where = ""
        if mark := getattr(e, "problem_mark", None):
            where = f"{mark.line + 1}:{mark.column + 1}:"
        what = getattr(e, "problem", None) or str(e)
        raise UsageError(f"mock script {p}:{where} not valid YAML/JSON: {what}") from None
    try:
        return Script.model_validate(data if data is not None else {})
    except ValidationError as e:
        problems = "; ".join(
            f"{'.'.join(str(x) for x in err['loc']) or '<root>'}: {err['msg']}"
            for err in e.errors()
        )
        raise UsageError(f"mock script {p}: {problems}") from None
