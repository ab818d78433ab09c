"""Every scoring rule of SPEC §2/§3 against a direct transcription of its formula, on
generated inputs (hypothesis): thresholds and tolerance, the composite, gates, forbidden
rules, the default without `pass_threshold`, replica aggregation, flaky, pass@k and pass^k.

The transcriptions compute with exact fractions; where a float result sits within rounding
distance of a threshold (proctor allows 1e-9 there, docs/scoring.md), nothing is asserted.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections import defaultdict
from fractions import Fraction

from hypothesis import given, settings
from hypothesis import strategies as st

from proctor.model import AgentDef, TaskDef, Thresholds
from proctor.results import CheckRecord, TrialRecord, new_check, new_forbidden, new_trial
from proctor.scoring import aggregate_replicas, pass_at_k, pass_hat_k, score_trial, summarize

settings.register_profile("proctor", max_examples=100, deadline=None)
settings.load_profile("proctor")

BAND = Fraction(1, 10**8)  # closer than this to a threshold: float rounding decides

weights = st.sampled_from([0.0, 0.1, 0.2, 0.3, 0.5, 1.0, 2.0, 3.5])
scores = st.sampled_from([0.0, 0.25, 0.5, 0.6, 0.7, 0.85, 0.9, 1.0])


@st.composite
def checks(draw) -> list[CheckRecord]:
    n = draw(st.integers(1, 6))
    out = []
    for i in range(n):
        score = draw(scores)
        # A check passes at score 1, fails at 0; in between it may do either (a judge).
        passed = score == 1.0 or (score > 0 and draw(st.booleans()))
        out.append(new_check(name=f"c{i}", type="x", passed=passed, score=score,
                             weight=draw(weights), gate=draw(st.booleans()), message=f"m{i}",
                             error="boom" if draw(st.integers(0, 15)) == 0 else None))
    if sum(c["weight"] for c in out) == 0:
        out[0]["weight"] = 1.0  # SPEC: at least one weight > 0
    return out


forbidden_lists = st.lists(st.builds(new_forbidden, rule=st.sampled_from(
    ["file_writes_outside", "http_except", "secrets_in_logs", "db_writes_outside"]),
    violated=st.booleans(), details=st.just("d")), max_size=3)
thresholds_ = st.one_of(st.none(), st.sampled_from([0.0, 0.5, 0.7, 0.85, 0.9, 1.0]))


def spec_composite(cs: list[CheckRecord]) -> Fraction:
    """composite = Σ weight·score / Σ weight"""
    total = sum(Fraction(c["weight"]) for c in cs)
    return sum(Fraction(c["weight"]) * Fraction(c["score"]) for c in cs) / total


def spec_status(cs, forbidden, pass_threshold) -> tuple[str, Fraction] | None:
    """SPEC §3 Scoring, as written; None where float rounding decides."""
    if any(c["error"] for c in cs):
        return "error", Fraction(0)
    if any(c["gate"] and not c["passed"] for c in cs):
        return "fail", Fraction(0)
    if any(f["violated"] for f in forbidden):
        return "fail", Fraction(0)
    composite = spec_composite(cs)
    if pass_threshold is None:
        # every invariant with weight > 0 (gates were decided above): weight 0 informs
        return ("pass" if all(c["passed"] for c in cs if c["weight"] > 0) else "fail"), composite
    if abs(composite - Fraction(pass_threshold)) < BAND:
        return None
    return ("pass" if composite >= Fraction(pass_threshold) else "fail"), composite


@given(checks(), forbidden_lists, thresholds_)
def test_a_trials_status_and_composite_follow_spec(cs, forbidden, pass_threshold):
    expected = spec_status(cs, forbidden, pass_threshold)
    got = score_trial(cs, forbidden, pass_threshold)
    if expected is None:
        return
    status, composite = expected
    assert got.status == status
    if status != "error":
        assert math.isclose(got.composite, float(composite), abs_tol=1e-12)
    # Every trial that did not pass says why, in one line; a passing one has no reason.
    assert (got.reason is None) == (status == "pass")
    if got.reason is not None:
        assert "\n" not in got.reason and got.reason.strip()
    if status == "fail" and any(c["gate"] and not c["passed"] for c in cs) and not any(
            c["error"] for c in cs):
        assert got.reason.startswith("gate failed: ")


@given(checks(), thresholds_)
def test_the_agent_timing_out_is_said_first(cs, pass_threshold):
    got = score_trial(cs, [], pass_threshold, timed_out_after=15)
    if got.status != "pass":
        assert got.reason.startswith("the agent timed out after 15 s; ")


# -- replicas -------------------------------------------------------------------------

statuses = st.sampled_from(["pass", "fail", "error"])


@st.composite
def replicas(draw) -> list[TrialRecord]:
    out = []
    for i in range(draw(st.integers(1, 9))):
        status = draw(statuses)
        score = 0.0 if status == "error" else draw(scores)
        out.append(new_trial(id=f"t.r{i}", task_id="t", model="m", help_mode=None,
                             replica=i, params={}, status=status, composite_score=score))
    return out


def spec_aggregate(trials, how, pass_threshold) -> str | None:
    """SPEC §3: all (every replica passes), any, majority (more than half), mean (mean
    composite ≥ pass_threshold; without one, docs/scoring.md: at least half pass)."""
    n, passed = len(trials), sum(t["status"] == "pass" for t in trials)
    if how == "all":
        ok = passed == n
    elif how == "any":
        ok = passed >= 1
    elif how == "majority":
        ok = Fraction(passed) > Fraction(n, 2)
    elif pass_threshold is None:
        ok = Fraction(passed) >= Fraction(n, 2)
    else:
        mean = sum(Fraction(t["composite_score"]) for t in trials) / n
        if abs(mean - Fraction(pass_threshold)) < BAND:
            return None
        ok = mean >= Fraction(pass_threshold)
    return "pass" if ok else "fail"


@given(replicas(), st.sampled_from(["all", "any", "majority", "mean"]), thresholds_)
def test_replica_aggregation_follows_spec(trials, how, pass_threshold):
    expected = spec_aggregate(trials, how, pass_threshold)
    if expected is not None:
        assert aggregate_replicas(trials, how, pass_threshold) == expected


def task(id="t", thresholds=None, **kw):
    return TaskDef(id=id, dialect="suite", source=f"{id}.yaml", base_dir=".", prompt="p",
                   agent=AgentDef(), checks=[], thresholds=thresholds, **kw)


@given(replicas(), st.sampled_from(["all", "any", "majority", "mean"]), thresholds_)
def test_a_tasks_row_status_is_flaky_only_when_identical_trials_disagree(trials, how, pt):
    [row] = summarize(trials, [task(replica_aggregation=how, pass_threshold=pt)])["tasks"]
    kinds = {t["status"] for t in trials}
    expected = ("error" if "error" in kinds else "pass" if kinds == {"pass"}
                else "fail" if kinds == {"fail"} else "flaky")
    assert row["status"] == expected
    want = spec_aggregate(trials, how, pt)
    if want is not None:
        assert row["verdict"] == want


# -- pass@k / pass^k ------------------------------------------------------------------


@given(st.integers(1, 8).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n),
                                                    st.integers(1, n))))
def test_pass_at_k_and_pass_hat_k_are_the_share_of_k_samples(nck):
    """docs/scoring.md: pass@k = 1 − C(n−c, k)/C(n, k), pass^k = C(c, k)/C(n, k); checked
    against their meaning, every way of drawing k of the n trials."""
    n, c, k = nck
    outcomes = [True] * c + [False] * (n - c)
    draws = list(itertools.combinations(outcomes, k))
    assert math.isclose(pass_at_k(n, c, k), Fraction(sum(any(d) for d in draws), len(draws)))
    assert math.isclose(pass_hat_k(n, c, k), Fraction(sum(all(d) for d in draws), len(draws)))
    assert math.isclose(pass_at_k(n, c, k),
                        1 - Fraction(math.comb(n - c, k), math.comb(n, k)))
    assert math.isclose(pass_hat_k(n, c, k), Fraction(math.comb(c, k), math.comb(n, k)))


# -- thresholds -----------------------------------------------------------------------

MODELS = ("m1", "m2", "m3")


@st.composite
def suites(draw) -> tuple[list[TaskDef], list[TrialRecord]]:
    """One or two suites (each its own thresholds, or none), each with a few tasks; trials
    of every task for some models."""
    tasks, trials = [], []
    for s in range(draw(st.integers(1, 2))):
        th = None
        if draw(st.booleans()) or s == 0:
            th = Thresholds(
                default=draw(st.one_of(st.none(), st.integers(0, 100).map(float))),
                models=draw(st.dictionaries(st.sampled_from(MODELS),
                                            st.integers(0, 100).map(float), max_size=2)),
                tolerance=float(draw(st.integers(0, 20))),
                behavior=draw(st.sampled_from(["error", "informational"])), suite=f"s{s}.yaml")
        for t in range(draw(st.integers(1, 3))):
            # Each task its own copy, as a task shipped to another process has: the suite
            # names them, not the object.
            tasks.append(task(f"s{s}t{t}", thresholds=dataclasses.replace(th) if th else None))
    models = draw(st.lists(st.sampled_from(MODELS), min_size=1, max_size=3, unique=True))
    for td in tasks:
        for m in models:
            for r in range(draw(st.integers(1, 4))):
                trials.append(new_trial(id=f"{td.id}.{m}.r{r}", task_id=td.id, model=m,
                                        help_mode=None, replica=r, params={},
                                        status=draw(statuses), composite_score=0.0))
    return tasks, trials


def spec_thresholds(tasks, trials):
    """SPEC §2: a model meets its threshold when its pass rate × 100 ≥ max(0, threshold −
    tolerance), over its trials of the suite; `models` overrides `default`; neither: not
    enforced. §1: with thresholds, exit 1 only for a missed `behavior: error` threshold;
    without, exit 0 only if every trial passed."""
    by_id = {t.id: t for t in tasks}
    per = defaultdict(lambda: defaultdict(list))  # model -> suite -> trials
    for t in trials:
        th = by_id[t["task_id"]].thresholds
        if th is not None:
            per[t["model"]][th.suite].append(t)
    met, missed_error, any_threshold = {}, False, False
    for model in {t["model"] for t in trials}:
        verdicts = []
        for group in per[model].values():
            th = by_id[group[0]["task_id"]].thresholds
            limit = th.models.get(model, th.default)
            if limit is None:
                continue
            rate = Fraction(sum(t["status"] == "pass" for t in group), len(group))
            ok = rate * 100 >= max(Fraction(0), Fraction(limit) - Fraction(th.tolerance))
            verdicts.append(ok)
            missed_error |= not ok and th.behavior == "error"
        met[model] = all(verdicts) if verdicts else None
        any_threshold |= bool(verdicts)
    if any_threshold:
        code = 1 if missed_error else 0
    else:
        code = 0 if all(t["status"] == "pass" for t in trials) else 1
    return met, code


@given(suites())
def test_thresholds_judge_each_models_trials_of_each_suite(case):
    tasks, trials = case
    met, code = spec_thresholds(tasks, trials)
    out = summarize(trials, tasks)
    assert {r["model"]: r["met"] for r in out["models"]} == met
    assert out["exit_code"] == code
