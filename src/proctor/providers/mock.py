"""`mock/…`: a scripted model in this process (same scripts as `proctor mock-llm`).

  mock/solver         runs the task's `solution` commands, one per turn, then answers "done"
  mock/done           answers "done" at once, running nothing
  mock/PATH.yaml      a script file (relative to the spec's directory, else the cwd)
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from proctor.errors import UsageError
from proctor.jsontext import encoder
from proctor.providers.base import (
    Message,
    ModelResponse,
    ProviderError,
    Tool,
    Usage,
    retryable_status,
)
from proctor.providers.script_engine import (
    BuiltinScript,
    Fault,
    ScriptLike,
    ScriptState,
    estimate_tokens,
)
from proctor.providers.settings import ProviderSettings

if TYPE_CHECKING:
    from proctor.providers.script import Script

BUILTIN = ("solver", "done")
_json = encoder()  # json.dumps, its encoder made once (a call's arguments, every turn)
_quoted = json.encoder.encode_basestring_ascii  # a string as json.dumps writes it


def json_length(arguments: dict[str, Any]) -> int:
    """len(json.dumps(arguments)): of a dict of strings (a run_command call's), counted from
    its strings' JSON forms (`{"k": "v", ...}`), without writing the whole text."""
    n = 4 * len(arguments)  # the braces, each `: `, and each `, ` but one
    for k, v in arguments.items():
        if type(k) is not str or type(v) is not str:
            return len(_json(arguments))
        n += len(_quoted(k)) + len(_quoted(v))
    return n or 2


def resolve_script_path(name: str, base_dir: str | None) -> Path | None:
    """The script file `mock/NAME` refers to, or None if it is not found."""
    for root in (base_dir, None):
        p = Path(root) / name if root else Path(name)
        if p.is_file():
            return p
    return None


def script_for(name: str, base_dir: str | None, solution: list[str] | None) -> Script | BuiltinScript:
    """The script of `mock/NAME`: a built-in one is plain (script_engine), a file is read
    and validated with the script models (pydantic: imported only then)."""
    if name == "solver":
        return BuiltinScript.solver(solution or [])
    if name == "done":
        return BuiltinScript()
    from proctor.providers.script import load_script

    path = resolve_script_path(name, base_dir)
    if path is None:
        raise UsageError(f"mock/{name}: no such script (built-in mock models: "
                         f"{', '.join('mock/' + b for b in BUILTIN)}; otherwise give a script "
                         "path relative to the spec's directory)")
    return load_script(path)


def first_user_text(messages: list[Message]) -> str:
    for m in messages:
        if m.get("role") == "user":
            return str(m.get("content") or "")
    return ""


class Tally:
    """What a call counts of its conversation (answers so far, characters), carried to the
    next call: the tool loop only appends to its list, so each call counts only what is new
    since the last one instead of every message again. Another list, a shorter one, or a
    different message where the last counted one was is counted afresh."""

    def __init__(self) -> None:
        self.messages: list[Message] | None = None
        self.counted = 0  # messages[:counted] are in the counts
        self.last: Message | None = None  # messages[counted - 1] when counted
        self.answers = 0  # assistant messages
        self.chars = 0  # characters of every message's content

    def count(self, messages: list[Message]) -> tuple[int, int]:
        """(assistant messages, characters of content) of `messages`."""
        n = self.counted
        if messages is not self.messages or len(messages) < n or (
                n and messages[n - 1] is not self.last):
            self.messages, n, self.answers, self.chars = messages, 0, 0, 0
        for m in messages[n:]:
            self.chars += len(str(m.get("content") or ""))
            if m.get("role") == "assistant":
                self.answers += 1
        self.counted = len(messages)
        self.last = messages[-1] if messages else None
        return self.answers, self.chars


class MockProvider:
    def __init__(self, name: str, script: ScriptLike):
        self.name = name
        self.state = ScriptState(script)
        self.tally = Tally()

    async def complete(self, system: str, messages: list[Message], tools: list[Tool],
                       temperature: float | None = None, max_tokens: int = 4096) -> ModelResponse:
        turn_no, chars = self.tally.count(messages)
        r = self.state.reply(system, first_user_text(messages), turn_no)
        if isinstance(r, Fault):
            if r.status == "malformed":
                raise ProviderError("malformed response (scripted)", retryable=True)
            status = int(r.status)
            raise ProviderError(f"HTTP {status}: {r.message}", status=status,
                                retryable=retryable_status(status),
                                retry_after=r.retry_after)
        if r.delay:
            await asyncio.sleep(r.delay)
        usage = r.usage
        if usage is None:
            chars_in = len(system) + chars
            chars_out = len(r.text) + sum(json_length(c.arguments) for c in r.tool_calls)
            usage = Usage(estimate_tokens(chars_in), estimate_tokens(chars_out))
        return ModelResponse(text=r.text, tool_calls=r.tool_calls, usage=usage, raw=None)

    async def aclose(self) -> None:
        pass


def create(model: str, name: str, settings: ProviderSettings, *, base_dir: str | None = None,
           solution: list[str] | None = None) -> MockProvider:
    """The provider registry's entry (proctor.providers.PROVIDERS)."""
    return MockProvider(model, script_for(name, base_dir, solution))
