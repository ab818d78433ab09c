"""Where trials run: in this process (local.py, the default) or on Ray nodes (ray.py,
--executor ray), each an `Executor` found by name in EXECUTORS (`--executor`).

An executor is one module with a class that follows `Executor` (below) plus one line in
EXECUTORS; run/execute.py gives it the trials one by one and stores what it returns.

What every executor shares, so each writes none of it again:

* `open_run` / `close_run`: the run's `RunContext` (the backend instance its trials share,
  with its box pool; the services) made and ended one way;
* `result_of_failure`: the one way an executor's exception becomes a trial's `error` result;
* `InfrastructureError`: a trial that could not run because of where it ran (its Ray node or
  worker lost), not anything it did: a typed exception, stored as an `error` whose text
  starts with INFRA_ERROR (results.jsonl's form), which `--resume` runs again.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from proctor.fieldwise import Fieldwise
from proctor.registry import Registry

if TYPE_CHECKING:  # the CLI reads EXECUTORS' names at start-up: nothing more is imported
    from proctor.model import RunOptions, TaskDef, Trial
    from proctor.results import TrialRecord
    from proctor.trial.context import RunContext



@dataclass(eq=False, repr=False)
class Launch(Fieldwise):
    """What an executor is given to run a run's trials."""

    options: RunOptions
    run_id: str
    run_dir: Path  # the run's directory (results, trials' traces)
    trial_dir: Callable[[str], Path]  # where a trial's trace and audit go
    tasks: dict[str, TaskDef]  # by id, every task of the run
    trials: list[Trial]  # the trials to run (a resumed run's are fewer than its plan's)
    workers: int  # trials at once
    connected: bool  # `connect` started what the executor must stop (a private Ray)


class Executor(Protocol):
    """Where a run's trials run: `connect` before the run directory exists (a bad address is
    exit 2), `open` once the run begins, `run` per trial (concurrently, `workers` at once),
    `rate_limits` at the end, `close` always (even on Ctrl-C)."""

    @classmethod
    def connect(cls, options: RunOptions) -> bool:
        """Reach where trials will run; True when this process started something `close`
        must stop."""
        ...

    @classmethod
    async def open(cls, launch: Launch) -> Executor:
        """Ready to run `launch.trials` (services, sandboxes, nodes); cleans up after itself
        if it fails."""
        ...

    async def run(self, trial: Trial, task: TaskDef) -> TrialRecord:
        """One trial's result; an exception becomes its `error` result (result_of_failure)."""
        ...

    async def rate_limits(self) -> dict[str, Any]:
        """What the model-call limiter of each endpoint did (providers/limiter.py)."""
        ...

    async def close(self) -> None:
        ...


# Each entry is a class following `Executor`; `--executor NAME` picks one.
EXECUTORS: Registry[type[Executor]] = Registry("executor", {
    "local": "proctor.executors.local:LocalExecutor",
    "ray": "proctor.executors.ray:RayExecutor",
})

# A trial that errored because its machine was lost, not because of anything it did: its
# `error` starts with this, and `--resume` runs it again (docs/running.md#ray).
INFRA_ERROR = "infrastructure error: "


class InfrastructureError(Exception):
    """The trial could not run where it was sent; `failures` are the earlier attempts'
    causes (the last three are named), `node` where it was last lost."""

    def __init__(self, message: str, failures: Sequence[str] = (), node: str | None = None):
        super().__init__(message)
        self.message, self.failures, self.node = message, list(failures), node

    def __str__(self) -> str:
        return INFRA_ERROR + with_failures(self.message, self.failures)


def with_failures(message: str, failures: Sequence[str]) -> str:
    return message + (" — " + "; ".join(failures[-3:]) if failures else "")


def infra_error(result: TrialRecord) -> bool:
    """Whether a stored result is an InfrastructureError's (read back from results.jsonl)."""
    return result["status"] == "error" and (result["error"] or "").startswith(INFRA_ERROR)


def result_of_failure(trial: Trial, task: TaskDef, e: BaseException) -> TrialRecord:
    """The `error` result of a trial its executor could not run: an InfrastructureError as
    it says (to be run again on resume); anything else is proctor's own failure."""
    from proctor.trial.trial import error_result

    if isinstance(e, InfrastructureError):
        result = error_result(trial, task, str(e))
        result["node"] = e.node or result["node"]
        return result
    return error_result(trial, task, f"internal error: {e!r}")


def open_run(options: RunOptions, *, run_id: str, trial_dir: Callable[[str], Path],
             sandbox_root: Path, scratch: Path, concurrency: int,
             services: dict[Any, Any] | None = None) -> RunContext:
    """What a run's trials share on one machine: the backend instance (as many idle boxes
    kept as trials run at once, `concurrency`; its state under `scratch`), the services.
    `await close_run(it)` when they are done."""
    from proctor.sandbox import backend_for_run
    from proctor.trial.context import RunContext

    return RunContext(options=options, trial_dir=trial_dir, run_id=run_id,
                      sandbox_root=sandbox_root, services=services if services is not None else {},
                      backend=backend_for_run(options.backend, scratch, concurrency))


def drain_run(run: RunContext) -> None:
    """The run's last trial has begun: a backend that keeps something for later trials
    (the local backend's idle boxes, `drain`) lets it go as each running trial ends, while
    the others still run, instead of all of it at `close_run`."""
    drain = getattr(run.backend, "drain", None)  # optional: a backend keeping nothing has none
    if drain is not None:
        drain()


async def close_run(run: RunContext) -> None:
    """The backend (its box pool) closed, then the services stopped."""
    from proctor.sandbox import close_backend
    from proctor.services.lifecycle import stop_services

    try:
        if run.backend is not None:
            await close_backend(run.backend)
    finally:
        await stop_services(run.services)
