"""`proctor run`: load → plan → execute trials concurrently → score → store → report.

Finished trials are on disk the moment they finish. On Ctrl-C (or SIGTERM) running trials are
cancelled and cleaned up, services stopped, the temp root removed, and `results.json` written
for what finished; `--resume RUN_DIR` runs the rest.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, cast

from proctor import __version__
from proctor.clipath import check_clis
from proctor.errors import UsageError
from proctor.executors import EXECUTORS, Executor, Launch, infra_error, result_of_failure
from proctor.inputs import check_unchanged, fingerprint, referenced, suite_identity
from proctor.janitor import sweep
from proctor.model import EXTERNAL_AGENTS, RunOptions, StepDef, TaskDef, Trial, TrialResult
from proctor.plan import plan, select, unprompted_notes
from proctor.proc import use_fast_child_watcher
from proctor.providers import MODEL_AGENT_TYPES, preflight_run
from proctor.report import write_reports
from proctor.report.progress import Kind, Progress
from proctor.results import SCHEMA_VERSION, RunMeta, RunResults, TrialRecord
from proctor.sandbox import BACKENDS, capabilities, with_capability
from proctor.sandbox.trace import tracer
from proctor.scoring import summarize
from proctor.spec.load import load_specs
from proctor.store import RunStore, by_agent, index_run, iso, shown
from proctor.text import agent_model, row_label
from proctor.trial.trial import error_result, host_env

# Options a resumed run may change; everything else comes from the interrupted run.
_RESUME_OVERRIDES = ("concurrency", "quiet", "formats", "keep", "ray_address", "max_cost",
                     "otlp_endpoint")


@dataclass
class Planned:
    store: RunStore
    tasks: dict[str, TaskDef]
    trials: list[Trial]
    options: RunOptions
    paths: list[str]
    meta: RunMeta
    connected: bool = False  # the executor's `connect` started what it stops (a private Ray)
    t0: float = 0.0  # monotonic time the run began (its image builds are part of its time)


def prepare(paths: list[str], options: RunOptions, *, warn: bool = True) -> Planned:
    """Everything that can fail on bad input, before anything runs (exit 2)."""
    t0, began = time.monotonic(), iso()  # image builds below count in the run's time
    meta: RunMeta = {}
    store: RunStore | None = None
    if options.resume:
        store = RunStore.open(options.resume)
        meta = store.read_meta()
        sweep(store.run_id)  # what a killed run left behind: processes, temp dirs
        check_unchanged(meta.get("inputs", {}))
        paths = paths or meta["paths"]
        stored = RunOptions(**{**asdict(RunOptions()), **meta.get("options", {})})
        for name in _RESUME_OVERRIDES:
            if getattr(options, name) not in (None, False, ["json"]):
                setattr(stored, name, getattr(options, name))
        stored.config, stored.resume = options.config, options.resume
        stored.retry_errors = options.retry_errors
        options = stored
    if not paths:
        raise UsageError("no specs given: proctor run PATH... (files or directories of *.yaml)")
    loaded = load_specs(paths)
    for w in loaded.warnings if warn else ():
        if w.moot_with != options.backend:  # e.g. "needs --backend docker" on docker
            print(w, file=sys.stderr)
    tasks = select(loaded.tasks, options)
    if not tasks:
        raise UsageError(_nothing_selected(options))
    _scale_timeouts(tasks, float(options.config.get("timeout_multiplier") or 1.0))
    notes = _stand_in(tasks, options)
    for note in notes if warn and not options.quiet else ():
        print(f"proctor: note: {note}", file=sys.stderr)
    by_id = {t.id: t for t in tasks}  # the loader guarantees unique ids across files
    # Runs written before replica ids were zero-padded have no "trial_ids" in run.json.
    _backend_for(tasks, options)
    trials = plan(tasks, options, pad=not meta or meta.get("trial_ids") == "padded")
    _preflight(trials, by_id, options)
    for note in _unpriced(trials, by_id, options) if warn and not options.quiet else ():
        print(f"proctor: warning: {note}", file=sys.stderr)
    agent_versions: dict[str, str] = {}
    if any(t.agent in EXTERNAL_AGENTS for t in trials):  # imported only then: start-up time
        from proctor.agents.external import install_agents

        agent_versions = install_agents(trials, by_id, options)
    if any(t.agent != "nop" for t in trials):
        tracer()  # agent commands are traced: built once per machine, exit 2 if it cannot be
    isolated = _preflight_backend(options)
    _containers_need_docker(by_id.values(), options)
    # docker: every task's image built or pulled before any trial
    BACKENDS.get(options.backend)().prepare(list(by_id.values()), quiet=options.quiet,
                                            config=options.config)
    # The suites' CLIs are where the agent runs (exit 2 naming where proctor looked if not);
    # version_command runs there too.
    clis = check_clis(list(by_id.values()), options, host_env(options)) if not meta else {}
    if not options.quiet:
        for note in _ignored_by_backend(by_id.values(), options):
            print(f"proctor: warning: {note}", file=sys.stderr)
    # Where trials run is reached now: a bad address is exit 2 before the run dir exists.
    connected = EXECUTORS.get(options.executor).connect(options)
    store = store or RunStore.create(options.output_dir)
    if not meta:
        about = _about(by_id.values())
        suite = suite_identity(loaded.sources, [*(f"task={t}" for t in options.tasks),
                                                *(f"category={c}" for c in options.categories)])
        if names := [str(a["display_name"]) for a in about if a.get("display_name")]:
            suite["name"] = ", ".join(dict.fromkeys(names))  # what people call it
        meta = {"schema_version": SCHEMA_VERSION,
                "run_id": store.run_id, "started_at": began, "trial_ids": "padded",
                "paths": [str(Path(p).resolve()) for p in paths],
                "options": _stored_options(options),
                "versions": {**_versions(), **agent_versions, **clis},
                "about": about,
                "notes": notes,
                "isolation": {"isolated": isolated, "backend": options.backend,
                              "note": "" if isolated else NOT_ISOLATED},
                "inputs": fingerprint([*loaded.sources,
                                       *referenced(by_id.values(), options.models)]),
                "suite": suite,
                "purpose": options.purpose,
                "host": {"name": os.uname().nodename, "cpus": os.cpu_count(),
                         "platform": sys.platform}}
        store.write_meta(meta)
    return Planned(store, by_id, trials, options, paths, meta, connected, t0)


NOT_ISOLATED = ("this run was not isolated (--isolation none): agents could read and change "
                "anything proctor's user can, checks that execute something (verify, "
                "command_exit, custom) ran unboxed as proctor's user over the agent's files, "
                "and their verdicts can be forged")


def _preflight_backend(options: RunOptions) -> bool:
    """The backend is usable before any trial runs (exit 2 otherwise); whether trials will be
    isolated."""
    isolated = bool(BACKENDS.get(options.backend)().preflight(options.isolation))
    if not isolated and not options.quiet:
        print(f"proctor: warning: {NOT_ISOLATED}", file=sys.stderr)
    return isolated


def _preflight(trials: list[Trial], tasks: dict[str, TaskDef], options: RunOptions) -> None:
    """Missing API keys, unknown providers and missing mock scripts are found before any
    trial runs (exit 2)."""
    if not any(t.agent in MODEL_AGENT_TYPES for t in trials) and not any(
            c.type == "llm_as_judge" for t in tasks.values() for c in t.checks):
        return
    preflight_run(tasks, trials, options.config)


def _unpriced(trials: list[Trial], tasks: dict[str, TaskDef], options: RunOptions) -> list[str]:
    """With a budget (--max-cost) or cost limits, the models without a price: their cost is
    unknown, which a budget counts as 0 and a cost limit never reaches; said once each."""
    from proctor.providers import model_for, price_of, resolve_model

    out: list[str] = []
    for trial in trials:
        task = tasks[trial.task_id]
        if trial.agent not in MODEL_AGENT_TYPES or not (
                options.max_cost is not None or task.agent.limits.cost_usd is not None):
            continue
        model = resolve_model(model_for(trial.model, task, options.config), options.config)
        if price_of(model, options.config) is None and not any(model in o for o in out):
            out.append(f"{model} has no price (proctor.toml [prices]): its trials' cost is "
                       "unknown, counted as 0 by --max-cost and never reaching a cost limit")
    return out


def _containers_need_docker(tasks: Any, options: RunOptions) -> None:
    """`image: X` services run only with a backend that runs containers (--backend docker,
    SPEC §3): exit 2 otherwise."""
    if capabilities(options.backend).image_services:
        return
    for t in tasks:
        for svc in t.services:
            if svc.kind == "container":
                need = " or ".join(f"--backend {n}" for n in with_capability("image_services"))
                raise UsageError(f"{t.id}: service {svc.name!r} runs image "
                                 f"{svc.config.get('image')!r}: image services need "
                                 f"{need}; the {options.backend} backend runs only postgres, "
                                 "mysql and http_mock services")


def _nothing_selected(options: RunOptions) -> str:
    filters = [f"--task {t}" for t in options.tasks] + [f"--category {c}" for c in options.categories]
    if filters:
        return f"no task matches {' '.join(filters)}"
    return "the specs hold no tasks"


def _stored_options(options: RunOptions) -> dict[str, Any]:
    d = asdict(options)
    d.pop("config", None)  # proctor.toml may hold credentials; it is re-read on resume
    d.pop("resume", None)
    d.pop("otlp_endpoint", None)  # a URL may carry a token; given again (or by proctor.toml)
    return d


def _ignored_by_backend(tasks: Any, options: RunOptions) -> list[str]:
    """Spec fields the chosen backend does not act on, said once per run, not ignored."""
    if capabilities(options.backend).installs_packages:
        return []
    named = sorted(t.id for t in tasks if t.packages or t.base_image or t.dockerfile)
    if not named:
        return []
    shown = ", ".join(named[:3]) + (f" and {len(named) - 3} more" if len(named) > 3 else "")
    need = " or ".join(f"--backend {n}" for n in with_capability("installs_packages"))
    return [f"{shown}: setup.packages / base are for {need}; the {options.backend} backend "
            "installs nothing and uses this machine's tools"]


def _scale_timeouts(tasks: list[TaskDef], factor: float) -> None:
    """proctor.toml's `timeout_multiplier`: every timeout a task sets, longer (or shorter),
    for a machine slower (or faster) than the one the benchmark was written on."""
    if factor == 1.0:
        return
    for task in tasks:
        task.timeout *= factor
        task.agent.timeout *= factor
        if task.resources.get("build_timeout"):
            task.resources["build_timeout"] *= factor
        parts: list[TaskDef | StepDef] = [task, *task.steps]
        for step in parts:
            if step is not task:
                step.timeout *= factor
            if step.healthcheck is not None:
                step.healthcheck.timeout *= factor
                step.healthcheck.retries = int(step.healthcheck.retries * factor + 0.5)
            for check in step.checks:
                check.config = check.config.scaled(factor)


def _backend_for(tasks: list[TaskDef], options: RunOptions) -> None:
    """Tasks whose image is their whole environment (Harbor's) run with a backend whose
    image can be the environment (--backend docker): chosen for them when nothing chose a
    backend, else a clear stop."""
    need = [t.id for t in tasks if t.image_env is not None]
    if not need or capabilities(options.backend).image_environment:
        return
    able = with_capability("image_environment")
    if not options.backend_chosen and len(need) == len(tasks):
        options.backend = able[0]
        if not options.quiet:
            print("proctor: note: these tasks run in their own container images: "
                  f"--backend {able[0]}", file=sys.stderr)
        return
    shown = ", ".join(need[:3]) + (f" and {len(need) - 3} more" if len(need) > 3 else "")
    raise UsageError(f"{shown}: a Harbor task runs in its own container image; run it with "
                     f"{' or '.join(f'--backend {n}' for n in able)} (the {options.backend} "
                     "backend has no images)")


def _stand_in(tasks: list[TaskDef], options: RunOptions) -> list[str]:
    """Tasks whose agent runs only on a hosted service (Keystone's paragon, snapshot) get a
    local agent: --agent, else proctor.toml's `stand_in_agent`, else llm. Said once."""
    by_kind: dict[str, list[str]] = {}
    local = options.agent or options.config.get("stand_in_agent") or "llm"
    for task in tasks:
        if task.agent.hosted:
            task.agent.type = local
            by_kind.setdefault(task.agent.hosted, []).append(task.id)
    why = ("--agent" if options.agent else "proctor.toml's stand_in_agent"
           if options.config.get("stand_in_agent") else "the default; --agent picks another")
    return [f"agent `{kind}` runs only on Keystone's hosted service; `{local}` runs here "
            f"instead ({why}): {', '.join(ids[:5])}{' ...' if len(ids) > 5 else ''}"
            for kind, ids in by_kind.items()]


def _about(tasks: Any) -> list[dict[str, str]]:
    """What the benchmarks are, each once (a suite's display_name, links ...), for reports."""
    out: list[dict[str, str]] = []
    for task in tasks:
        if task.about and task.about not in out:
            out.append(dict(task.about))
    return out


def _versions() -> dict[str, str]:
    return {"proctor": __version__, "python": sys.version.split()[0]}


def run_planned(planned: Planned) -> RunResults:
    store, options = planned.store, planned.options
    done = store.finished()
    if store.rejected:
        print(f"proctor: {store.jsonl_path}: {store.rejected} line(s) not written by this run "
              "(forged or altered) were ignored; their trials run again", file=sys.stderr)
    # An infrastructure error (a Ray node lost) says nothing about the trial: run it again;
    # so are, with --retry-errors, the errors of the kinds it names.
    retry = set(options.retry_errors)
    todo = [t for t in planned.trials if t.id not in done or infra_error(done[t.id])
            or (done[t.id].status == "error" and done[t.id].error_kind in retry)]
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
    rate_limit: dict[str, Any] = {}  # filled by _execute: each endpoint's limiter figures
    try:
        asyncio.run(_execute(todo, planned, on_result, spend, rate_limit))
    except (KeyboardInterrupt, asyncio.CancelledError):
        interrupted = True
    finally:
        progress.close()
        store.close()
    results = build_results(planned, store.finished(), interrupted=interrupted,
                            max_cost=options.max_cost, rate_limit=rate_limit)
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


def _otlp_sender(planned: Planned) -> Any:
    from proctor.report.otlp import RunSender

    assert planned.options.otlp_endpoint
    return RunSender(planned.options.otlp_endpoint, planned.store.dir, planned.meta)


def _each(*calls: Callable[[TrialResult], None]) -> Callable[[TrialResult], None]:
    def call(result: TrialResult) -> None:
        for c in calls:
            c(result)
    return call


class RunBudget:
    """--max-cost: the run's recorded cost (its stored trials' and each trial's as it ends)
    against its budget. Once reached, no trial starts; the ones running finish."""

    def __init__(self, max_cost: float | None, kept: dict[str, TrialResult]):
        self.max_cost = max_cost
        self.costs = {k: r.cost_usd or 0.0 for k, r in kept.items()}

    def record(self, result: TrialResult) -> None:
        self.costs[result.id] = result.cost_usd or 0.0  # a re-run replaces its earlier cost

    def reached(self) -> bool:
        return self.max_cost is not None and sum(self.costs.values()) >= self.max_cost - 1e-12


async def _execute(trials: list[Trial], planned: Planned,
                   on_result: Callable[[TrialResult], None],
                   spend: RunBudget | None = None,
                   rate_limit: dict[str, Any] | None = None) -> None:
    """Run the trials, `workers` at once; `rate_limit` receives what the model-call limiter
    of each endpoint did (providers/limiter.py), shared by every trial on every node."""
    from proctor.providers import limiter

    use_fast_child_watcher()
    loop = asyncio.get_running_loop()
    main = asyncio.current_task()
    assert main is not None  # called from a task (asyncio.run's)
    loop.add_signal_handler(signal.SIGTERM, main.cancel)
    store, options = planned.store, planned.options
    executor: Executor | None = None
    workers = min(_concurrency(planned), len(trials)) or 1
    calls = limiter.LocalLimiter()  # this run's, apart from any earlier run in this process
    previous = limiter.install(calls)
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
        loop.remove_signal_handler(signal.SIGTERM)
        if executor is not None:
            await executor.close()


def _store(store: RunStore, result: TrialResult, trial: Trial, task: TaskDef,
           on_result: Callable[[TrialResult], None]) -> None:
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


def build_results(planned: Planned, finished: dict[str, TrialResult],
                  interrupted: bool = False, max_cost: float | None = None,
                  rate_limit: dict[str, Any] | None = None) -> RunResults:
    trials = [finished[t.id] for t in planned.trials if t.id in finished]
    scored = summarize(trials, planned.tasks.values())
    missing = len(planned.trials) - len(trials)
    if missing and not interrupted:
        scored["exit_code"] = 1
    # Planned trials without a result: a budget reached, or an interruption (SPEC §5).
    scored["summary"]["not_run"] = [t.id for t in planned.trials if t.id not in finished]
    if max_cost is not None:
        known = [t.cost_usd for t in trials if t.cost_usd is not None]
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
        "trials": [cast(TrialRecord, t.to_dict()) for t in trials],
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


def run_main(paths: list[str], options: RunOptions) -> int:
    planned = prepare(paths, options)
    try:
        results = run_planned(planned)
    except KeyboardInterrupt:
        print(f"proctor: interrupted; finished trials are kept. Finish the run with:\n"
              f"  proctor run --resume {shown(planned.store.dir)}", file=sys.stderr)
        raise SystemExit(130) from None
    _print_outcome(planned, results)
    return results["exit_code"]


def _print_outcome(planned: Planned, results: RunResults) -> None:
    s = results["summary"]
    if not planned.options.quiet:
        try:
            from rich.console import Console

            from proctor.report.terminal import print_summary

            # Logs (CI) have no width: 120 columns keeps turns, tokens and cost in the
            # tables, unless COLUMNS says how wide the reader's window is.
            wide = sys.stdout.isatty() or os.environ.get("COLUMNS", "").isdigit()
            print_summary(results, Console(width=None if wide else 120))
        except ImportError:
            pass
    else:  # the tables end with this headline; quiet, it is the only line
        print(f"{s['passed']}/{s['trials']} passed, {s['failed']} failed, {s['errored']} "
              f"errored ({time.strftime('%H:%M:%S')})")
    print(f"run: {planned.store.dir}")
    for path in results.get("reports", []):
        print(f"report: {path}")
    for line in outcome_notes(results, shown(planned.store.dir)):
        print(line)
    if s["passed"] < s["trials"]:
        print(f"what went wrong: proctor show {shown(planned.store.dir)} --failed")


def outcome_notes(results: RunResults, run_dir: str) -> list[str]:
    """What to do next, one line each: the budget spent and how to run what it left out;
    errors that were all the infrastructure's, and how to run them again."""
    s, lines = results["summary"], []
    budget, not_run = s.get("budget"), s.get("not_run") or []
    if budget:
        lines.append(f"budget: ${budget['cost_usd']:.4f} spent of ${budget['max_cost_usd']:g}"
                     + (f"; {len(not_run)} trial(s) not run: proctor run --resume {run_dir} "
                        "--max-cost USD (a larger budget) runs them" if not_run else ""))
    kinds = [t.get("error_kind") for t in results["trials"] if t["status"] == "error"]
    if kinds and all(k == "infra" for k in kinds):
        lines.append(f"all {len(kinds)} error(s) were infrastructure failures, not the agent's: "
                     f"proctor run --resume {run_dir} --retry-errors infra runs them again")
    return lines
