"""The events of a trial's `trace.jsonl`, one TypedDict per `type`: what the recorder is
given (`Recorder.trace`) and what the reports read back (`report/turns.py`, `show`, the
exports). They are the lines' JSON form, key for key, so writing one costs nothing more than
the dict it is; the type checker holds every writer and reader to the keys declared here.

Every line also has `time` (unix seconds): the recorder adds it, so no type here names it
(readers `.get("time")`).
Readers meet traces written by older proctors too: they read with `.get` and a default, and
keep a `type` they do not know as a generic line (a newer proctor may add types and keys).
No `from __future__ import annotations`: TypedDict tells NotRequired keys from evaluated ones.
"""

from typing import TYPE_CHECKING, Any, Literal, NotRequired, cast

from typing_extensions import TypedDict  # pydantic reads typing's only from 3.12

if TYPE_CHECKING:
    from collections.abc import Sequence

    from proctor.model import CommandRecord, Process


class ProcessLine(TypedDict):
    """One program an agent command started (`proctor.model.Process.to_dict`)."""

    argv: list[str]
    parent: int  # index in the command's `processes`; -1: the command's own shell
    exit_code: int | None
    exe: NotRequired[str]  # the file it executed, when it differs from nothing known
    exe_lead: NotRequired[int]  # leading argv entries `exe` stands for, when not 1


class CommandLine(TypedDict):
    """One agent command (`proctor.model.CommandRecord.to_dict`)."""

    command: str
    argv: list[str]
    cwd: str
    exit_code: int | None
    stdout: str
    stderr: str
    started_at: float
    duration_s: float
    timed_out: bool
    truncated: bool
    processes: list[ProcessLine]
    source: Literal["agent", "traced", "launcher"]
    tool_call_id: str | None


class CommandEvent(CommandLine):
    """An agent command; `ignored` (why) when it is set aside: in the trace only."""

    type: Literal["command"]
    ignored: NotRequired[str]


class CommandProcessesEvent(TypedDict):
    """What a command left running joined its processes after it returned (agents/base.py
    `settle`): the command's whole list, read to the end."""

    type: Literal["command_processes"]
    command: str
    started_at: float
    processes: list[ProcessLine]


class Usage(TypedDict):
    input: int
    output: int


class ModelCallEvent(TypedDict):
    """One model call: the built-in agent's (`turn`, `request` {history, messages[, system,
    tools]}, `response` {text, tool_calls}), a judge's (`purpose`: "judge"), or one the model
    proxy saw between an external agent and its model (`source`: "proxy", `path`, `status`,
    the request and response bodies as sent; `side`: a call of another model)."""

    type: Literal["model_call"]
    model: NotRequired[str]
    turn: NotRequired[int]
    purpose: NotRequired[str]
    source: NotRequired[Literal["proxy"]]
    path: NotRequired[str]
    status: NotRequired[int | None]
    side: NotRequired[bool]
    request: NotRequired[Any]  # a dict as sent (or the first 1,000 characters of a body)
    response: NotRequired[Any]  # {text, tool_calls}, or the proxied body's text
    usage: NotRequired[Usage]
    latency_s: NotRequired[float]
    attempt: NotRequired[int]
    retries: NotRequired[list[Any]]
    error: NotRequired[str]
    limit: NotRequired[str]  # the proxied answer that reached a limit


class LimitEvent(TypedDict):
    """The built-in agent reached a limit (SPEC §2 "Limits")."""

    type: Literal["limit"]
    limit: str  # turns | tokens | cost_usd
    message: str
    tool_calls_not_run: int


class Tokens(TypedDict):
    input: int | None  # None: not known
    output: int | None


class AgentStopEvent(TypedDict):
    type: Literal["agent_stop"]
    reason: str  # done | timeout | max_turns | error | a limit
    turns: int
    tokens: Tokens


class AgentStdoutEvent(TypedDict):
    """All an external agent printed, when that is more than its answer."""

    type: Literal["agent_stdout"]
    stdout: str
    truncated: bool


class AgentTimeoutEvent(TypedDict):
    type: Literal["agent_timeout"]
    timeout_s: float


class AgentStateWriteEvent(TypedDict):
    """A write to the agent program's own state (`Agent.state_paths`), kept out of the
    audit log (`proctor.record.fsdiff` change)."""

    type: Literal["agent_state_write"]
    path: str
    change: str  # created | modified | deleted
    size: int
    kind: str  # file | dir | symlink ...


class StepEvent(TypedDict):
    """A step of a multi-step task begins."""

    type: Literal["step"]
    name: str


class SetupEvent(TypedDict):
    type: Literal["setup"]
    command: str
    exit_code: int | None
    stdout: str
    stderr: str


class WaitForEvent(TypedDict):
    """A service's `wait_for` command that never succeeded."""

    type: Literal["wait_for"]
    service: str
    command: str
    exit_code: int | None
    stderr: str


class HealthcheckEvent(TypedDict):
    """The task's healthcheck that failed its retries."""

    type: Literal["healthcheck"]
    command: str
    exit_code: int | None
    stderr: str


class CheckEvent(TypedDict):
    type: Literal["check"]
    name: str
    passed: bool
    score: float
    message: str
    error: str | None


class VerifierEvent(TypedDict):
    """A Harbor task's verifier script (checks/reward.py)."""

    type: Literal["verifier"]
    script: str
    exit_code: int | None
    timed_out: bool
    stdout: str
    stderr: str


class CheckEgressEvent(TypedDict):
    """The checks' own network requests: one refused or failed (method, host, port, allowed,
    status, why), or the count of those that went through, by host (`hosts`)."""

    type: Literal["check_egress"]
    method: NotRequired[str]
    host: NotRequired[str]
    port: NotRequired[int]
    allowed: NotRequired[bool]
    status: NotRequired[int | None]
    why: NotRequired[str]
    hosts: NotRequired[dict[str, int]]


class InternalErrorEvent(TypedDict):
    """A bug in proctor cost this trial (never the run): its traceback."""

    type: Literal["internal_error"]
    traceback: str


class Timings(TypedDict, total=False):
    """A trial's `timings.json` (beside its trace): wall seconds per phase; a phase a fault
    cut short is absent."""

    provision: float  # services, sandbox, workspace, setup, healthcheck
    agent: float  # the agent, with what it left running stopped
    verify: float  # audit, checks, score (a multi-step task's steps between)
    teardown: float  # artifacts copied out, services and sandbox released


TraceEvent = (CommandEvent | CommandProcessesEvent | ModelCallEvent | LimitEvent
              | AgentStopEvent | AgentStdoutEvent | AgentTimeoutEvent | AgentStateWriteEvent
              | StepEvent | SetupEvent | WaitForEvent | HealthcheckEvent | CheckEvent
              | VerifierEvent | CheckEgressEvent | InternalErrorEvent)

# Every `type` above, for readers that tell a known event from a newer proctor's.
EVENT_TYPES = ("command", "command_processes", "model_call", "limit", "agent_stop",
               "agent_stdout", "agent_timeout", "agent_state_write", "step", "setup",
               "wait_for", "healthcheck", "check", "verifier", "check_egress", "internal_error")


def command_event(rec: "CommandRecord", ignored: str | None = None) -> CommandEvent:
    """The `command` line of an agent command: `type`, every field of the record in its
    order, then `ignored` (why) when it is set aside."""
    line: dict[str, Any] = {"type": "command", **rec.to_dict()}
    if ignored is not None:
        line["ignored"] = ignored
    # CommandRecord's fields are CommandLine's keys (tests/record/test_events.py holds them)
    return cast(CommandEvent, line)


def process_lines(processes: "Sequence[Process]") -> list[ProcessLine]:
    """The `processes` of a command line (`Process.to_dict`, whose keys are ProcessLine's)."""
    return [cast(ProcessLine, p.to_dict()) for p in processes]
