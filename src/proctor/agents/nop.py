"""`nop`: does nothing. `proctor check` uses it to find checks that pass vacuously."""

from __future__ import annotations

from proctor.agents.base import Agent, AgentEnv, AgentResult


class NopAgent(Agent):
    async def run(self, env: AgentEnv) -> AgentResult:
        return AgentResult()
