"""`command`: any external agent program, run in the sandbox and traced from outside.

Every process the program executes is recorded (strace, execve) as an agent command with
`source: "exec"`, so `ran`, `not_ran` and `run_count` work for agents proctor does not
control. The program itself comes last, with its exit code and output, so `exit_code`,
`output_contains` and friends read what the agent program printed.
"""

from __future__ import annotations

import re
import shlex

from proctor.agents.base import AgentEnv, AgentResult
from proctor.model import CommandRecord

# "{{prompt}}", '{{prompt}}' or {{prompt}}: all become one safely quoted shell word.
_PROMPT = re.compile(r"""(["']?)\{\{\s*prompt\s*\}\}\1""")


def render_command(template: str, prompt: str) -> str:
    quoted = shlex.quote(prompt)
    return _PROMPT.sub(lambda _m: quoted, template)


class CommandAgent:
    async def run(self, env: AgentEnv) -> AgentResult:
        template = env.options.agent_command or env.task.agent.command
        if not template:
            return AgentResult(error="the command agent needs a program: set agent.command in "
                                     "the scenario, or pass --agent-command 'PROGRAM {{prompt}}'")
        command = render_command(template, env.prompt)
        res = await env.sandbox.exec(command, timeout=env.task.agent.timeout,
                                     env={"PROCTOR_PROMPT": env.prompt}, trace=True)
        cwd = str(env.sandbox.workdir)
        # The first exec is proctor's own `sh -c` wrapper, not the agent's doing.
        for argv in (res.execs or [])[1:]:
            env.record(CommandRecord(command=shlex.join(argv), argv=argv, cwd=cwd,
                                     exit_code=None, stdout="", stderr="",
                                     started_at=res.started_at, duration_s=0.0, source="exec"))
        env.record(CommandRecord(command=command, argv=["sh", "-c", command], cwd=cwd,
                                 exit_code=res.exit_code, stdout=res.stdout, stderr=res.stderr,
                                 started_at=res.started_at, duration_s=res.duration_s,
                                 timed_out=res.timed_out, truncated=res.truncated))
        return AgentResult(output=res.stdout, turns=1)
