"""The Agent contract: given a trial's environment, do the task by running commands.

Agents never call the sandbox directly for their own work: they call `env.run_command`, which
executes in the sandbox and records the command (trace + audit) so the checks see it, or
run their program traced and record its tool calls with `env.record_program`. Either way
each agent command is the same record (SPEC §2, record/commands.py).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from proctor.fieldwise import Fieldwise
from proctor.model import CommandRecord, RunOptions, TaskDef, Trial
from proctor.proc import ExecResult
from proctor.providers.base import ToolCall
from proctor.providers.budget import Budget
from proctor.record.commands import Reading, from_trace, processes, read_program
from proctor.record.events import command_event, process_lines
from proctor.sandbox.trace import Trace, reread

if TYPE_CHECKING:
    from proctor.record.recorder import Recorder
    from proctor.sandbox.base import Sandbox


@dataclass(eq=False, repr=False)
class AgentResult(Fieldwise):
    """What an agent's run came to: its output, turns, tokens, cost, or error."""
    output: str = ""  # final message (llm) or stdout (command agent)
    turns: int = 0
    tokens_in: int | None = 0  # None: unknown (a program proctor cannot see the model of)
    tokens_out: int | None = 0
    cost_usd: float | None = None
    error: str | None = None  # the agent could not do its job (provider down) -> trial error
    timed_out: bool = False  # it ran out of its time (the task timeout)
    limit_hit: str | None = None  # a limit stopped it: "turns" | "tokens" | "cost_usd"
    # Where `error` came from (SPEC §5 error_kind): "provider" (the model's API failed after
    # its retries) or "infra" (proctor could not run the agent: configuration, installation).
    error_kind: str = "infra"


@dataclass(eq=False, repr=False)
class AgentEnv(Fieldwise):
    """What an agent works with in a trial: the task, its sandbox, recorder and limits."""
    task: TaskDef
    trial: Trial
    prompt: str  # rendered with params/secrets
    sandbox: Sandbox
    recorder: Recorder
    options: RunOptions
    solution: list[str] = field(default_factory=list)  # rendered; what the oracle runs
    commands: list[CommandRecord] = field(default_factory=list)
    # The model's tool calls, in order, as the agent got them or its model proxy read them
    # (what `tool_used` counts), whether or not the agent ran them.
    tool_calls: list[ToolCall] = field(default_factory=list)
    shared: dict[str, Any] = field(default_factory=dict)  # run-wide caches (e.g. --help text)
    # What the agent has to show if the harness has to stop it (the turns, tokens and model
    # calls so far): see trial._run_agent.
    on_timeout: Callable[[], AgentResult] | None = None
    # When the agent's time is up (time.monotonic()): every command and model call gets
    # only what is left (`time_left`), so it ends with what it has so far.
    deadline: float | None = None
    timed_out: bool = False  # a command or model call was cut short by the deadline
    # The task's limits and what the agent's model calls used so far (providers/budget.py).
    budget: Budget = field(default_factory=Budget)
    # Traces of commands that left something running: read to the end by `settle`.
    _unfinished: list[tuple[Trace, list[tuple[CommandRecord, int]]]] = field(default_factory=list)

    def time_left(self, want: float | None = None) -> float:
        """Seconds a command or model call may take: `want` (default: the task timeout),
        never past the deadline."""
        want = self.task.timeout if want is None else want
        if self.deadline is None:
            return want
        return max(0.0, min(want, self.deadline - time.monotonic()))

    def out_of_time(self) -> bool:
        """Whether the deadline has passed (then the agent stops, and says so)."""
        if self.deadline is not None and time.monotonic() >= self.deadline:
            self.timed_out = True
        return self.timed_out

    async def run_command(self, command: str, timeout: float | None = None,
                          tool_call_id: str | None = None) -> CommandRecord:
        """Run one agent command (`sh -c`) in the sandbox, traced, and record it: its
        output from proctor's pipes, its programs from the trace. Call it only with time
        left (`out_of_time()` is False)."""
        res = await self.sandbox.exec(command, timeout=self.time_left(timeout), trace=True)
        if res.timed_out:
            self.out_of_time()
        trace = res.trace
        rec = CommandRecord(
            command=command,
            argv=["sh", "-c", command],
            cwd=str(self.sandbox.workdir),
            exit_code=res.exit_code,
            stdout=res.stdout,
            stderr=res.stderr,
            started_at=res.started_at,
            duration_s=res.duration_s,
            timed_out=res.timed_out,
            truncated=res.truncated,
            processes=processes(trace, 0) if trace is not None and trace.programs else [],
            tool_call_id=tool_call_id,
        )
        self._remember(trace, [(rec, 0)])
        return self.record(rec)

    def record(self, rec: CommandRecord, ignored: str | None = None) -> CommandRecord:
        """Add a command to what the checks see, the trace and the audit log. A command
        matching the spec's `ignore_commands` (or set aside by the caller: `ignored` says
        why) is in the trace only, marked `ignored`."""
        if ignored is None and self.task.agent.ignore_commands:
            ignored = next((p for p in self.task.agent.ignore_commands
                            if re.search(p, rec.command)), None)
        if ignored is not None:
            self.recorder.trace(command_event(rec, ignored))
            return rec
        self.commands.append(rec)
        self.recorder.trace(command_event(rec))
        self.recorder.audit("command", {"command": rec.command, "exit_code": rec.exit_code,
                                        "cwd": rec.cwd, "source": rec.source})
        return rec

    def record_program(self, res: ExecResult, reading: Reading,
                       tool_calls: Sequence[ToolCall] = ()) -> None:
        """The tool calls of a traced agent program, as agent commands; what it set aside
        (its housekeeping, `ignore_commands`) in the trace only. Its own program is the
        caller's to record. `tool_calls`: the model's, in order: each
        command gets the id of the next one holding its command string (a call the agent
        refused to run matches nothing)."""
        trace = res.trace
        if trace is None:
            return
        cwd, limit = str(self.sandbox.workdir), self.options.output_limit
        recorded, at = [], 0
        for part in read_program(trace, reading):
            rec = from_trace(trace, part.root, part.command, cwd=cwd, limit=limit,
                             timed_out=res.timed_out)
            for k in range(at, len(tool_calls) if part.aside is None else 0):
                if part.command in [v for v in tool_calls[k].arguments.values()
                                    if isinstance(v, str)]:
                    rec.tool_call_id, at = tool_calls[k].id, k + 1
                    break
            self.record(rec, ignored=part.aside)
            recorded.append((rec, part.root))
        self._remember(trace, recorded)

    def _remember(self, trace: Trace | None, records: list[tuple[CommandRecord, int]]) -> None:
        if trace is not None and trace.source is not None and records:
            self._unfinished.append((trace, records))

    async def settle(self) -> None:
        """Once nothing the agent started runs any more: what its commands left running
        (a server started in the background, and what it ran) joins their processes, read
        from their traces to the end."""
        for trace, records in self._unfinished:
            final = await reread(trace)
            for rec, root in records:
                if root >= len(final.programs):
                    continue
                now = processes(final, root)
                if [p.to_dict() for p in now] != [p.to_dict() for p in rec.processes]:
                    rec.processes = now
                    self.recorder.trace({"type": "command_processes", "command": rec.command,
                                         "started_at": rec.started_at,
                                         "processes": process_lines(now)})
        self._unfinished.clear()


class Agent:
    """What the engine asks of every agent type (`proctor.trial`, `proctor.audit`): subclass it,
    write `run`, and override the rest only to say something other than the defaults."""

    # Where the agent's own program keeps its state (relative paths: under HOME; a trailing
    # `/`: a directory): its writes there go to the trace, not the audit log (audit.agent_state).
    state_paths: tuple[str, ...] = ()

    def readonly_paths(self, task: TaskDef, options: RunOptions) -> list[str]:
        """Host paths this agent needs shown read-only inside an isolated sandbox (its
        program, its client's files)."""
        return []

    async def run(self, env: AgentEnv) -> AgentResult:
        """Do the task: commands through `env.run_command`, or a program run traced and
        recorded with `env.record_program`, before `env.deadline`."""
        raise NotImplementedError
