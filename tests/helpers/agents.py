"""Helpers of the agents tests (their fixtures are in tests/agents/conftest.py)."""

from __future__ import annotations

import functools
import shutil

import pytest

from proctor.agents import make_agent
from proctor.agents.external import ExternalAgent
from proctor.agents.install import agents_home, installed, pinned_dir

AGENTS = ("claude-code", "codex", "mini-swe-agent")


@functools.cache
def _ready(name: str, cache: str) -> str | None:
    """None when the agent's pinned version is in `cache` (installing it if it can be),
    else why it cannot be."""
    agent = make_agent(name)
    assert isinstance(agent, ExternalAgent)
    dest = pinned_dir(name, agent.version)
    if installed(dest):
        return None
    if agent.installer == "npm" and shutil.which("npm") is None:
        return (f"{name} {agent.version} is not in the agent cache {dest.parent} and npm is "
                "not installed: run ./setup.sh")
    agent.install()  # once per session; an install that fails is the test's error
    return None


def need_agent(name: str) -> None:
    why = _ready(name, str(agents_home()))
    if why is not None:
        pytest.skip(why)

