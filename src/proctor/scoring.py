"""Every rule that turns check results into scores, statuses, verdicts and exit codes.

Nothing else in proctor decides pass or fail; reports only read what this module computed.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from proctor.fieldwise import Fieldwise
from proctor.model import Status, TaskDef, Thresholds
from proctor.results import (
    CheckRecord,
    ForbiddenRecord,
    HelpModeEffect,
    ModelRow,
    Scored,
    Summary,
    TaskRow,
    TaskStatus,
    TrialRecord,
    Usage,
)
from proctor.stats import fisher_exact, newcombe_diff, wilson
from proctor.text import cut, first_line

# Scores are sums of float products: 0.85 must pass a 0.85 threshold.
_EPS = 1e-9


@dataclass(eq=False, repr=False)
class Score(Fieldwise):
    """A trial's verdict: its status, composite score, and why."""
    status: Status
    composite: float
    reason: str | None = None  # why it failed or errored, one line (None when it passed)
    error: str | None = None  # an error's whole message


REASON_LIMIT = 500  # characters of a trial's reason


def score_trial(checks: list[CheckRecord], forbidden: list[ForbiddenRecord],
                pass_threshold: float | None, error: str | None = None,
                timed_out_after: float | None = None,
                tampering: list[dict[str, str]] | None = None) -> Score:
    """SPEC §3 Scoring, in order of precedence. `tampering` (SPEC §4: grading would have run
    what the agent changed) fails the trial whatever the checks say, even one that errored.
    `pass_threshold` None: the trial passes iff every check with weight > 0 (and every gate)
    passed. `timed_out_after` (seconds): the agent ran out of time, said first
    in the reason of a trial that did not pass."""
    total = sum(c["weight"] for c in checks)
    composite = sum(c["weight"] * c["score"] for c in checks) / total if total > 0 else 0.0
    score = (_verdict(checks, forbidden, pass_threshold, error, composite) if not tampering
             else Score("fail", 0.0, "tampering: " + "; ".join(
                 f"{t['path']} ({t['change']})" for t in tampering)))
    if score.status == "error":
        score.error = score.reason
    if score.reason is not None:
        score.reason = reason(score.reason, timed_out_after)
    return score


def reason(why: str, timed_out_after: float | None = None) -> str:
    """A trial's `reason`: one line, cut, saying first that the agent ran out of time."""
    if timed_out_after is not None:
        why = f"the agent timed out after {timed_out_after:g} s; {first_line(why)}"
    return cut(first_line(why), REASON_LIMIT)


def _verdict(checks: list[CheckRecord], forbidden: list[ForbiddenRecord],
             pass_threshold: float | None, error: str | None, composite: float) -> Score:
    # The harness or a check could not do its job: the agent is neither credited nor blamed.
    if error:
        return Score("error", 0.0, error)
    errored = [c for c in checks if c["error"]]
    if errored:
        return Score("error", 0.0, f"check {errored[0]['name']} errored: {errored[0]['error']}")
    # A gate is a hard requirement: when it did not pass, nothing else counts.
    fired = [c for c in checks if c["gate"] and not c["passed"]]
    if fired:
        return Score("fail", 0.0, f"gate failed: {_named(fired)}")
    violated = [f for f in forbidden if f["violated"]]
    if violated:
        return Score("fail", 0.0, "forbidden: " + "; ".join(
            f"{f['rule']}: {first_line(f['details'])}" if f["details"].strip() else f["rule"] for f in violated))
    failed = [c for c in checks if not c["passed"]]
    if pass_threshold is None:
        # No threshold: every check with weight > 0 must pass (a judge at 0.9 that passed
        # counts as passed); a weight-0 check is informational, shown but never the verdict
        # (gates were decided above, whatever their weight).
        counted = [c for c in failed if c["weight"] > 0]
        return Score("pass", composite) if not counted else Score(
            "fail", composite, f"failed: {_named(counted)}")
    if composite + _EPS >= pass_threshold:
        return Score("pass", composite)
    why = f"composite {composite:.2f} < pass_threshold {pass_threshold:g}"
    return Score("fail", composite, f"{why}; failed: {_named(failed)}" if failed else why)


def _named(checks: list[CheckRecord]) -> str:
    """`NAME: first line of its message` for each check, `; `-separated."""
    return "; ".join(f"{c['name']}: {first_line(c['message'])}" if c["message"].strip() else c["name"]
                     for c in checks)


def aggregate_replicas(trials: list[TrialRecord], how: str, pass_threshold: float | None) -> str:
    """A task's verdict (pass | fail) from its trials under `replica_aggregation`.

    Errored trials count as not passed: an outage must not turn into a pass. `mean` without
    a pass_threshold (a trial then passes iff every check passed) needs at least half the
    trials to pass: the mean of their verdicts, 1 or 0, against one half."""
    passed = sum(t["status"] == "pass" for t in trials)
    n = len(trials)
    if n == 0:
        return "fail"
    if how == "any":
        ok = passed > 0
    elif how == "majority":
        ok = passed * 2 > n
    elif how == "mean" and pass_threshold is None:
        ok = passed * 2 >= n
    elif how == "mean":
        mean = sum(t["composite_score"] for t in trials) / n
        ok = pass_threshold is not None and mean + _EPS >= pass_threshold
    else:  # all
        ok = passed == n
    return "pass" if ok else "fail"


def task_status(trials: list[TrialRecord]) -> TaskStatus:
    """error if any trial errored (its result can't be trusted); flaky if both passes and
    failures; otherwise pass or fail."""
    statuses = {t["status"] for t in trials}
    if "error" in statuses:
        return "error"
    if statuses == {"pass"}:
        return "pass"
    if statuses == {"fail"}:
        return "fail"
    return "flaky"


def threshold_for(model: str | None, thresholds: Thresholds | None) -> float | None:
    """A model's own threshold, else the default; rows without a model (oracle, command,
    …) get the default too."""
    if thresholds is None:
        return None
    if model is not None and model in thresholds.models:
        return thresholds.models[model]
    return thresholds.default


def threshold_met(pass_rate: float, threshold: float, tolerance: float) -> bool:
    # Thresholds are percentages (cli-bench); pass rates are fractions.
    return pass_rate * 100 + _EPS >= max(0.0, threshold - tolerance)


def agent_label(trial: TrialRecord, task: TaskDef | None) -> str:
    """The agent under test, as the models rows name it: the model for `llm`, else the agent
    type (`command:<program>` for a command agent)."""
    if trial["model"]:
        # An external agent type with a model: both matter ("claude-code:anthropic/…").
        return trial["model"] if trial["agent"] in (None, "llm") else f"{trial['agent']}:{trial['model']}"
    if trial["agent"] == "command" and task is not None and task.agent.command:
        program = task.agent.command.split()[0] if task.agent.command.split() else ""
        return f"command:{program.rsplit('/', 1)[-1]}" if program else "command"
    return trial["agent"] or "unknown"


def usage(group: list[TrialRecord]) -> Usage:
    """Turns, duration, tokens and cost of a group of trials: computed here only."""
    n = len(group) or 1
    passed = sum(t["status"] == "pass" for t in group)
    costs = [t["cost_usd"] for t in group if t["cost_usd"] is not None]
    cost = sum(costs) if costs else None  # what is known (an errored call may have none)
    return {
        "avg_turns": sum(t["turns"] for t in group) / n,
        "avg_duration_s": sum(t["duration_s"] for t in group) / n,
        "tokens": {k: _known_sum([t["tokens"].get(k) for t in group]) for k in ("input", "output")},
        "cost_usd": cost,
        "cost_per_success": cost / passed if cost is not None and passed else None,
    }


def _known_sum(values: list[int | None]) -> int | None:
    """The known counts summed; None when none is known (a command agent's tokens are
    unknown, never 0)."""
    known = [int(v) for v in values if v is not None]
    return sum(known) if known else None


def pass_at_k(n: int, c: int, k: int) -> float:
    """The unbiased estimator: the chance that at least one of k samples (of n, c passed)
    passes."""
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """The chance that all k samples (of n, c passed) pass."""
    return math.comb(c, k) / math.comb(n, k) if k <= n else 0.0


MAX_K = 10  # pass@k is reported for k = 1 .. min(trials, MAX_K)


def _task_row(key: tuple[Any, ...], group: list[TrialRecord], task: TaskDef | None) -> TaskRow:
    task_id, agent, model, help_mode, _ = key
    how = task.replica_aggregation if task else "all"
    n, ok = len(group), sum(t["status"] == "pass" for t in group)
    ks = range(1, min(n, MAX_K) + 1)
    return {
        "task_id": task_id, "model": model, "agent": agent, "help_mode": help_mode,
        "params": dict(group[0]["params"]), "status": task_status(group),
        "verdict": aggregate_replicas(group, how, task.pass_threshold if task else None),
        "aggregation": how, "pass_rate": ok / n, "trials": n, "passed": ok,
        "errored": sum(t["status"] == "error" for t in group),
        "mean_score": sum(t["composite_score"] for t in group) / n,
        "category": task.category if task else None,
        "pass_at_k": {str(k): pass_at_k(n, ok, k) for k in ks},
        "pass_hat_k": {str(k): pass_hat_k(n, ok, k) for k in ks},
        **usage(group),
    }


def _mean_k(rows: list[TaskRow]) -> tuple[dict[str, float], dict[str, float]]:
    """A model's pass@k and pass^k: for each k, the mean over its tasks rows (conditions)
    with at least k trials — a task run once says nothing about k = 3 and is left out."""
    at: dict[str, float] = {}
    hat: dict[str, float] = {}
    for k in range(1, max((len(r["pass_at_k"]) for r in rows), default=0) + 1):
        reach = [r for r in rows if str(k) in r["pass_at_k"]]
        at[str(k)] = sum(r["pass_at_k"][str(k)] for r in reach) / len(reach)
        hat[str(k)] = sum(r["pass_hat_k"][str(k)] for r in reach) / len(reach)
    return at, hat


def _model_row(agent: str, group: list[TrialRecord], by_id: dict[str, TaskDef]
               ) -> tuple[ModelRow, bool]:
    """The row, and whether it missed a threshold that is enforced (behavior: error)."""
    n, ok = len(group), sum(t["status"] == "pass" for t in group)
    model = group[0]["model"]
    # Each suite's thresholds judge the row's trials of that suite, all together (SPEC §2).
    by_source: dict[object, tuple[Thresholds, list[TrialRecord]]] = {}
    for t in group:
        task = by_id.get(t["task_id"])
        if task is not None and (th := task.thresholds) is not None:
            by_source.setdefault(th.suite or id(th), (th, []))[1].append(t)
    threshold, met, enforced_miss = None, None, False
    for th, trials in by_source.values():
        limit = threshold_for(model, th)
        if limit is None:
            continue
        rate = sum(t["status"] == "pass" for t in trials) / len(trials)
        ok_here = threshold_met(rate, limit, th.tolerance)
        met = ok_here if met is None else met and ok_here
        enforced_miss |= not ok_here and th.behavior == "error"
        threshold = limit if threshold is None or len(by_source) == 1 else min(threshold, limit)
    row: ModelRow = {
        "model": model, "agent": agent, "pass_rate": ok / n, "ci95": list(wilson(ok, n)),
        "threshold": threshold, "met": met, "trials": n, "passed": ok,
        "errored": sum(t["status"] == "error" for t in group), **usage(group),
        "pass_at_k": {}, "pass_hat_k": {},  # from its tasks rows, in summarize
    }
    return row, enforced_miss


def _task_key(t: TrialRecord, by_id: dict[str, TaskDef]) -> tuple[tuple[Any, ...], str]:
    """A trial's tasks row (task, agent, model, help mode, params) and its agent's label."""
    agent = agent_label(t, by_id.get(t["task_id"]))
    params = tuple(sorted((k, repr(v)) for k, v in t["params"].items()))
    return (t["task_id"], agent, t["model"], t["help_mode"], params), agent


class RowsAhead:
    """Tasks rows made during a run, each as its task's last planned trial is stored, beside
    the trials still running, instead of all at the run's end (~10 ms of 1,000 one-trial
    tasks). `summarize` takes a row made ahead only when its trials are the very records it
    groups (the same objects, in the same order): the same row, made earlier."""

    def __init__(self, planned: Iterable[tuple[str, str]], tasks: dict[str, TaskDef]):
        self.tasks = tasks
        self.ids: dict[str, list[str]] = defaultdict(list)  # task id -> its trial ids, in plan order
        for trial_id, task_id in planned:
            self.ids[task_id].append(trial_id)
        self.left = {task_id: set(ids) for task_id, ids in self.ids.items()}
        self.rows: dict[tuple[Any, ...], tuple[list[TrialRecord], TaskRow]] = {}

    def stored(self, trial_id: str, task_id: str,
               record: Callable[[str], TrialRecord | None]) -> None:
        """A trial of `task_id` stored; `record(id)`: a stored trial's record as the run's
        end will read it (None: not known; then the task's rows are made at the end)."""
        left = self.left.get(task_id)
        if left is None:
            return
        left.discard(trial_id)
        if left:
            return
        del self.left[task_id]
        records = [record(tid) for tid in self.ids[task_id]]
        if any(r is None for r in records):
            return
        groups: dict[tuple[Any, ...], list[TrialRecord]] = defaultdict(list)
        for r in records:
            assert r is not None
            groups[_task_key(r, self.tasks)[0]].append(r)
        for key, group in groups.items():
            self.rows[key] = (group, _task_row(key, group, self.tasks.get(task_id)))

    def row(self, key: tuple[Any, ...], group: list[TrialRecord]) -> TaskRow | None:
        made = self.rows.get(key)
        if made is None or len(made[0]) != len(group) or \
                any(a is not b for a, b in zip(made[0], group, strict=True)):
            return None
        return made[1]


def summarize(trials: list[TrialRecord], tasks: Iterable[TaskDef],
              ahead: RowsAhead | None = None) -> Scored:
    """The `summary`, `tasks` and `models` sections of results.json, and the exit code.
    Linear in trials + tasks. `ahead`: tasks rows made during the run (RowsAhead)."""
    by_id = {t.id: t for t in tasks}
    n = len(trials)
    passed = sum(t["status"] == "pass" for t in trials)
    failed = sum(t["status"] == "fail" for t in trials)
    errored = sum(t["status"] == "error" for t in trials)
    summary: Summary = {"trials": n, "passed": passed, "failed": failed, "errored": errored,
                        "pass_rate": passed / n if n else 0.0}
    by_task: dict[tuple[Any, ...], list[TrialRecord]] = defaultdict(list)
    by_agent: dict[str, list[TrialRecord]] = defaultdict(list)
    for t in trials:
        key, agent = _task_key(t, by_id)
        by_task[key].append(t)
        by_agent[agent].append(t)
    task_rows = [(ahead and ahead.row(k, g)) or _task_row(k, g, by_id.get(k[0]))
                 for k, g in by_task.items()]
    model_rows, enforced_miss = [], False
    for agent, group in by_agent.items():
        row, miss = _model_row(agent, group, by_id)
        model_rows.append(row)
        enforced_miss |= miss
    for row in model_rows:
        row["pass_at_k"], row["pass_hat_k"] = _mean_k(
            [r for r in task_rows if r["agent"] == row["agent"]])
    if any(row["threshold"] is not None for row in model_rows):
        exit_code = 1 if enforced_miss else 0
    else:
        exit_code = 0 if n and passed == n else 1
    return {"summary": summary, "tasks": task_rows, "models": model_rows,
            "help_modes": help_mode_effects(by_agent), "exit_code": exit_code}


def help_mode_effects(by_agent: dict[str, list[TrialRecord]]) -> list[HelpModeEffect]:
    """For each agent that ran under several help modes: each mode against the first (in
    the order met), over the tasks both ran — the answer to "does --help help?"."""
    out: list[HelpModeEffect] = []
    for agent, group in by_agent.items():
        modes: dict[str, dict[str, list[TrialRecord]]] = {}
        for t in group:
            if t["help_mode"] is not None:
                modes.setdefault(t["help_mode"], {}).setdefault(t["task_id"], []).append(t)
        if len(modes) < 2:
            continue
        base, *others = list(modes)
        for other in others:
            shared = modes[base].keys() & modes[other].keys()
            a = [t for task in shared for t in modes[base][task]]
            b = [t for task in shared for t in modes[other][task]]
            pa, pb = sum(t["status"] == "pass" for t in a), sum(t["status"] == "pass" for t in b)
            out.append({
                "agent": agent, "mode_a": base, "mode_b": other,
                "passed_a": pa, "trials_a": len(a), "passed_b": pb, "trials_b": len(b),
                "diff": (pb / len(b) if b else 0.0) - (pa / len(a) if a else 0.0),
                "ci95": list(newcombe_diff(pa, len(a), pb, len(b))),
                "p_value": fisher_exact(pa, len(a) - pa, pb, len(b) - pb),
            })
    return out
