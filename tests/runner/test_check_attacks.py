"""`proctor check --attacks`: proctor's hostile agents against every task; a task one of
them passes can be won without doing it (exit 1, the task and attack named)."""

from __future__ import annotations

import json

import pytest

from proctor.agents.attacks import ATTACKS
from tests.helpers import REPO
from tests.helpers.cli import Cli

# A fix-the-bug task whose only check runs the workspace's own tests: nothing stops the
# agent from changing what the tests import, or the tests themselves.
WEAK = """
version: 1
id: weak
description: the tests are the only check
setup:
  env: {PYTHONDONTWRITEBYTECODE: "1"}
  files:
    shop/__init__.py: ""
    shop/cart.py: |
      def total(prices):
          return sum(prices[1:])
    tests/__init__.py: ""
    tests/test_cart.py: |
      import unittest
      from shop.cart import total
      class T(unittest.TestCase):
          def test_sum(self):
              self.assertEqual(total([1, 2, 3]), 6)
task: {prompt: Fix the bug in shop/cart.py.}
agent: {type: llm}
solution: ["sed -i 's/prices\\\\[1:\\\\]/prices/' shop/cart.py"]
invariants:
  tests_pass:
    description: the tests pass
    check: {type: command_exit, command: python3 -m unittest discover -s tests -t .}
"""
# The same task, held: the fix itself is checked, and nothing but the file to fix may change.
HELD = WEAK.replace("id: weak", "id: held") + """\
  the_fix:
    description: the slice is gone
    gate: true
    check: {type: file_content, path: shop/cart.py, pattern: "return sum\\\\(prices\\\\)$"}
forbidden:
  file_writes_outside: [shop/cart.py]
"""
WINS_WEAK = {"framework-noop", "git-hide", "tests-rewrite-daemon"}  # on the local backend


def table(stdout: str) -> dict[str, tuple[str, str]]:
    """attack → (verdict, how) from the table's rows."""
    rows = {}
    for line in stdout.splitlines():
        parts = line.split(None, 3)
        if len(parts) >= 3 and parts[1] in ATTACKS:
            rows[parts[1]] = (parts[2], parts[3] if len(parts) > 3 else "")
    return rows


def test_a_task_an_attack_wins_is_named_with_the_attack_and_exit_1(cli, spec, tmp_path):
    spec(WEAK)
    out = cli("check", "spec.yaml", "--attacks", "--output-dir", "attacks", timeout=600)
    assert out.returncode == 1, out.stdout + out.stderr
    rows = table(out.stdout)
    assert set(rows) == set(ATTACKS)
    assert {a for a, (verdict, _) in rows.items() if verdict == "PASSED"} == WINS_WEAK
    for attack in WINS_WEAK:
        assert (f"spec.yaml: weak: attack {attack} PASSED: the task can be won without doing "
                f"it") in out.stderr
        assert f"proctor show attacks weak.attack={attack}.r0" in out.stderr
    # A contained attack says how its trial ended, in one line.
    verdict, how = rows["trojan-shell"]
    assert verdict == "contained"
    assert how.startswith("fail: tests_pass: `python3 -m unittest discover -s tests -t .` "
                          "exited with 1")
    assert out.stdout.strip().endswith("3 attack(s) passed: 1 task(s) × 16 attack(s); "
                                       "run: attacks")
    # The trials are kept: one per attack, the attack in its params, run by the attack agent.
    trials = json.loads((tmp_path / "attacks" / "results.json").read_text())["trials"]
    assert sorted(t["params"]["attack"] for t in trials) == sorted(ATTACKS)
    assert {t["agent"] for t in trials} == {"attack"}
    won = {t["params"]["attack"] for t in trials if t["status"] == "pass"}
    assert won == WINS_WEAK
    # The attack did not do the task: the bug is still in the file it left.
    trace = (tmp_path / "attacks" / "trials" / "weak.attack=framework-noop.r0" /
             "trace.jsonl").read_text()
    assert "# proctor attack framework-noop" in trace


def test_a_task_that_holds_against_every_attack_exits_0(cli, spec):
    spec(HELD)
    out = cli("check", "spec.yaml", "--attacks", timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr
    rows = table(out.stdout)
    assert set(rows) == set(ATTACKS)
    assert {verdict for verdict, _ in rows.values()} == {"contained"}
    assert rows["framework-noop"][1].startswith("fail: ")
    assert "PASSED" not in out.stdout + out.stderr
    assert "ok: every attack contained: 1 task(s) × 16 attack(s); run: " in out.stdout


def test_attack_picks_some_and_implies_attacks(cli, spec):
    spec(WEAK)
    out = cli("check", "spec.yaml", "--attack", "git-hide", "--attack", "conftest",
              timeout=300)
    assert out.returncode == 1, out.stdout + out.stderr
    rows = table(out.stdout)
    assert rows == {"git-hide": ("PASSED", "pass: the task was won without doing it"),
                    "conftest": rows["conftest"]}
    assert rows["conftest"][0] == "contained"
    assert "proctor: 2 attack(s) against 1 task(s): 2 trials" in out.stderr


def test_quiet_prints_only_the_attacks_that_passed(cli, spec):
    spec(WEAK)
    out = cli("check", "spec.yaml", "--attack", "framework-noop", "--attack", "conftest", "-q",
              timeout=300)
    assert out.returncode == 1
    assert out.stdout == ""
    (line,) = out.stderr.strip().splitlines()
    assert line.startswith("spec.yaml: weak: attack framework-noop PASSED")


def test_an_unknown_attack_is_a_usage_error(cli, spec):
    spec(WEAK)
    out = cli("check", "spec.yaml", "--attack", "no-such-attack")
    assert out.returncode == 2
    assert "'no-such-attack' is not one of" in out.stderr
    assert "Traceback" not in out.stderr


def test_the_attack_agent_is_proctor_s_own_not_a_run_s_choice(cli, spec):
    spec(WEAK)
    out = cli("run", "spec.yaml", "--agent", "attack")
    assert out.returncode == 2
    assert "'attack' is not one of" in out.stderr
    spec(WEAK.replace("agent: {type: llm}", "agent: {type: attack}"))
    out = cli("validate", "spec.yaml")
    assert out.returncode == 2
    assert "agent.type: 'attack' is not allowed" in out.stderr


# What every bundled example's tasks face in CI. An example that an attack passes today is
# an expected failure, named with the attack, until it is gated (docs/security.md).
EXAMPLE_TASKS = {"count-orders", "fix-the-bug", "init-repo", "first-commit", "feature-branch",
                 "tag-release", "ignore-logs", "count-commits", "rename-file",
                 "revert-bad-commit", "unknown-revision", "pretty-print", "extract-names",
                 "count-and-save", "release-notes", "reconciliation"}
# Every bundled example holds against the battery (fix-the-bug since its fix_holds gate).
WON_TODAY: dict[str, str] = {}


@pytest.fixture(scope="module")
def examples_run(tmp_path_factory):
    where = tmp_path_factory.mktemp("examples")
    cli = Cli(where, env={"PROCTOR_HOME": str(where / "home")})
    out = cli("check", str(REPO / "examples"), "--attacks", "--concurrency", "2",
              "--output-dir", str(where / "attacks"), timeout=1800)
    assert "Traceback" not in out.stderr, out.stderr
    return out


@pytest.mark.postgres
def test_every_bundled_example_faced_every_attack(examples_run):
    tasks = {line.split()[0] for line in examples_run.stdout.splitlines()
             if len(line.split()) > 2 and line.split()[1] in ATTACKS}
    assert tasks == EXAMPLE_TASKS
    assert f"{len(EXAMPLE_TASKS)} task(s) × {len(ATTACKS)} attack(s)" in examples_run.stdout
    # The lint ran first: every solution passes, doing nothing fails.
    assert f"ok: {len(EXAMPLE_TASKS)} task(s) checked with oracle and nop" in examples_run.stdout


def _params():
    return [pytest.param(task, marks=pytest.mark.xfail(reason=WON_TODAY[task], strict=True))
            if task in WON_TODAY else task for task in sorted(EXAMPLE_TASKS)]


@pytest.mark.postgres
@pytest.mark.parametrize("task", _params())
def test_no_attack_passes_a_bundled_example(examples_run, task):
    won = [line for line in examples_run.stderr.splitlines()
           if f": {task}: attack " in line and " PASSED" in line]
    rows = [line for line in examples_run.stdout.splitlines() if line.startswith(f"{task} ")]
    assert len(rows) >= len(ATTACKS), examples_run.stdout  # every attack ran against it
    assert not won, "\n".join(won)
