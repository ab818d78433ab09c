"""`oracle`: runs the task's reference `solution`, each entry as one agent command.

Every entry runs even if an earlier one failed, as a person typing them would; the checks
decide whether the end state is right.
"""

from __future__ import annotations

from proctor.agents.base import AgentEnv, AgentResult


class OracleAgent:
    async def run(self, env: AgentEnv) -> AgentResult:
        last = None
        for command in env.solution:
            last = await env.run_command(command)
        return AgentResult(output=last.stdout if last else "", turns=len(env.solution))
