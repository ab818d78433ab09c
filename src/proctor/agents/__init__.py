"""Agents by name. Each module is imported only when a trial needs it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from proctor.registry import Registry

if TYPE_CHECKING:
    from proctor.agents.base import Agent

AGENTS: Registry = Registry("agent", {
    "llm": "proctor.agents.llm:LLMAgent",
    "oracle": "proctor.agents.oracle:OracleAgent",
    "nop": "proctor.agents.nop:NopAgent",
    "command": "proctor.agents.command:CommandAgent",
})


def make_agent(agent_type: str) -> Agent:
    return AGENTS.get(agent_type)()
