"""Shared test set-up. Area-specific fixtures live in tests/<area>/conftest.py; helpers
(anything a test imports) in tests/helpers/."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest

from tests.helpers import REPO
from tests.helpers.cli import Cli

# Marks by where a test lives (a conftest's `pytestmark` would mark nothing): see
# pyproject.toml's markers. A file may add its own (`pytestmark = pytest.mark.slow`).
BY_DIRECTORY = {
    "docker": ("docker", "slow"),
    "ray": ("ray", "slow"),
    "agents": ("agents", "slow"),
    "security": ("slow",),  # hostile agents through the real `proctor run`
    "fuzz": ("slow",),
    "bench": ("slow",),  # the benchmarks' smoke runs
}
# Files of end-to-end runs, several `proctor run`s per test: out of the edit-test loop.
BY_FILE = {
    "runner/test_ray.py": ("ray",),
    "report/test_browser.py": ("browser",),
    "report/test_export.py": ("slow",),
    "runner/test_check.py": ("slow",),
    "runner/test_check_attacks.py": ("slow",),
    "runner/test_keystone_docs.py": ("slow",),
    "runner/test_clibench_today.py": ("slow",),
    "runner/test_agent_commands.py": ("slow",),
    "runner/test_reasons.py": ("slow",),
    "llm/test_cli.py": ("slow",),
    "services/test_end_to_end.py": ("slow",),
    "services/test_postgres.py": ("slow",),  # real database servers started and crashed
    "services/test_mysql.py": ("slow",),
    "report/test_results_types.py": ("slow",),
    "report/test_trajectories.py": ("slow",),
    "report/test_view.py": ("slow",),
}
BY_FIXTURE = {"agent_run": ("agents", "slow"),  # report/conftest.py: real agents' runs
              "two_agents_run": ("agents", "slow")}
NOT_FAST = {"slow", "docker", "ray", "agents", "browser"}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    tests = Path(__file__).parent
    for item in items:
        rel = Path(item.path).relative_to(tests)
        marks = [*BY_DIRECTORY.get(rel.parts[0], ()), *BY_FILE.get(rel.as_posix(), ())]
        for fixture in getattr(item, "fixturenames", ()):
            marks += BY_FIXTURE.get(fixture, ())
        for mark in dict.fromkeys(marks):
            item.add_marker(mark)
        if not NOT_FAST & {m.name for m in item.iter_markers()}:
            item.add_marker("fast")


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


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    """The one CLI runner: the real `proctor` executable, in the test's directory."""
    return Cli(tmp_path)


@pytest.fixture
def spec(tmp_path: Path):
    """Write a spec file (dedented) into the test's directory; returns its path."""
    def write(text: str, name: str = "spec.yaml") -> Path:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
        return path
    return write
