"""A planned run executed: its trials through an executor (executors/, `--executor`),
`workers` at once, each stored the moment it finishes, then scored and reported.

On Ctrl-C (or SIGTERM) running trials are cancelled and cleaned up, services stopped, the
temp root removed, and `results.json` written for what finished; `--resume RUN_DIR` runs the
rest.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import signal
import sys
from collections.abc import Callable
from typing import Any

from proctor.executors import EXECUTORS, Executor, Launch, infra_error, result_of_failure
from proctor.model import RunOptions, TaskDef, Trial
from proctor.plan import unprompted_notes
from proctor.proc import use_fast_child_watcher
from proctor.report import write_reports
from proctor.report.progress import Kind, Progress
from proctor.results import SCHEMA_VERSION, RunResults, TrialRecord
from proctor.run.prepare import Planned
from proctor.scoring import RowsAhead, summarize
from proctor.startup import release_gc
from proctor.store import RunStore, by_agent, index_run, iso
from proctor.text import agent_model, row_label
from proctor.trial.trial import error_result


def run_planned(planned: Planned) -> RunResults:
    store, options = planned.store, planned.options
    done = store.finished()  # read again at the end only if someone else wrote to it (written)
    if store.rejected:
        print(f"proctor: {store.jsonl_path}: {store.rejected} line(s) not written by this run "
              "(forged or altered) were ignored; their trials run again", file=sys.stderr)
    # An infrastructure error (a Ray node lost) says nothing about the trial: run it again;
    # so are, with --retry-errors, the errors of the kinds it names.
    retry = set(options.retry_errors)
    todo = [t for t in planned.trials if t.id not in done or infra_error(done[t.id])
            or (done[t.id]["status"] == "error" and done[t.id]["error_kind"] in retry)]
    indexed = options.purpose != "check"  # `proctor check`'s scratch runs are no history
    if indexed:
        index_run(store.run_id, store.dir, started_at=planned.meta["started_at"],
                  status="running", specs=planned.paths, suite=planned.meta.get("suite"),
                  models=list(dict.fromkeys(agent_model(t.agent, t.model)
                                            for t in planned.trials)))
    # A fresh run's elapsed time began before its image builds (prepare); a resumed one's now.
    progress = _progress(len(planned.trials), len(planned.trials) - len(todo), options,
                         since=planned.t0 if not done else None)
    interrupted = False
    spend = RunBudget(options.max_cost, {k: r for k, r in done.items()
                                         if k not in {t.id for t in todo}})
    # --otlp-endpoint: each finished trial's spans, sent by a thread of their own
    sender = _otlp_sender(planned) if options.otlp_endpoint and indexed else None
    on_result = progress.advance if sender is None else _each(progress.advance,
                                                                 sender.trial_done)
    on_result, ahead = _rows_ahead(planned, done, on_result)
    rate_limit: dict[str, Any] = {}  # filled by _execute: each endpoint's limiter figures
    # What the run loaded (every task, its models, the plan) lives until the end: out of
    # the cyclic collector's sight, so its full passes during the trials skip it. The proctor
    # program held the collector off until here (proctor/startup.py).
    gc.freeze()
    release_gc()
    try:
        asyncio.run(_execute(todo, planned, on_result, spend, rate_limit))
    except (KeyboardInterrupt, asyncio.CancelledError):
        interrupted = True
    finally:
        gc.unfreeze()
        progress.close()
        store.close()
    results = build_results(planned, store.written(), interrupted=interrupted,
                            max_cost=options.max_cost, rate_limit=rate_limit, ahead=ahead)
    store.write_results(results)
    if sender is not None:
        sender.finish(results)
    status = "interrupted" if interrupted else ("passed" if results["exit_code"] == 0 else "failed")
    if indexed:
        index_run(store.run_id, store.dir, started_at=planned.meta["started_at"], status=status,
                  specs=planned.paths, finished_at=results["finished_at"],
                  summary=results["summary"], suite=planned.meta.get("suite"),
                  models=[row_label(m) for m in results["models"]] or None,
                  by_agent=by_agent(results["models"]) or None)
    extra = [f for f in options.formats if f != "json"]
    if extra:
        results["reports"] = [str(p) for p in write_reports(store.dir, results, extra)]
    if interrupted:
        raise KeyboardInterrupt
    return results


def _rows_ahead(planned: Planned, done: dict[str, TrialRecord],
                on_result: Callable[[TrialRecord], None]
                ) -> tuple[Callable[[TrialRecord], None], RowsAhead | None]:
    """A fresh run's tasks rows of results.json made as each task's last trial is stored,
    not all at the end (scoring.RowsAhead): `on_result` with that added, and the rows."""
    if done:
        return on_result, None
    store = planned.store
    ahead = RowsAhead(((t.id, t.task_id) for t in planned.trials), planned.tasks)
    return _each(on_result, lambda r: ahead.stored(r["id"], r["task_id"], store.kept)), ahead


def _otlp_sender(planned: Planned) -> Any:
    from proctor.report.otlp import RunSender

    assert planned.options.otlp_endpoint
    return RunSender(planned.options.otlp_endpoint, planned.store.dir, planned.meta)


def _each(*calls: Callable[[TrialRecord], None]) -> Callable[[TrialRecord], None]:
    def call(result: TrialRecord) -> None:
        for c in calls:
            c(result)
    return call


class RunBudget:
    """--max-cost: the run's recorded cost (its stored trials' and each trial's as it ends)
    against its budget. Once reached, no trial starts; the ones running finish."""

    def __init__(self, max_cost: float | None, kept: dict[str, TrialRecord]):
        self.max_cost = max_cost
        self.costs = {k: r["cost_usd"] or 0.0 for k, r in kept.items()}

    def record(self, result: TrialRecord) -> None:
        self.costs[result["id"]] = result["cost_usd"] or 0.0  # a re-run replaces its earlier cost

    def reached(self) -> bool:
        return self.max_cost is not None and sum(self.costs.values()) >= self.max_cost - 1e-12


async def _execute(trials: list[Trial], planned: Planned,
                   on_result: Callable[[TrialRecord], None],
                   spend: RunBudget | None = None,
                   rate_limit: dict[str, Any] | None = None) -> None:
    """Run the trials, `workers` at once; `rate_limit` receives what the model-call limiter
    of each endpoint did (providers/limiter.py), shared by every trial on every node."""
    from proctor.providers import clients, limiter

    use_fast_child_watcher()
    loop = asyncio.get_running_loop()
    main = asyncio.current_task()
    assert main is not None  # called from a task (asyncio.run's)
    loop.add_signal_handler(signal.SIGTERM, main.cancel)
    store, options = planned.store, planned.options
    executor: Executor | None = None
    workers = min(_concurrency(planned), len(trials)) or 1
    calls = limiter.LocalLimiter()  # this run's, apart from any earlier run in this process
    previous, previous_clients = limiter.install(calls), clients.install(clients.Clients())
    try:
        executor = await EXECUTORS.get(options.executor).open(Launch(
            options=options, run_id=store.run_id, run_dir=store.dir, trial_dir=store.trial_dir,
            tasks=planned.tasks, trials=trials, workers=workers,
            connected=planned.connected))
        run_one = executor.run
        queue = iter(trials)
        # report.html's share of each trajectory, prepared as each trial ends (reports then
        # only copy it; report/trajectory.py); a run without html leaves it to its first.
        digest = None
        if "html" in options.formats:
            from proctor.report import trajectory

            digest = trajectory.digest

        async def worker() -> None:
            for trial in queue:
                if spend is not None and spend.reached():
                    continue  # never started: summary.not_run
                task = planned.tasks[trial.task_id]
                try:
                    result = await run_one(trial, task)
                except Exception as e:  # one trial's failure stays in that trial
                    result = result_of_failure(trial, task, e)
                if spend is not None:
                    spend.record(result)
                _store(store, result, trial, task, on_result)
                if digest is not None:  # a digest that fails is made again by the report
                    with contextlib.suppress(Exception):
                        await asyncio.to_thread(digest, store.trial_dir(trial.id))

        async with asyncio.TaskGroup() as group:
            for _ in range(workers):
                group.create_task(worker())
        if rate_limit is not None:
            rate_limit.update(await executor.rate_limits())
    finally:
        limiter.install(previous)
        await clients.restore(previous_clients)  # the run's SDK clients (clients.py) closed
        loop.remove_signal_handler(signal.SIGTERM)
        if executor is not None:
            await executor.close()


def _store(store: RunStore, result: TrialRecord, trial: Trial, task: TaskDef,
           on_result: Callable[[TrialRecord], None]) -> None:
    """Append a finished trial; if that fails (a result the store cannot hold), the trial is
    stored as `error` with the cause, and the run goes on."""
    try:
        store.append(result)
    except Exception as e:
        result = error_result(trial, task, f"internal error: could not store the result: {e!r}")
        try:
            store.append(result)
        except Exception as again:
            print(f"proctor: could not store trial {trial.id}: {again!r}", file=sys.stderr)
    try:
        on_result(result)
    except Exception as e:
        print(f"proctor: could not report trial {trial.id}: {e!r}", file=sys.stderr)


def build_results(planned: Planned, finished: dict[str, TrialRecord],
                  interrupted: bool = False, max_cost: float | None = None,
                  rate_limit: dict[str, Any] | None = None,
                  ahead: RowsAhead | None = None) -> RunResults:
    trials = [finished[t.id] for t in planned.trials if t.id in finished]
    scored = summarize(trials, planned.tasks.values(), ahead)
    missing = len(planned.trials) - len(trials)
    if missing and not interrupted:
        scored["exit_code"] = 1
    # Planned trials without a result: a budget reached, or an interruption (SPEC §5).
    scored["summary"]["not_run"] = [t.id for t in planned.trials if t.id not in finished]
    if max_cost is not None:
        known = [t["cost_usd"] for t in trials if t["cost_usd"] is not None]
        scored["summary"]["budget"] = {"max_cost_usd": max_cost,
                                       "cost_usd": round(sum(known), 6),
                                       "unknown_cost_trials": len(trials) - len(known)}
    if rate_limit:  # model calls over the network: each endpoint's limit, what it did
        scored["summary"]["rate_limit"] = rate_limit
    return {
        "schema_version": SCHEMA_VERSION,
        "run_id": planned.store.run_id,
        "started_at": planned.meta["started_at"],
        "finished_at": iso(),
        "complete": missing == 0,
        "interrupted": interrupted,
        "summary": scored["summary"],
        "trials": trials,
        "tasks": scored["tasks"],
        "models": scored["models"],
        "help_modes": scored["help_modes"],
        # Why an agent ran fewer trials than the suite's help modes (oracle, nop).
        "notes": unprompted_notes(list(planned.tasks.values()), planned.options),
        "exit_code": scored["exit_code"],
        "isolation": planned.meta.get("isolation") or {"isolated": True, "note": ""},
    }


def _concurrency(planned: Planned) -> int:
    if planned.options.concurrency:
        return planned.options.concurrency
    given = [t.concurrency for t in planned.tasks.values() if t.concurrency]
    return max(given) if given else 3


def _progress(total: int, done: int, options: RunOptions, since: float | None = None) -> Progress:
    kind = None
    if options.purpose == "check":  # `proctor check`: its tasks, or its attacks, one by one
        kind = (Kind("check: attacks", "attack trials", True,
                     {"pass": "won", "fail": "contained", "error": "contained"})
                if options.agent == "attack" else Kind(f"check: {options.agent}", "tasks", True))
    return Progress(total, done, quiet=options.quiet, since=since, kind=kind)




