"""The Agent contract: given a trial's environment, do the task by running commands.

Agents never call the sandbox directly for their own work: they call `env.run_command`, which
executes in the sandbox and records the command (trace + audit) so the checks see it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from proctor.model import CommandRecord, RunOptions, TaskDef, Trial

if TYPE_CHECKING:
    from proctor.record.recorder import Recorder
    from proctor.sandbox.base import Sandbox


@dataclass
class AgentResult:
    output: str = ""  # final message (llm) or stdout (command agent)
    turns: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
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

    def record(self, rec: CommandRecord) -> CommandRecord:
        """Add a command to what the checks see, the trace and the audit log."""
        self.commands.append(rec)
        self.recorder.trace({"type": "command", **rec.to_dict()})
        self.recorder.audit("command", {"command": rec.command, "exit_code": rec.exit_code,
                                        "cwd": rec.cwd, "source": rec.source})
        return rec


class Agent(Protocol):
    async def run(self, env: AgentEnv) -> AgentResult: ...
