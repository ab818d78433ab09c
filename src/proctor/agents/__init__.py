"""Agents by name. Each module is imported only when a trial needs it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from proctor.registry import Registry

if TYPE_CHECKING:
    from proctor.agents.base import Agent

AGENTS: Registry[type[Agent]] = Registry("agent", {
    "llm": "proctor.agents.llm:LLMAgent",
    "command": "proctor.agents.command:CommandAgent",
    "oracle": "proctor.agents.oracle:OracleAgent",
    "nop": "proctor.agents.nop:NopAgent",
    "claude-code": "proctor.agents.claude_code:ClaudeCode",
    "codex": "proctor.agents.codex:Codex",
    "mini-swe-agent": "proctor.agents.mini_swe_agent:MiniSweAgent",
})


# Agents only proctor itself plans, never a spec's `agent.type` nor `--agent`: the hostile
# agents of `proctor check --attacks` (each trial names its attack in its params).
INTERNAL: Registry[type[Agent]] = Registry("agent", {
    "attack": "proctor.agents.attack:AttackAgent",
})


def make_agent(agent_type: str) -> Agent:
    return (INTERNAL if agent_type in INTERNAL else AGENTS).get(agent_type)()
