"""Agents by name. Each module is imported only when a trial needs it."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from proctor.agents.base import Agent

_AGENTS = {
    "llm": ("proctor.agents.llm", "LLMAgent"),
    "oracle": ("proctor.agents.oracle", "OracleAgent"),
    "nop": ("proctor.agents.nop", "NopAgent"),
    "command": ("proctor.agents.command", "CommandAgent"),
}


def make_agent(agent_type: str) -> Agent:
    module, cls = _AGENTS[agent_type]
    return getattr(importlib.import_module(module), cls)()
