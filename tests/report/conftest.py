"""Realistic run directories for the report tests, written the way SPEC §5 describes them.

`mixed_run`: one run of a suite (two models, two help modes, repeat 3, thresholds; a flaky
task, a failing task, a provider error) and a scenario (weighted and gated invariants, replicas
× a matrix param, a forbidden rule violated, a custom check that errored), with hostile agent
output (HTML, CDATA end, ANSI escapes, control characters, rich markup, pipes, backticks) and
secrets already redacted. `run_pair`: two runs of the same tasks with known counts, for
compare. The aggregates come from the real scorer, as in a real run; the renderers only read
them."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.report import (
    CAREFUL,
    EXTERNAL,
    FLAKY_TRIAL,
    REAL_SUITE,
    SLOPPY,
    _proctor_run,
    counted,
    scenario_trials,
    suite_trials,
    trace_events,
    write_run,
)


@pytest.fixture
def mixed_run(tmp_path: Path) -> Path:
    trials = suite_trials() + scenario_trials()
    return write_run(tmp_path, "20260302T101500Z-ab12cd", trials,
                     thresholds={"openai/gpt-4.1": 60.0, "anthropic/claude-sonnet-4-5": 70.0},
                     traces={FLAKY_TRIAL: trace_events()})


@pytest.fixture
def run_pair(tmp_path: Path) -> tuple[Path, Path]:
    """A: t1 10/10, t2 5/10, t3 3/3, t5 4/4.  B: t1 2/10, t2 6/10, t3 3/3, t4 (new) 1/1."""
    m = "openai/gpt-4.1"
    a = (counted("t1", m, 10, 10, "a") + counted("t2", m, 5, 10, "a")
         + counted("t3", m, 3, 3, "a") + counted("t5", m, 4, 4, "a"))
    b = (counted("t1", m, 2, 10, "b") + counted("t2", m, 6, 10, "b")
         + counted("t3", m, 3, 3, "b") + counted("t4", m, 1, 1, "b"))
    return write_run(tmp_path, "run-a", a), write_run(tmp_path, "run-b", b)


@pytest.fixture(scope="module")
def real_run(tmp_path_factory) -> Path:
    """`proctor run` of a suite with two long-named mock models and two help modes (24
    trials: careful passes init-repo with --help injected only, sloppy never), with every
    report format."""
    from tests.helpers.cli import Cli

    root = tmp_path_factory.mktemp("real-run")
    (root / "models").mkdir()
    (root / "cli-bench.yaml").write_text(REAL_SUITE)
    (root / "models" / "anthropic-claude-sonnet-4-5-careful.yaml").write_text(CAREFUL)
    (root / "models" / "anthropic-claude-sonnet-4-5-sloppy.yaml").write_text(SLOPPY)
    cli = Cli(root, env={"PROCTOR_HOME": str(root / "home"), "COLUMNS": "80"})
    done = cli("run", "cli-bench.yaml", "--output-dir", "run", "--format", "junit,md,html",
               timeout=300)
    assert done.returncode == 1, done.stdout + done.stderr  # init-repo fails, as scripted
    (root / "stdout.txt").write_text(done.stdout)
    return root / "run"


@pytest.fixture(scope="session")
def examples_run(tmp_path_factory) -> Path:
    """Every bundled example (`examples/`: both dialects) with the scripted solver model."""
    return _proctor_run(tmp_path_factory.mktemp("examples"), "examples", "--model", "mock/solver")


@pytest.fixture(scope="session")
def oracle_run(tmp_path_factory) -> Path:
    """Every bundled example run by `oracle`: commands and no model turn."""
    return _proctor_run(tmp_path_factory.mktemp("oracle"), "examples", "--agent", "oracle")


@pytest.fixture(scope="session")
def two_agents_run(tmp_path_factory) -> Path:
    """Claude Code and Codex in one run (`--agent claude-code --agent codex`) on
    examples/external-agents, both driven by the broken mock script: one task, a failing
    trial of each agent."""
    from tests.helpers.agents import need_agent

    for name in ("claude-code", "codex"):
        need_agent(name)
    return _proctor_run(tmp_path_factory.mktemp("two-agents"), "examples/external-agents",
                        "--agent", "claude-code", "--agent", "codex", "--model",
                        "mock/scripts/wrong-count.yaml")


@pytest.fixture(scope="session", params=EXTERNAL)
def agent_run(request, tmp_path_factory) -> tuple[str, Path]:
    """A real external agent on examples/external-agents, driven by the broken mock script
    (it counts the header line too: `verify` fails), through proctor's recording proxy."""
    from tests.helpers.agents import need_agent

    need_agent(request.param)
    root = tmp_path_factory.mktemp(request.param)
    return request.param, _proctor_run(root, "examples/external-agents", "--agent",
                                       request.param, "--model",
                                       "mock/scripts/wrong-count.yaml")

