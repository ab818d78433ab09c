"""`command`: any external agent program, run in the sandbox and traced from outside.

Every process the program executes is recorded (by the sandbox's tracer) as an agent
command with `source: "exec"`, so `ran`, `not_ran` and `run_count` work for agents proctor
does not control. The program itself comes last, with its exit code and output, so
`exit_code`, `output_contains` and friends read what the agent program printed.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
from pathlib import Path

from proctor.agents.base import AgentEnv, AgentResult
from proctor.agents.instructions import ahead_of, for_trial
from proctor.errors import UsageError
from proctor.model import CommandRecord, RunOptions, TaskDef
from proctor.templating import render

# "{{prompt}}", '{{prompt}}' or {{prompt}}: all become one safely quoted shell word.
_PROMPT = re.compile(r"""(["']?)\{\{\s*prompt\s*\}\}\1""")


def render_command(template: str, prompt: str) -> str:
    quoted = shlex.quote(prompt)
    return _PROMPT.sub(lambda _m: quoted, template)


class CommandAgent:
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
        res = await env.sandbox.exec(command, timeout=env.task.agent.timeout,
                                     env={"PROCTOR_PROMPT": prompt}, trace=True)
        cwd = str(env.sandbox.workdir)
        # The program itself (started by proctor's wrapper, its argv holding the prompt) is
        # recorded last, as the launcher.
        env.record_execs(res, lambda argv, parent: parent == 0 and prompt in argv)
        env.record(CommandRecord(command=command, argv=["sh", "-c", command], cwd=cwd,
                                 exit_code=res.exit_code, stdout=res.stdout, stderr=res.stderr,
                                 started_at=res.started_at, duration_s=res.duration_s,
                                 timed_out=res.timed_out, truncated=res.truncated,
                                 source="launcher"))
        # proctor cannot see this program's model calls: tokens unknown, not zero.
        return AgentResult(output=res.stdout, turns=1, tokens_in=None, tokens_out=None)
