"""`proctor check`: solutions must pass, doing nothing must fail."""

from __future__ import annotations

import pytest


@pytest.mark.postgres
def test_the_bundled_examples_pass_the_lint(cli, repo):
    out = cli("check", str(repo / "examples"))
    assert out.returncode == 0, out.stdout + out.stderr
    assert "ok:" in out.stdout


def test_names_broken_solutions_vacuous_checks_and_missing_solutions(cli, spec):
    spec("""
    cli: sh
    tasks:
      - id: good
        intent: write a file
        solution: ["echo hi > f"]
        assert: [{file_exists: f}, {not_ran: "rm -rf"}]
      - id: broken-solution
        intent: write a file
        solution: ["echo hi > wrong-name"]
        assert: [{file_exists: f}]
      - id: vacuous
        intent: do not delete anything
        solution: ["true"]
        assert: [{not_ran: "rm"}]
      - id: unsolved
        intent: write a file
        assert: [{file_exists: g}]
    """)
    out = cli("check", "spec.yaml")
    assert out.returncode == 1
    problems = out.stderr.splitlines()
    assert any("broken-solution: solution fails: file_exists#0: file not found: f" in p for p in problems)
    assert any("vacuous: passes when the agent does nothing" in p for p in problems)
    assert any("unsolved: no solution" in p for p in problems)
    assert not any(": good:" in p for p in problems)
    assert "good: note: pass without the agent doing anything: not_ran#1" in out.stdout


def test_a_fresh_init_passes_the_lint(cli, tmp_path):
    assert cli("init", "bench").returncode == 0
    out = cli("check", "bench")
    assert out.returncode == 0, out.stdout + out.stderr
