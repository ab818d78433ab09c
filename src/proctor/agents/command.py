"""`command`: any external agent program, run in the sandbox and traced from outside.

proctor knows nothing of the program's tool calls, so its agent commands are the programs
it starts itself (SPEC §4): each with everything it started, its exit status and what it
wrote to its stdout and stderr, from the tracer's record (record/commands.py); a shell
started with a command string counts as that string. The program itself (the program
holding the prompt that proctor's shell started, and what that execs into while it still
holds it: a wrapper script should `exec` the agent) is the launcher, in the trace only; its
output is the trial's `output`. A program the launcher execs in place that no longer holds
the prompt (a wrapper's `exec neomutt -h`) is an agent command (SPEC §4).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
from pathlib import Path

from proctor.agents.base import Agent, AgentEnv, AgentResult
from proctor.agents.instructions import ahead_of, for_trial
from proctor.errors import UsageError
from proctor.model import CommandRecord, RunOptions, TaskDef
from proctor.record.commands import Reading
from proctor.templating import render

# "{{prompt}}", '{{prompt}}' or {{prompt}}: all become one safely quoted shell word.
_PROMPT = re.compile(r"""(["']?)\{\{\s*prompt\s*\}\}\1""")


def render_command(template: str, prompt: str) -> str:
    quoted = shlex.quote(prompt)
    return _PROMPT.sub(lambda _m: quoted, template)


class CommandAgent(Agent):
    def readonly_paths(self, task: TaskDef, options: RunOptions) -> list[str]:
        """What the program needs to be visible in an isolated sandbox: every absolute path
        in the command (just that file, not its directory), and for an interpreter
        installed outside /usr (pyenv, a venv's base), its installation prefix."""
        template = options.agent_command or task.agent.command or ""
        try:
            words = shlex.split(template)
        except ValueError:
            return []
        paths = []
        for word in words:
            exe = word if word.startswith("/") else shutil.which(word) if word == words[0] else None
            if not exe or not os.path.isfile(exe):
                continue
            paths.append(exe)
            real = Path(os.path.realpath(exe))
            if os.access(real, os.X_OK) and real.parent.name == "bin" and \
                    not str(real).startswith("/usr/"):
                paths.append(str(real.parent.parent))
        return paths

    async def run(self, env: AgentEnv) -> AgentResult:
        template = env.options.agent_command or env.task.agent.command
        if not template:
            return AgentResult(error="the command agent needs a program: set agent.command in "
                                     "the scenario, or pass --agent-command 'PROGRAM {{prompt}}'")
        # {{ params.X }} and {{workdir}} expand as anywhere else; {{prompt}} becomes one word.
        template = render(template, params=env.trial.params, workdir=env.sandbox.workdir)
        # A program proctor knows nothing about reads its prompt: the help text (per help
        # mode) and the suite's system_prompt go ahead of the task there.
        try:
            prompt = ahead_of(env.prompt, await for_trial(env))
        except UsageError as e:
            return AgentResult(error=str(e))
        command = render_command(template, prompt)
        res = await env.sandbox.exec(command, timeout=env.time_left(),
                                     env={"PROCTOR_PROMPT": prompt},
                                     capture=env.options.output_limit)
        if res.timed_out:
            env.out_of_time()
        # The program holding the prompt, started by proctor's `sh -c`, is the launcher; what a
        # one-line shell template runs itself (`ls; make`) is the agent's, and so is what the
        # launcher execs into once the prompt is gone (a wrapper's `exec neomutt -h`).
        def holds(argv: list[str]) -> bool:
            return prompt in " ".join(argv)

        env.record_program(res, Reading(
            is_launcher=lambda argv, parent: parent == 0 and holds(argv), holds=holds,
            set_aside=tuple(env.task.agent.ignore_commands)))
        env.record(CommandRecord(command=command, argv=["sh", "-c", command],
                                 cwd=str(env.sandbox.workdir), exit_code=res.exit_code,
                                 stdout=res.stdout, stderr=res.stderr,
                                 started_at=res.started_at, duration_s=res.duration_s,
                                 timed_out=res.timed_out, truncated=res.truncated,
                                 source="launcher"), ignored="launcher")
        # proctor cannot see this program's model calls: tokens unknown, not zero.
        return AgentResult(output=res.stdout, turns=1, tokens_in=None, tokens_out=None,
                           timed_out=env.timed_out)
