"""The mock script engine: a model's answers from a script (`ScriptState`), and the built-in
scripts (`mock/solver`, `mock/done`) as plain classes.

Nothing here imports pydantic: a run of a built-in mock model builds no model class and
validates nothing per trial (start-up time, issue 37). Script files are read and validated
by proctor.providers.script, whose models have the same attributes (`ScriptLike`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from proctor.providers.base import ToolCall, Usage

RUN_COMMAND = "run_command"


# What the engine reads of a script: proctor.providers.script's models, or the plain
# built-ins below.

class UsageLike(Protocol):
    @property
    def input(self) -> int: ...
    @property
    def output(self) -> int: ...


class FaultLike(Protocol):
    @property
    def status(self) -> int | str: ...
    @property
    def retry_after(self) -> float | None: ...
    @property
    def times(self) -> int: ...


class TurnLike(Protocol):
    @property
    def say(self) -> str | None: ...
    @property
    def fail(self) -> Sequence[FaultLike]: ...
    @property
    def retry_after(self) -> float | None: ...
    @property
    def usage(self) -> UsageLike | None: ...
    @property
    def delay(self) -> float: ...
    def tool_calls(self, turn_no: int) -> list[ToolCall]: ...


class WhenLike(Protocol):
    def matches(self, system: str, prompt: str) -> bool: ...


class ConversationLike(Protocol):
    @property
    def when(self) -> WhenLike | None: ...
    @property
    def turns(self) -> Sequence[TurnLike]: ...
    @property
    def end(self) -> str | None: ...
    @property
    def usage(self) -> UsageLike | None: ...


class ScriptLike(Protocol):
    @property
    def conversations(self) -> Sequence[ConversationLike]: ...
    @property
    def end(self) -> str: ...
    @property
    def usage(self) -> UsageLike | None: ...


def run_calls(commands: Sequence[str], turn_no: int,
              others: Sequence[tuple[str, dict[str, Any]]] = ()) -> list[ToolCall]:
    """A turn's tool calls: a run_command call per command, then the other tools'."""
    calls = [*((RUN_COMMAND, {"command": c}) for c in commands), *others]
    return [ToolCall(f"call_{turn_no}_{i}", n, a) for i, (n, a) in enumerate(calls)]


@dataclass(frozen=True)
class PlainTurn:
    """A built-in script's turn: run these commands; no faults, no latency."""
    run: tuple[str, ...] = ()
    say: str | None = None
    fail: tuple[FaultLike, ...] = ()
    retry_after: float | None = None
    usage: UsageLike | None = None
    delay: float = 0.0

    def tool_calls(self, turn_no: int) -> list[ToolCall]:
        return run_calls(self.run, turn_no)


@dataclass(frozen=True)
class PlainConversation:
    """A scripted conversation as written: its turns, when it applies, its end."""
    turns: tuple[PlainTurn, ...] = ()
    when: WhenLike | None = None
    end: str | None = None
    usage: UsageLike | None = None


@dataclass(frozen=True)
class BuiltinScript:
    """`mock/solver` and `mock/done`: one conversation, answered "done" once its turns run
    out (as a script file's `Script(turns=...)`)."""
    conversations: tuple[PlainConversation, ...] = field(
        default_factory=lambda: (PlainConversation(),))
    end: str = "done"
    usage: UsageLike | None = None
    rate_limit: None = None  # `proctor mock-llm` only: a built-in limits nothing

    @classmethod
    def solver(cls, solution: Sequence[str]) -> BuiltinScript:
        """mock/solver: run the task's solution commands one per turn, then answer done."""
        turns = tuple(PlainTurn(run=(c,)) for c in solution)
        return cls(conversations=(PlainConversation(turns=turns),))


@dataclass
class Reply:
    """A scripted model's answer to one call."""
    text: str
    tool_calls: list[ToolCall]
    usage: Usage | None  # None: the caller estimates it
    delay: float = 0.0


@dataclass
class Fault:
    """A scripted model call that fails: an HTTP status or a malformed answer."""
    status: int | str  # an HTTP status, or "malformed"
    retry_after: float | None = None
    message: str = ""


# An external agent's shell tool: command -> (tool name, arguments), e.g. Claude Code's
# ("Bash", {"command": ..., "description": ...}).
RunAs = Callable[[str], tuple[str, dict[str, Any]]]


class ScriptState:
    """Answers requests from a Script; remembers only how many faults each turn has fired."""

    def __init__(self, script: ScriptLike, run_as: RunAs | None = None,
                 finish: str | None = None):
        self.script = script
        self.run_as = run_as  # `run:` turns as an external agent's own shell tool
        # An agent that ends only on a command (mini-swe-agent's submit): final answers
        # also call it.
        self.finish = finish
        self._faults_fired: dict[tuple[int, str, int], int] = {}

    def reply(self, system: str, prompt: str, turn_no: int,
              other_prompts: list[str] | None = None) -> Reply | Fault:
        """`prompt` is the first user message (it names the conversation); a conversation
        whose `when` matches none of it is also looked for in `other_prompts` (later user
        messages: agents like Codex put their context first)."""
        ci = _conversation(self.script.conversations, system, prompt)
        for text in other_prompts or ():
            if ci is not None:
                break
            ci = _conversation(self.script.conversations, system, text)
        if ci is None:
            return Fault(400, message="no conversation of the mock script matches this prompt")
        conv = self.script.conversations[ci]
        usage_spec = conv.usage or self.script.usage
        if turn_no >= len(conv.turns):
            end = conv.end if conv.end is not None else self.script.end
            return self._as_agent(Reply(end, [], _usage(usage_spec)), turn_no)
        turn = conv.turns[turn_no]
        if turn.fail:
            key = (ci, hashlib.blake2b(f"{system}\0{prompt}".encode(), digest_size=8).hexdigest(),
                   turn_no)
            fired = self._faults_fired.get(key, 0)
            plan = [f for f in turn.fail for _ in range(f.times)]
            if fired < len(plan):
                self._faults_fired[key] = fired + 1
                f = plan[fired]
                return Fault(f.status, f.retry_after if f.retry_after is not None else turn.retry_after,
                             f"scripted fault {f.status} at turn {turn_no}")
        return self._as_agent(Reply(turn.say or "", turn.tool_calls(turn_no),
                                    _usage(turn.usage or usage_spec), turn.delay), turn_no)

    def _as_agent(self, reply: Reply, turn_no: int) -> Reply:
        """`run:` calls (and a final answer, with `finish`) as the agent's own shell tool."""
        if self.run_as is None:
            return reply
        run_as = self.run_as
        reply.tool_calls = [ToolCall(c.id, *run_as(c.arguments["command"]))
                            if c.name == RUN_COMMAND else c for c in reply.tool_calls]
        if self.finish is not None and not reply.tool_calls:
            reply.tool_calls = [ToolCall(f"call_{turn_no}_0", *run_as(self.finish))]
        return reply


def _conversation(conversations: Sequence[ConversationLike], system: str,
                  text: str) -> int | None:
    """The first conversation whose `when` matches (or that has none), by index."""
    for i, c in enumerate(conversations):
        if c.when is None or c.when.matches(system, text):
            return i
    return None


def _usage(spec: UsageLike | None) -> Usage | None:
    return Usage(spec.input, spec.output) if spec else None


def estimate_tokens(chars: int) -> int:
    """Scripts without `usage` report about one token per four characters."""
    return max(1, (chars + 3) // 4)

