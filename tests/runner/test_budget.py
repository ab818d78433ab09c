"""The run budget (SPEC §1 `--max-cost`): once the run's recorded cost reaches it no trial
starts, the started ones finish, the rest are `summary.not_run` (exit 1), and `--resume`
with a larger budget runs exactly those. Killed at random points and resumed, a budgeted run
ends with exactly the trials of an unbudgeted one, none twice."""

from __future__ import annotations

import json
import os
import random
import signal
import time

from hypothesis import given, settings
from hypothesis import strategies as st

from proctor.model import Limits
from proctor.providers.budget import Budget
from proctor.results import new_trial
from proctor.run.execute import RunBudget
from tests.helpers.cli import results

# Every trial is one model response of 5000 + 5000 tokens at $100 per million: exactly $1.
ONE = "turns:\n  - say: done\n    usage: {input: 5000, output: 5000}\n"
PRICES = '[prices."mock/*"]\ninput = 100\noutput = 100\n'


def suite(tasks: int, repeat: int = 1) -> str:
    return "cli: sh\nproviders: [mock/one.yaml]\n" + f"repeat: {repeat}\ntasks:\n" + "".join(
        f"  - id: t{i:03d}\n    intent: x\n    assert: [{{verify: {{run: 'true'}}}}]\n"
        for i in range(tasks))


def _setup(tmp_path, tasks: int, repeat: int = 1, toml: str = "") -> None:
    (tmp_path / "one.yaml").write_text(ONE)
    (tmp_path / "proctor.toml").write_text(toml + PRICES)  # top-level keys before tables
    (tmp_path / "spec.yaml").write_text(suite(tasks, repeat))


def _lines(run_dir) -> list[str]:
    return [json.loads(x)["id"] for x in (run_dir / "results.jsonl").read_text().splitlines()]


def test_no_trial_starts_once_the_budget_is_reached_and_resume_runs_the_rest(cli, tmp_path):
    _setup(tmp_path, 6)
    out = cli("run", "spec.yaml", "--output-dir", "run", "--concurrency", "1",
              "--max-cost", "2.5", "-q", "--format", "md,html")
    assert out.returncode == 1
    r = results(tmp_path / "run")
    # $1, $2 (< 2.5: one more starts), $3: reached; the other three never start
    assert r["summary"]["trials"] == 3 and r["summary"]["passed"] == 3
    assert r["summary"]["not_run"] == [f"t{i:03d}.mock-one.yaml.injected.r0" for i in (3, 4, 5)]
    assert r["summary"]["budget"] == {"max_cost_usd": 2.5, "cost_usd": 3.0,
                                      "unknown_cost_trials": 0}
    assert ("budget: $3.0000 spent of $2.5; 3 trial(s) not run: proctor run --resume run "
            "--max-cost USD (a larger budget) runs them") in out.stdout
    assert "**Budget**: $3.0000 spent of $2.5 · 3 trial(s) not run" in \
        (tmp_path / "run" / "summary.md").read_text()
    assert "spent of budget" in (tmp_path / "run" / "report.html").read_text()
    # Resumed without a larger budget: it is still spent, nothing runs.
    same = cli("run", "--resume", "run", "-q")
    assert same.returncode == 1 and len(results(tmp_path / "run")["summary"]["not_run"]) == 3
    # $4 runs exactly one more; $100 the rest.
    cli("run", "--resume", "run", "--max-cost", "4", "-q")
    assert len(results(tmp_path / "run")["summary"]["not_run"]) == 2
    done = cli("run", "--resume", "run", "--max-cost", "100", "-q")
    assert done.returncode == 0, done.stdout + done.stderr
    r = results(tmp_path / "run")
    assert r["summary"]["not_run"] == [] and r["summary"]["passed"] == 6
    assert sorted(_lines(tmp_path / "run")) == sorted({t["id"] for t in r["trials"]})


def test_proctor_toml_sets_the_budget(cli, tmp_path):
    _setup(tmp_path, 3, toml="max_cost = 1\n")
    out = cli("run", "spec.yaml", "--output-dir", "run", "--concurrency", "1", "-q")
    assert out.returncode == 1
    assert len(results(tmp_path / "run")["summary"]["not_run"]) == 2


def test_started_trials_finish_when_the_budget_is_reached(cli, tmp_path):
    """Three at once: the budget ($1) is reached by the first to end; the two already
    running finish and are kept, the rest never start."""
    _setup(tmp_path, 6)
    (tmp_path / "one.yaml").write_text(ONE.replace("say: done", "say: done\n    delay: 1"))
    cli("run", "spec.yaml", "--output-dir", "run", "--concurrency", "3", "--max-cost", "1", "-q")
    r = results(tmp_path / "run")
    assert r["summary"]["trials"] == 3 and len(r["summary"]["not_run"]) == 3


def _kill_at_random(cli, tmp_path, rng: random.Random, budget: float) -> int:
    """A resumed leg SIGKILLed at a random point (1 if it was still running then)."""
    proc = cli.popen("run", "--resume", "run", "--max-cost", f"{budget:g}", "-q",
                     "--concurrency", "4", start_new_session=True)
    time.sleep(rng.uniform(0.5, 3.0))
    killed = proc.poll() is None
    if killed:
        os.killpg(proc.pid, signal.SIGKILL)
    proc.communicate()
    return int(killed)


def test_a_budgeted_run_killed_at_random_points_ends_with_the_trials_of_an_unbudgeted_one(
        cli, tmp_path):
    """Scaled down from the 200-trial measurement in docs/running.md ("Budgets"):
    PROCTOR_BUDGET_TRIALS=200 runs that one."""
    n = int(os.environ.get("PROCTOR_BUDGET_TRIALS", "24"))
    rng = random.Random(n)
    _setup(tmp_path, n // 2, repeat=2)
    free = cli("run", "spec.yaml", "--output-dir", "free", "-q", "--concurrency", "4",
               timeout=60 + 3 * n)
    assert free.returncode == 0
    wanted = {t["id"] for t in results(tmp_path / "free")["trials"]}
    assert len(wanted) == n
    # Budgeted and killed: the first leg, then legs with larger budgets, each killed at a
    # random point, until one ends by itself with everything run.
    first = cli.popen("run", "spec.yaml", "--output-dir", "run", "--max-cost", "3", "-q",
                      "--concurrency", "4", start_new_session=True)
    first.communicate(timeout=120)
    budget, legs, kills, started = 3.0, 0, 0, time.monotonic()
    while True:
        r = results(tmp_path / "run") if (tmp_path / "run" / "results.json").exists() else None
        if r and not r["summary"]["not_run"] and r["summary"]["trials"] == n:
            break
        budget += rng.uniform(1, n / 3)
        legs += 1
        if legs % 3 == 0:  # now and then a leg that is not killed
            cli("run", "--resume", "run", "--max-cost", f"{budget:g}", "-q",
                "--concurrency", "4", timeout=60 + 3 * n)
        else:
            kills += _kill_at_random(cli, tmp_path, rng, budget)
        assert legs < 200
    final = cli("run", "--resume", "run", "--max-cost", "100000", "-q")
    assert final.returncode == 0
    lines = _lines(tmp_path / "run")
    assert sorted(lines) == sorted(wanted)  # exactly those trials, none twice
    r = results(tmp_path / "run")
    assert {t["id"] for t in r["trials"]} == wanted and r["summary"]["passed"] == n
    print(f"\nbudget measurement: {n} trials, {legs + 1} budgeted legs (the first included), "
          f"{kills} killed mid-run, {time.monotonic() - started:.0f} s, results.jsonl "
          f"{len(lines)} lines for {len(set(lines))} trials")


# -- the rules at their boundaries, on generated inputs ---------------------------------

costs = st.lists(st.sampled_from([0.0, 0.25, 0.5, 1.0, 1.5, 3.0]), min_size=0, max_size=12)


@settings(max_examples=200, deadline=None)
@given(costs, st.sampled_from([0.25, 0.5, 1.0, 2.0, 2.5, 4.0, 100.0]))
def test_a_run_budget_is_reached_exactly_when_the_recorded_cost_reaches_it(paid, max_cost):
    spend = RunBudget(max_cost, {})
    for i, c in enumerate(paid):
        spend.record(new_trial(id=f"t{i}", task_id="t", model=None, help_mode=None,
                               replica=0, params={}, status="pass", composite_score=1.0,
                               cost_usd=c))
        assert spend.reached() == (sum(paid[:i + 1]) >= max_cost)
    # a trial run again replaces its cost, never adds to it
    if paid:
        spend.record(new_trial(id="t0", task_id="t", model=None, help_mode=None, replica=0,
                               params={}, status="pass", composite_score=1.0, cost_usd=0.0))
        assert spend.reached() == (sum(paid[1:]) >= max_cost)
    assert not RunBudget(None, {}).reached()


calls = st.lists(st.tuples(st.integers(0, 400), st.integers(0, 100)), min_size=1, max_size=15)


@settings(max_examples=200, deadline=None)
@given(calls, st.one_of(st.none(), st.integers(1, 10)), st.one_of(st.none(), st.integers(1, 3000)))
def test_the_first_response_reaching_a_limit_is_the_last(usage, turns, tokens):
    budget = Budget(Limits(turns=turns, tokens=tokens))
    for k, (tin, tout) in enumerate(usage, start=1):
        total = sum(a + b for a, b in usage[:k])
        expect = ("turns" if turns is not None and k >= turns
                  else "tokens" if tokens is not None and total >= tokens else None)
        assert budget.charge(tin, tout, None) == expect
        if expect:  # the agent stops here: this response is the last
            assert budget.hit == expect and budget.turns == k and budget.tokens == total
            return
    assert budget.hit is None


def test_a_budget_over_an_unpriced_model_says_its_cost_is_unknown(cli, tmp_path):
    _setup(tmp_path, 1)
    (tmp_path / "proctor.toml").write_text('[prices."mock/*"]\ninput = 1\noutput = 1\n'
                                           '[providers.free]\nkind = "mock"\n')
    (tmp_path / "spec.yaml").write_text(suite(1).replace("mock/one.yaml", "free/one.yaml"))
    out = cli("run", "spec.yaml", "--output-dir", "run", "--max-cost", "1")
    assert ("warning: free/one.yaml has no price (proctor.toml [prices]): its trials' cost is "
            "unknown, counted as 0 by --max-cost") in out.stderr
    r = results(tmp_path / "run")
    assert r["summary"]["budget"]["unknown_cost_trials"] == 1 and r["summary"]["not_run"] == []
