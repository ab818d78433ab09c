"""The Agent contract: given a trial's environment, do the task by running commands.

Agents never call the sandbox directly for their own work: they call `env.run_command`, which
executes in the sandbox and records the command (trace + audit) so the checks see it.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from proctor.model import CommandRecord, RunOptions, TaskDef, Trial
from proctor.proc import ExecResult

if TYPE_CHECKING:
    from proctor.record.recorder import Recorder
    from proctor.sandbox.base import Sandbox


@dataclass
class AgentResult:
    output: str = ""  # final message (llm) or stdout (command agent)
    turns: int = 0
    tokens_in: int | None = 0  # None: unknown (a program proctor cannot see the model of)
    tokens_out: int | None = 0
    cost_usd: float | None = None
    error: str | None = None  # the agent could not do its job (provider down) -> trial error


@dataclass
class AgentEnv:
    task: TaskDef
    trial: Trial
    prompt: str  # rendered with params/secrets
    sandbox: Sandbox
    recorder: Recorder
    options: RunOptions
    solution: list[str] = field(default_factory=list)  # rendered; what the oracle runs
    commands: list[CommandRecord] = field(default_factory=list)
    shared: dict[str, Any] = field(default_factory=dict)  # run-wide caches (e.g. --help text)
    # What the agent has to show if its time runs out (an external agent: the model calls
    # so far, and whether the endpoint failed).
    on_timeout: Callable[[], AgentResult] | None = None

    async def run_command(self, command: str, timeout: float | None = None) -> CommandRecord:
        """Run one agent command (`sh -c`) in the sandbox and record it."""
        res = await self.sandbox.exec(command, timeout=timeout or self.task.timeout)
        return self.record(CommandRecord(
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
        ))

    def record(self, rec: CommandRecord, ignored: str | None = None) -> CommandRecord:
        """Add a command to what the checks see, the trace and the audit log. A command
        matching the spec's `ignore_commands` (or set aside by the caller: `ignored` says
        why) is in the trace only, marked `ignored`."""
        if ignored is None:
            ignored = next((p for p in self.task.agent.ignore_commands
                            if re.search(p, rec.command)), None)
        if ignored is not None:
            self.recorder.trace({"type": "command", **rec.to_dict(), "ignored": ignored})
            return rec
        self.commands.append(rec)
        self.recorder.trace({"type": "command", **rec.to_dict()})
        self.recorder.audit("command", {"command": rec.command, "exit_code": rec.exit_code,
                                        "cwd": rec.cwd, "source": rec.source})
        return rec

    def record_execs(self, res: ExecResult, is_launcher: Callable[[list[str], int], bool],
                     housekeeping: tuple[str, ...] = (), tool: re.Pattern[str] | None = None,
                     unwrap: Callable[[list[str]], str | None] | None = None) -> None:
        """The processes a traced agent program started, after proctor's own `sh -c`.

        Set aside (in the trace only, marked `ignored`): the agent program itself and its
        wrappers (`is_launcher(argv, parent)`, parent: the index of the exec it descends from,
        0 for proctor's wrapper); a process matching `housekeeping` or the spec's
        `ignore_commands`, with every process it started; and, for an agent whose shell
        tool runs commands under a known process (`tool`, matched on the argv), every
        process outside those: what the agent runs for itself. `unwrap` gives the command
        a tool process runs, recorded in its place."""
        execs = res.execs or []
        parents = res.exec_parents or [-1] * len(execs)
        patterns = [*housekeeping, *self.task.agent.ignore_commands]
        set_aside: dict[int, str] = {}  # exec index -> why it and what it started are aside
        in_tool: set[int] = set()
        cwd = str(self.sandbox.workdir)
        for i in range(1, len(execs)):
            argv, parent = execs[i], parents[i]
            raw = shlex.join(argv)
            command = (unwrap(argv) if unwrap else None) or raw
            is_tool = tool is not None and tool.search(raw) is not None
            if is_tool or parent in in_tool:
                in_tool.add(i)
            why = set_aside.get(parent) or next(
                (p for p in patterns if re.search(p, command)), None)
            launcher = is_launcher(argv, parent)
            if why is None and tool is not None and i not in in_tool and not launcher:
                why = "housekeeping"
            if why is not None:
                set_aside[i] = why
            elif launcher or is_tool and command == raw:
                why = "launcher"
            self.record(CommandRecord(command=command, argv=argv, cwd=cwd, exit_code=None,
                                      stdout="", stderr="", started_at=res.started_at,
                                      duration_s=0.0, source="exec"),
                        ignored=why)


class Agent(Protocol):
    async def run(self, env: AgentEnv) -> AgentResult: ...
