"""The result types of a run, after scoring: what results.json holds (SPEC §5) and every
report, `show`, `compare` and the store read.

They are TypedDicts: results.json is their JSON form, byte for byte, so a report rendered
from a file and one rendered in the run that made it see the same thing. The scorer
(`proctor.scoring.summarize`) is the only producer of the aggregate rows; reports never
recompute a figure that is here. `TrialResult` (one trial) lives in `proctor.model`.
"""

from __future__ import annotations

from typing import Any, TypedDict


class Summary(TypedDict):
    trials: int
    passed: int
    failed: int
    errored: int
    pass_rate: float  # a fraction


class Usage(TypedDict):
    """What a group of trials cost, the same figures in every report."""

    avg_turns: float
    avg_duration_s: float
    tokens: dict[str, int | None]  # {"input", "output"}, the known counts summed; None: unknown
    cost_usd: float | None  # the known costs summed; None when no trial's cost is known
    cost_per_success: float | None  # None without a known cost or without a success


class TaskRow(Usage):
    """One per task × agent/model × help mode × params: identical conditions."""

    task_id: str
    model: str | None
    agent: str  # the agent under test, as the models rows name it
    help_mode: str | None
    params: dict[str, Any]
    status: str  # pass | fail | flaky | error
    verdict: str  # the replicas aggregated as the task says (scoring.replica_aggregation)
    aggregation: str
    pass_rate: float
    trials: int
    passed: int
    errored: int
    mean_score: float
    category: str | None
    pass_at_k: dict[str, float]  # "k" -> unbiased pass@k, k = 1 .. trials
    pass_hat_k: dict[str, float]  # "k" -> pass^k: all k samples pass


class ModelRow(Usage):
    """One per agent under test (the model for `llm`, else `oracle`, `command:<program>`, …)."""

    model: str | None
    agent: str
    pass_rate: float
    ci95: list[float]
    threshold: float | None  # percent; None when no threshold applies
    met: bool | None
    trials: int
    passed: int
    errored: int
    pass_at_k: dict[str, float]  # the mean of its tasks rows', for k every row reaches
    pass_hat_k: dict[str, float]


class HelpModeEffect(TypedDict):
    """Does injecting `--help` help? One per agent and pair of help modes it ran under."""

    agent: str
    mode_a: str  # the baseline (the first mode of the suite's `help_modes`)
    mode_b: str
    passed_a: int
    trials_a: int
    passed_b: int
    trials_b: int
    diff: float  # pass rate b - a
    ci95: list[float]  # Newcombe interval of the difference
    p_value: float  # Fisher's exact test, two-sided


class Scored(TypedDict):
    summary: Summary
    tasks: list[TaskRow]
    models: list[ModelRow]
    help_modes: list[HelpModeEffect]
    exit_code: int


class Isolation(TypedDict):
    isolated: bool
    note: str


class RunResults(TypedDict, total=False):
    """results.json."""

    run_id: str
    started_at: str
    finished_at: str | None
    complete: bool
    interrupted: bool
    summary: Summary
    trials: list[dict[str, Any]]  # TrialResult.to_dict() each (`node`: where, under Ray)
    tasks: list[TaskRow]
    models: list[ModelRow]
    help_modes: list[HelpModeEffect]
    exit_code: int
    isolation: Isolation
