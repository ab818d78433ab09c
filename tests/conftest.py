"""Shared test set-up. Area-specific fixtures live in tests/<area>/conftest.py."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PROCTOR = str(Path(sys.executable).parent / "proctor")


@pytest.fixture
def repo() -> Path:
    return REPO


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path_factory, monkeypatch):
    # Runs land in a per-test place, never in the developer's ./.proctor.
    home = tmp_path_factory.mktemp("proctor-home")
    monkeypatch.setenv("PROCTOR_HOME", str(home))
    # External agents (Claude Code, Codex, mini-swe-agent): the cache ./setup.sh filled.
    monkeypatch.setenv("PROCTOR_AGENTS", os.environ.get("PROCTOR_AGENTS")
                       or str(REPO / ".proctor" / "agents"))
    monkeypatch.delenv("PROCTOR_CONFIG", raising=False)
    os.environ.setdefault("NO_COLOR", "1")
