"""A run planned: everything that can fail on bad input, before anything runs (exit 2).

The specs loaded and selected, the trials planned, API keys, the backend, the agents' tools
and the executor checked, every image made ready, and run.json written (or read back, for
`--resume`).
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from proctor import __version__
from proctor.clipath import check_clis
from proctor.errors import UsageError
from proctor.executors import EXECUTORS
from proctor.fieldwise import Fieldwise
from proctor.inputs import check_unchanged, fingerprint, referenced, suite_identity
from proctor.model import EXTERNAL_AGENTS, RunOptions, StepDef, TaskDef, Trial
from proctor.plan import plan, select
from proctor.providers import MODEL_AGENT_TYPES, preflight_run
from proctor.results import SCHEMA_VERSION, RunMeta
from proctor.sandbox import BACKENDS, capabilities, with_capability
from proctor.sandbox.trace import tracer
from proctor.spec.load import load_specs
from proctor.store import RunStore, iso
from proctor.trial.provision import host_env

# Options a resumed run may change; everything else comes from the interrupted run.
_RESUME_OVERRIDES = ("concurrency", "quiet", "formats", "keep", "ray_address", "max_cost",
                     "otlp_endpoint")


@dataclass(eq=False, repr=False)
class Planned(Fieldwise):
    """A run ready to start: its store, tasks, trials and options."""
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
        store, meta, options = _resumed(options)
        paths = paths or meta["paths"]
    if not paths:
        raise UsageError("no specs given: proctor run PATH... (files or directories of *.yaml)")
    loaded = load_specs(paths)
    for w in loaded.warnings if warn else ():
        if w.moot_with != options.backend:  # e.g. "needs --backend docker" on docker
            print(w, file=sys.stderr)
    tasks = select(loaded.tasks, options)
    if not tasks:
        raise UsageError(_nothing_selected(options))
    _scale_timeouts(tasks, options.config.timeout_multiplier)
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
        meta = _new_meta(store.run_id, began, paths, options, loaded.sources, by_id,
                         versions={**_versions(), **agent_versions, **clis}, notes=notes,
                         isolated=isolated)
        store.write_meta(meta)
    return Planned(store, by_id, trials, options, paths, meta, connected, t0)


def _resumed(options: RunOptions) -> tuple[RunStore, RunMeta, RunOptions]:
    """--resume: the interrupted run's store and run.json, after what it left behind is
    swept and its inputs are found unchanged; its options, but for those a resume may
    change (_RESUME_OVERRIDES)."""
    from proctor.janitor import sweep  # --resume's only

    assert options.resume
    store = RunStore.open(options.resume)
    meta = store.read_meta()
    sweep(store.run_id)  # what a killed run left behind: processes, temp dirs
    check_unchanged(meta.get("inputs", {}))
    stored = RunOptions(**{**asdict(RunOptions()), **meta.get("options", {})})
    for name in _RESUME_OVERRIDES:
        if getattr(options, name) not in (None, False, ["json"]):
            setattr(stored, name, getattr(options, name))
    stored.config, stored.resume = options.config, options.resume
    stored.retry_errors = options.retry_errors
    return store, meta, stored


def _new_meta(run_id: str, began: str, paths: list[str], options: RunOptions,
              sources: list[str], tasks: dict[str, TaskDef], *, versions: dict[str, str],
              notes: list[str], isolated: bool) -> RunMeta:
    """A new run's run.json."""
    about = _about(tasks.values())
    suite = suite_identity(sources, [*(f"task={t}" for t in options.tasks),
                                     *(f"category={c}" for c in options.categories)])
    if names := [str(a["display_name"]) for a in about if a.get("display_name")]:
        suite["name"] = ", ".join(dict.fromkeys(names))  # what people call it
    return {"schema_version": SCHEMA_VERSION,
            "run_id": run_id, "started_at": began, "trial_ids": "padded",
            "paths": [str(Path(p).resolve()) for p in paths],
            "options": _stored_options(options),
            "versions": versions,
            "about": about,
            "notes": notes,
            "isolation": {"isolated": isolated, "backend": options.backend,
                          "note": "" if isolated else NOT_ISOLATED},
            "inputs": fingerprint([*sources, *referenced(tasks.values(), options.models)]),
            "suite": suite,
            "purpose": options.purpose,
            "host": {"name": os.uname().nodename, "cpus": os.cpu_count(),
                     "platform": sys.platform}}


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
    local = options.agent or options.config.stand_in_agent or "llm"
    for task in tasks:
        if task.agent.hosted:
            task.agent.type = local
            by_kind.setdefault(task.agent.hosted, []).append(task.id)
    why = ("--agent" if options.agent else "proctor.toml's stand_in_agent"
           if options.config.stand_in_agent else "the default; --agent picks another")
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
