"""`oracle`: runs the task's reference `solution`, each entry as one agent command.

Every entry runs even if an earlier one failed, as a person typing them would; the checks
decide whether the end state is right. Entries left when the task's time is up do not run.
"""

from __future__ import annotations

from proctor.agents.base import AgentEnv, AgentResult


class OracleAgent:
    async def run(self, env: AgentEnv) -> AgentResult:
        last = None
        ran = 0
        for command in env.solution:
            if env.out_of_time():
                break
            last = await env.run_command(command)
            ran += 1
        return AgentResult(output=last.stdout if last else "", turns=ran,
                           timed_out=env.timed_out)
