"""Agents by name. Each module is imported only when a trial needs it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from proctor.registry import Registry

if TYPE_CHECKING:
    from proctor.agents.base import Agent

AGENTS: Registry = Registry("agent", {
    "llm": "proctor.agents.llm:LLMAgent",
    "command": "proctor.agents.command:CommandAgent",
    "oracle": "proctor.agents.oracle:OracleAgent",
    "nop": "proctor.agents.nop:NopAgent",
    "attack": "proctor.agents.attack:AttackAgent",
    "claude-code": "proctor.agents.claude_code:ClaudeCode",
    "codex": "proctor.agents.codex:Codex",
    "mini-swe-agent": "proctor.agents.mini_swe_agent:MiniSweAgent",
})


def make_agent(agent_type: str) -> Agent:
    return AGENTS.get(agent_type)()
