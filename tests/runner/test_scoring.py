"""Every scoring rule of SPEC §3 and the threshold rules of §2, one test each."""

from __future__ import annotations

import pytest

from proctor.model import AgentDef, TaskDef, Thresholds
from proctor.results import new_check, new_forbidden, new_trial
from proctor.scoring import aggregate_replicas, score_trial, summarize, task_status


def check(name, passed, weight=1.0, gate=False, score=None, error=None):
    return new_check(name=name, type="x", passed=passed,
                     score=score if score is not None else float(passed), weight=weight,
                     gate=gate, message="", error=error)


def trial(status, score=None, task="t", model=None, replica=0, cost=None):
    return new_trial(id=f"{task}.{model}.r{replica}", task_id=task, model=model, help_mode=None,
                     replica=replica, params={}, status=status,
                     composite_score=score if score is not None else float(status == "pass"),
                     cost_usd=cost)


def task_def(id="t", **kw):
    return TaskDef(id=id, dialect="scenario", source="s.yaml", base_dir=".", prompt="p",
                   agent=AgentDef(), checks=[], **kw)


def test_composite_is_weighted_mean():
    s = score_trial([check("a", True, 1.0), check("b", False, 0.3)], [], pass_threshold=0.0)
    assert s.composite == pytest.approx(1 / 1.3)
    assert s.status == "pass"


def test_upstream_example_nice_to_have_fails_below_threshold():
    s = score_trial([check("must", True, 1.0, gate=True), check("nice", False, 0.3)], [], 0.85)
    assert s.composite == pytest.approx(0.769, abs=1e-3)
    assert s.status == "fail"


def test_gate_forces_zero_and_fail():
    s = score_trial([check("must", False, 1.0, gate=True), check("other", True, 5.0)], [], 0.1)
    assert (s.status, s.composite) == ("fail", 0.0)
    assert "must" in s.reason


def test_gate_with_continuous_score_that_passed_does_not_fire():
    # SPEC: a gate fires when the gated invariant did not *pass* (a judge at 0.8 >= 0.7 passed).
    s = score_trial([check("judge", True, 1.0, gate=True, score=0.8)], [], 0.5)
    assert s.status == "pass"
    assert s.composite == pytest.approx(0.8)


def test_forbidden_violation_forces_zero_and_fail():
    s = score_trial([check("a", True)], [new_forbidden(rule="http_except", violated=True, details="x")], 0.0)
    assert (s.status, s.composite) == ("fail", 0.0)


def test_errored_check_makes_trial_error():
    s = score_trial([check("a", True), check("b", False, error="script crashed")], [], 0.0)
    assert s.status == "error"
    assert "script crashed" in s.reason


def test_default_threshold_needs_everything():
    assert score_trial([check("a", True), check("b", False)], [], 1.0).status == "fail"
    assert score_trial([check("a", True), check("b", True)], [], 1.0).status == "pass"


def test_without_a_pass_threshold_every_invariant_must_pass():
    """SPEC §3: a judge that scored 0.9 and passed does not fail the trial (composite
    0.983 would miss a threshold of 1.0); one that did not pass does, and says so."""
    judged = [check("tests", True), check("judge", True, score=0.9),
              check("style", True, weight=5)]
    s = score_trial(judged, [], None)
    assert (s.status, s.reason) == ("pass", None) and s.composite == pytest.approx(6.9 / 7)
    judged[1] = new_check(name="judge", type="llm_as_judge", passed=False, score=0.4,
                          weight=1.0, gate=False, message="score 0.40 < 0.5\nthe reply was rude")
    s = score_trial(judged, [], None)
    assert (s.status, s.reason) == ("fail", "failed: judge: score 0.40 < 0.5")


def test_every_failed_or_errored_trial_says_why_in_one_line():
    failed = new_check(name="exit_code#0", type="exit_code", passed=False, score=0.0,
                       weight=1.0, gate=False, message="the last command exited with 2\n…")
    assert score_trial([failed], [], None).reason == (
        "failed: exit_code#0: the last command exited with 2")
    assert score_trial([check("a", True, 0.3), check("b", False, 0.7)], [], 0.5).reason == (
        "composite 0.30 < pass_threshold 0.5; failed: b")
    assert score_trial([check("j", True, score=0.6)], [], 0.85).reason == (
        "composite 0.60 < pass_threshold 0.85")
    assert score_trial([check("must", False, gate=True)], [], None).reason == "gate failed: must"
    assert score_trial([check("a", True)], [new_forbidden(rule="http_except", violated=True, details="POST x\ny")],
                       None).reason == "forbidden: http_except: POST x"
    s = score_trial([check("a", True)], [], None, error="agent error: the model endpoint "
                    "failed: HTTP 500\n{body}")
    assert (s.status, s.reason) == ("error", "agent error: the model endpoint failed: HTTP 500")
    assert s.error.endswith("{body}")  # the error keeps its whole message
    s = score_trial([check("a", False)], [], None, timed_out_after=15)
    assert s.reason == "the agent timed out after 15 s; failed: a"
    assert len(score_trial([check("a" * 900, False)], [], None).reason) < 600


def test_threshold_equality_passes_despite_float_rounding():
    checks = [check("a", True, 0.85), check("b", False, 0.15)]
    assert score_trial(checks, [], 0.85).status == "pass"


@pytest.mark.parametrize("how,statuses,expected", [
    ("all", ["pass", "pass", "pass"], "pass"),
    ("all", ["pass", "fail", "pass"], "fail"),
    ("any", ["fail", "fail", "pass"], "pass"),
    ("any", ["fail", "fail", "fail"], "fail"),
    ("majority", ["pass", "pass", "fail"], "pass"),
    ("majority", ["pass", "fail"], "fail"),
    ("all", ["pass", "error"], "fail"),
])
def test_replica_aggregation(how, statuses, expected):
    assert aggregate_replicas([trial(s, replica=i) for i, s in enumerate(statuses)], how, 1.0) == expected


def test_mean_aggregation_uses_composites():
    trials = [trial("fail", 0.8), trial("pass", 1.0), trial("fail", 0.75)]
    assert aggregate_replicas(trials, "mean", 0.85) == "pass"
    assert aggregate_replicas(trials, "mean", 0.9) == "fail"


def test_task_status_flaky_error_pass_fail():
    assert task_status([trial("pass"), trial("fail")]) == "flaky"
    assert task_status([trial("pass"), trial("error")]) == "error"
    assert task_status([trial("pass")] * 2) == "pass"
    assert task_status([trial("fail")] * 2) == "fail"


def test_summary_counts_every_replica_and_exit_codes():
    out = summarize([trial("pass", replica=0), trial("fail", replica=1), trial("error", replica=2)],
                    [task_def()])
    assert out["summary"] == {"trials": 3, "passed": 1, "failed": 1, "errored": 1,
                              "pass_rate": pytest.approx(1 / 3)}
    assert out["tasks"][0]["status"] == "error"
    assert out["exit_code"] == 1
    assert summarize([trial("pass")], [task_def()])["exit_code"] == 0


def test_model_rows_have_wilson_interval():
    out = summarize([trial("pass", model="m", replica=i) for i in range(10)], [task_def()])
    row = out["models"][0]
    assert row["pass_rate"] == 1.0
    lo, hi = row["ci95"]
    assert lo == pytest.approx(0.7225, abs=1e-3) and hi == 1.0


def _suite_task(thresholds):
    return task_def(thresholds=thresholds)


def test_thresholds_are_percentages_with_tolerance_and_override():
    th = Thresholds(default=81, models={"b": 50}, tolerance=5, behavior="error")
    trials = ([trial("pass", model="a", replica=i) for i in range(3)] + [trial("fail", model="a", replica=3)]
              + [trial("pass", model="b", replica=0), trial("fail", model="b", replica=1)])
    out = summarize(trials, [_suite_task(th)])
    rows = {r["model"]: r for r in out["models"]}
    assert rows["a"]["threshold"] == 81 and rows["a"]["met"] is False  # 75 < 81 - 5
    assert rows["b"]["threshold"] == 50 and rows["b"]["met"] is True
    assert out["exit_code"] == 1
    th.default = 80.0  # 75 >= 80 - 5: the boundary counts as met
    assert summarize(trials, [_suite_task(th)])["exit_code"] == 0


def test_informational_thresholds_never_fail_the_run():
    th = Thresholds(default=100, behavior="informational")
    out = summarize([trial("fail", model="a")], [_suite_task(th)])
    assert out["models"][0]["met"] is False
    assert out["exit_code"] == 0


def test_model_without_threshold_is_not_enforced():
    th = Thresholds(models={"a": 50})
    out = summarize([trial("pass", model="a"), trial("fail", model="z")], [_suite_task(th)])
    rows = {r["model"]: r for r in out["models"]}
    assert rows["z"]["threshold"] is None and rows["z"]["met"] is None
    assert out["exit_code"] == 0


def test_cost_per_success_and_unknown_cost():
    out = summarize([trial("pass", model="m", cost=0.02), trial("fail", model="m", replica=1, cost=0.02)],
                    [task_def()])
    assert out["models"][0]["cost_per_success"] == pytest.approx(0.04)
    out = summarize([trial("pass", model="m", cost=None)], [task_def()])
    assert out["models"][0]["cost_usd"] is None


def test_unknown_tokens_stay_unknown_in_every_row():
    """A command agent's tokens are unknown (proctor does not see its model calls): its rows
    say so (null, `–` in reports) rather than 0; known counts are summed past unknown ones."""
    unknown = [trial("pass", replica=r) for r in range(2)]
    for t in unknown:
        t["tokens"] = {"input": None, "output": None}
    out = summarize(unknown, [task_def()])
    assert out["models"][0]["tokens"] == {"input": None, "output": None}
    assert out["tasks"][0]["tokens"] == {"input": None, "output": None}
    mixed = [trial("pass", model="m"), trial("error", model="m", replica=1)]
    mixed[0]["tokens"] = {"input": 120, "output": 7}
    mixed[1]["tokens"] = {"input": None, "output": None}
    assert summarize(mixed, [task_def()])["models"][0]["tokens"] == {"input": 120, "output": 7}


def test_the_default_threshold_applies_to_rows_without_a_model():
    th = Thresholds(default=60)
    oracle = [new_trial(id=f"t.r{i}", task_id="t", model=None, help_mode=None, replica=i,
                        params={}, status="pass" if i else "fail", composite_score=1.0,
                        agent="oracle") for i in range(2)]
    out = summarize(oracle, [_suite_task(th)])
    [row] = out["models"]
    assert (row["agent"], row["threshold"], row["met"]) == ("oracle", 60, False)
    assert out["exit_code"] == 1  # the threshold decides, not "any failure"


def test_a_suites_threshold_is_judged_over_all_its_trials(tmp_path):
    """One failed trial of four, `default: 50`: the model met its threshold (75 %), though
    the task that failed is at 0 % on its own."""
    from proctor.spec.load import load_specs

    (tmp_path / "s.yaml").write_text(
        "cli: echo\nthresholds: {default: 50}\ntasks:\n"
        + "".join(f"  - {{id: t{i}, intent: x, assert: [{{exit_code: 0}}]}}\n"
                  for i in range(4)))
    tasks = load_specs([str(tmp_path / "s.yaml")]).tasks
    trials = [trial("fail" if t.id == "t0" else "pass", task=t.id, model="m") for t in tasks]
    out = summarize(trials, tasks)
    assert [(r["threshold"], r["met"]) for r in out["models"]] == [(50, True)]
    assert out["exit_code"] == 0


def test_each_suites_thresholds_judge_its_own_tasks():
    strict, lax = Thresholds(default=90), Thresholds(default=40)
    tasks = [task_def("a", thresholds=strict), task_def("b", thresholds=lax)]
    trials = [trial("pass", task="a", model="m", replica=0), trial("pass", task="a", model="m",
                                                                    replica=1),
              trial("pass", task="b", model="m"), trial("fail", task="b", model="m", replica=1)]
    [row] = summarize(trials, tasks)["models"]
    assert row["met"] is True  # a: 100 % >= 90; b: 50 % >= 40 (75 % overall would miss 90)
    trials[1] = trial("fail", task="a", model="m", replica=1)
    [row] = summarize(trials, tasks)["models"]
    assert row["met"] is False and row["threshold"] == 40  # the strictest shown: min of limits


def test_rows_are_split_by_help_mode_and_params():
    ts = [new_trial(id=f"t.{m}.r{i}", task_id="t", model="x", help_mode=m, replica=i,
                    params={"db": d}, status="pass" if m == "injected" else "fail",
                    composite_score=1.0) for m in ("injected", "none") for d in ("pg", "my")
          for i in range(2)]
    rows = summarize(ts, [task_def()])["tasks"]
    assert len(rows) == 4 and {r["status"] for r in rows} == {"pass", "fail"}  # never "flaky"
    assert {(r["help_mode"], r["params"]["db"]) for r in rows} == {
        ("injected", "pg"), ("injected", "my"), ("none", "pg"), ("none", "my")}


def test_pass_at_k_is_the_unbiased_estimate():
    ts = [trial("pass" if i < 2 else "fail", replica=i) for i in range(5)]
    [row] = summarize(ts, [task_def()])["tasks"]
    assert row["pass_at_k"]["1"] == pytest.approx(0.4)
    assert row["pass_at_k"]["3"] == pytest.approx(1 - 1 / 10)  # 1 - C(3,3)/C(5,3)
    assert row["pass_at_k"]["4"] == 1.0
    assert row["pass_hat_k"]["2"] == pytest.approx(1 / 10)  # C(2,2)/C(5,2)
    assert set(row["pass_at_k"]) == {"1", "2", "3", "4", "5"}


def test_help_mode_effect_per_agent():
    ts = [new_trial(id=f"{t}.{m}.r{i}", task_id=t, model="x", help_mode=m, replica=i,
                    params={}, status="pass" if m == "injected" or i == 0 else "fail",
                    composite_score=1.0)
          for t in ("a", "b") for m in ("injected", "none") for i in range(5)]
    [effect] = summarize(ts, [task_def("a"), task_def("b")])["help_modes"]
    assert (effect["mode_a"], effect["mode_b"]) == ("injected", "none")
    assert (effect["passed_a"], effect["trials_a"], effect["passed_b"], effect["trials_b"]) == (
        10, 10, 2, 10)
    assert effect["diff"] == pytest.approx(-0.8)
    assert effect["ci95"][1] < 0 and effect["p_value"] < 0.001


def test_model_pass_at_k_is_the_mean_over_its_rows_that_reach_k():
    trials = ([trial("pass", task="a", model="m", replica=r) for r in range(2)]
              + [trial("pass" if r == 0 else "fail", task="b", model="m", replica=r)
                 for r in range(2)]
              + [trial("fail", task="c", model="m")])
    row = summarize(trials, [task_def()])["models"][0]
    assert row["pass_at_k"]["1"] == pytest.approx((1 + 0.5 + 0) / 3)
    # k = 2: only a (1.0) and b (1.0) ran twice; c's single trial says nothing about k = 2
    assert row["pass_at_k"]["2"] == pytest.approx(1.0)
    assert row["pass_hat_k"]["2"] == pytest.approx(0.5)
    assert set(row["pass_at_k"]) == {"1", "2"}


def test_a_weight_0_invariant_is_informational_without_a_pass_threshold():
    """SPEC §3: without scoring.pass_threshold a trial passes iff every invariant with
    weight > 0, and every gate, passed. A failed weight-0 invariant is shown, never the
    verdict; a failed weight-0 gate still fires; a failed weighted one still fails."""
    s = score_trial([check("works", True), check("style", False, weight=0.0)], [], None)
    assert (s.status, s.reason, s.composite) == ("pass", None, 1.0)
    s = score_trial([check("works", False), check("style", False, weight=0.0)], [], None)
    assert (s.status, s.reason) == ("fail", "failed: works")
    s = score_trial([check("works", True), check("must", False, weight=0.0, gate=True)], [], None)
    assert (s.status, s.composite) == ("fail", 0.0) and s.reason == "gate failed: must"
