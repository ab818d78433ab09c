"""`attack`: one of proctor's built-in hostile agents (agents/attacks/), for `proctor check
--attacks`. It does not try the task: it runs its attack's script, one agent command in the
workdir with the trial's environment, as any agent's command runs, and the task's own checks
decide. A pass means the task can be won without doing it.

Which attack a trial runs is its `params["attack"]`, set by the check command's plan; the
agent is in `agents.INTERNAL`, not a choice of `--agent` or of a spec's `agent.type`.
"""

from __future__ import annotations

from proctor.agents.attacks import ATTACKS, PARAM, script
from proctor.agents.base import Agent, AgentEnv, AgentResult


class AttackAgent(Agent):
    async def run(self, env: AgentEnv) -> AgentResult:
        name = env.trial.params.get(PARAM)
        if name not in ATTACKS:
            return AgentResult(error=f"the attack agent runs one of proctor's attacks "
                                     f"({', '.join(ATTACKS)}): use `proctor check PATH "
                                     f"--attacks` (got {name!r})")
        rec = await env.run_command(script(str(name)))
        return AgentResult(output=rec.stdout, turns=1, timed_out=env.timed_out)
