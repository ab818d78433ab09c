"""Every rule that turns check results into scores, statuses, verdicts and exit codes.

Nothing else in proctor decides pass or fail; reports only read what this module computed.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from proctor.model import CheckResult, ForbiddenResult, TaskDef, Thresholds, TrialResult
from proctor.stats import wilson

# Scores are sums of float products: 0.85 must pass a 0.85 threshold.
_EPS = 1e-9


@dataclass
class Score:
    status: str  # pass | fail | error
    composite: float
    reason: str | None = None  # why the status is what it is, when not obvious


def score_trial(checks: list[CheckResult], forbidden: list[ForbiddenResult],
                pass_threshold: float, error: str | None = None) -> Score:
    """SPEC §3 Scoring, in order of precedence."""
    total = sum(c.weight for c in checks)
    composite = sum(c.weight * c.score for c in checks) / total if total > 0 else 0.0
    # The harness or a check could not do its job: the agent is neither credited nor blamed.
    if error:
        return Score("error", 0.0, error)
    errored = [c for c in checks if c.error]
    if errored:
        return Score("error", 0.0, f"check {errored[0].name} errored: {errored[0].error}")
    # A gate is a hard requirement: when it did not pass, nothing else counts.
    fired = [c.name for c in checks if c.gate and not c.passed]
    if fired:
        return Score("fail", 0.0, f"gate failed: {', '.join(fired)}")
    violated = [f.rule for f in forbidden if f.violated]
    if violated:
        return Score("fail", 0.0, f"forbidden: {', '.join(violated)}")
    if composite + _EPS >= pass_threshold:
        return Score("pass", composite)
    return Score("fail", composite)


def aggregate_replicas(trials: list[TrialResult], how: str, pass_threshold: float) -> str:
    """A task's verdict (pass | fail) from its trials under `replica_aggregation`.

    Errored trials count as not passed: an outage must not turn into a pass."""
    passed = sum(t.status == "pass" for t in trials)
    n = len(trials)
    if n == 0:
        return "fail"
    if how == "any":
        ok = passed > 0
    elif how == "majority":
        ok = passed * 2 > n
    elif how == "mean":
        ok = sum(t.composite_score for t in trials) / n + _EPS >= pass_threshold
    else:  # all
        ok = passed == n
    return "pass" if ok else "fail"


def task_status(trials: list[TrialResult]) -> str:
    """error if any trial errored (its result can't be trusted); flaky if both passes and
    failures; otherwise pass or fail."""
    statuses = {t.status for t in trials}
    if "error" in statuses:
        return "error"
    if statuses == {"pass"}:
        return "pass"
    if statuses == {"fail"}:
        return "fail"
    return "flaky"


def threshold_for(model: str | None, thresholds: Thresholds | None) -> float | None:
    if thresholds is None or model is None:
        return None
    if model in thresholds.models:
        return thresholds.models[model]
    return thresholds.default


def threshold_met(pass_rate: float, threshold: float, tolerance: float) -> bool:
    # Thresholds are percentages (cli-bench); pass rates are fractions.
    return pass_rate * 100 + _EPS >= max(0.0, threshold - tolerance)


def summarize(trials: list[TrialResult], tasks: Iterable[TaskDef]) -> dict[str, Any]:
    """The `summary`, `tasks` and `models` sections of results.json, and the exit code."""
    by_id = {t.id: t for t in tasks}
    n = len(trials)
    passed = sum(t.status == "pass" for t in trials)
    failed = sum(t.status == "fail" for t in trials)
    errored = sum(t.status == "error" for t in trials)
    summary = {"trials": n, "passed": passed, "failed": failed, "errored": errored,
               "pass_rate": passed / n if n else 0.0}

    groups: dict[tuple[str, str | None], list[TrialResult]] = defaultdict(list)
    for t in trials:
        groups[(t.task_id, t.model)].append(t)
    task_rows = []
    for (task_id, model), group in groups.items():
        task = by_id.get(task_id)
        how = task.replica_aggregation if task else "all"
        threshold = task.pass_threshold if task else 1.0
        ok = sum(t.status == "pass" for t in group)
        task_rows.append({
            "task_id": task_id, "model": model, "status": task_status(group),
            "verdict": aggregate_replicas(group, how, threshold), "aggregation": how,
            "pass_rate": ok / len(group), "trials": len(group), "passed": ok,
            "errored": sum(t.status == "error" for t in group),
            "mean_score": sum(t.composite_score for t in group) / len(group),
            "category": task.category if task else None,
        })

    thresholds = next((t.thresholds for t in by_id.values() if t.thresholds), None)
    by_model: dict[str | None, list[TrialResult]] = defaultdict(list)
    for t in trials:
        by_model[t.model].append(t)
    model_rows = []
    enforced_miss = False
    for model, group in by_model.items():
        ok = sum(t.status == "pass" for t in group)
        rate = ok / len(group)
        threshold = threshold_for(model, thresholds)
        met = None
        if threshold is not None:
            met = threshold_met(rate, threshold, thresholds.tolerance)
            enforced_miss |= (not met) and thresholds.behavior == "error"
        costs = [t.cost_usd for t in group if t.cost_usd is not None]
        cost = sum(costs) if len(costs) == len(group) else None
        model_rows.append({
            "model": model, "pass_rate": rate, "ci95": list(wilson(ok, len(group))),
            "threshold": threshold, "met": met, "trials": len(group), "passed": ok,
            "turns_avg": sum(t.turns for t in group) / len(group),
            "tokens": {"input": sum(t.tokens.get("input", 0) for t in group),
                       "output": sum(t.tokens.get("output", 0) for t in group)},
            "cost_usd": cost,
            "cost_per_success": (cost / ok) if cost is not None and ok else None,
            "duration_avg_s": sum(t.duration_s for t in group) / len(group),
        })

    if any(row["threshold"] is not None for row in model_rows):
        exit_code = 1 if enforced_miss else 0
    else:
        exit_code = 0 if n and passed == n else 1
    return {"summary": summary, "tasks": task_rows, "models": model_rows,
            "exit_code": exit_code}
