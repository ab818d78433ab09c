"""The suite dialect (a `cli-bench.yaml`) read into one TaskDef per task: by spec/plain.py,
or by the models (spec/suite.py) for what it is not sure of, which then word the errors. The
models and the services' module are imported only then (start-up time)."""

from __future__ import annotations

import os
from collections.abc import Callable, Collection
from typing import TYPE_CHECKING, Any

from proctor import model
from proctor.model import AgentDef, CheckDef, TaskDef
from proctor.spec import plain
from proctor.spec.checks import assertion
from proctor.spec.context import LoadContext
from proctor.spec.diagnostics import describe
from proctor.spec.includes import TaskSource, expand
from proctor.spec.plain import Plain
from proctor.spec.refs import check_refs, doc_templated
from proctor.spec.yamlpos import Doc

if TYPE_CHECKING:
    from proctor.spec.suite import Suite, SuiteTask

NO_NAMES: dict[str, Collection[str] | None] = {"secrets": None, "params": None}  # suites declare neither


def load_suite(loader: LoadContext, doc: Doc) -> list[TaskDef]:
    issues, data = loader.issues, doc.data
    suite: Suite | Plain | None = plain.suite(data)  # the model only for what it cannot read
    if suite is None:
        suite = _validated(loader, doc, (), "Suite", data)
    services = data.get("services")
    if services:  # (absent or empty: nothing to check, no ServiceDef)
        from proctor.spec.services import check_names

        check_names(issues, doc, services, ("services",))
    # A file with no `{{` anywhere (most: a suite of 1,000 tasks) is told by one look at the
    # whole; its parts (the suite's fields, each task) then have nothing to walk.
    def refs(d: Doc, part: Any, path: Any) -> None:
        if doc_templated(d):
            check_refs(issues, d, part, path, NO_NAMES)

    refs(doc, {k: v for k, v in data.items() if k != "tasks"}, ())
    _warnings(loader, doc, data)
    # Resolved once, against the suite file (tasks may come from included files elsewhere).
    shared = {
        "services": _service_defs(loader, doc, services),
        "scaffold": _scaffold(loader, doc, data.get("scaffold")),
        "workdir": _abs(doc, suite.workdir) if suite else None,
        # One object for the whole suite: a model's threshold is judged over all its trials
        # of this suite (SPEC §2), not task by task.
        "thresholds": _thresholds(suite, doc),
    }
    entries = data.get("tasks")
    sources = expand(issues, loader.open_doc, doc, entries, ("tasks",)) if isinstance(entries, list) else []
    tasks = []
    common = _common(suite) if suite is not None else {}  # no suite: no task is made
    places: dict[int, tuple[str, str]] = {}  # id(doc) -> (source, base_dir), for each file once
    for src in sources:
        task = _task(loader, src, refs)
        if task is not None and suite is not None:
            d = src.doc
            place = places.get(id(d))
            if place is None:
                place = places[id(d)] = (d.abspath, d.base_dir)
            tasks.append(_task_def(suite, *task, place, shared, common))
    return tasks


def _task(loader: LoadContext, src: TaskSource,
          refs: Callable[[Doc, Any, Any], None]) -> tuple[SuiteTask | Plain, list[CheckDef]] | None:
    issues, raw, doc = loader.issues, src.data, src.doc
    if not isinstance(raw, dict):
        issues.error(doc, src.path, "a task is a mapping (id, intent, assert) or a `file://GLOB` "
                     f"include; got {describe(raw)}")
        return None
    if isinstance(raw.get("id"), (str, int)):  # `id: 42` is the id "42"
        loader.claim_id(str(raw["id"]), doc, (*src.path, "id"))
    task: SuiteTask | Plain | None = plain.task(raw)
    if task is None:
        task = _validated(loader, doc, src.path, "SuiteTask", raw)
    checks = []
    entries = raw.get("assert")
    for j, entry in enumerate(entries if isinstance(entries, list) else []):
        found = assertion(issues, doc, (*src.path, "assert", j), entry)
        if found is not None:
            checks.append(CheckDef(name=f"{found[0]}#{j}", type=found[0], config=found[1]))
    refs(doc, raw, src.path)
    if task is None or len(checks) != len(task.assert_):
        return None
    return task, checks


def _validated(loader: LoadContext, doc: Doc, path: Any, name: str, data: Any) -> Any:
    """`data` validated by the model `name` of spec/suite.py, or None after reporting why not."""
    from pydantic import ValidationError

    from proctor.spec import suite

    cls = getattr(suite, name)
    try:
        return cls.model_validate(data)
    except ValidationError as e:
        loader.issues.validation(doc, path, e, cls)
        return None


def _service_defs(loader: LoadContext, doc: Doc, services: Any) -> list[model.ServiceDef]:
    if not services:
        return []
    from proctor.spec.services import service_defs

    return service_defs(loader.issues, doc, services, ("services",))


def _common(suite: Suite | Plain) -> dict[str, Any]:
    """What every task of the suite takes from it, worked out once (each task copies the
    lists and dicts it is given: no two TaskDefs share a mutable value)."""
    return {"limits": plain.limits_given(suite.limits), "about": _about(suite)}


def _task_def(suite: Suite | Plain, task: SuiteTask | Plain, checks: list[CheckDef],
              place: tuple[str, str], shared: dict[str, Any], common: dict[str, Any]) -> TaskDef:
    return TaskDef(
        id=task.id, dialect="suite", source=place[0], base_dir=place[1],
        prompt=task.intent,
        agent=AgentDef(type="llm", max_turns=task.max_turns, timeout=task.timeout,
                       ignore_commands=[*suite.ignore_commands, *task.ignore_commands],
                       limits=plain.limits_over(common["limits"], task.limits)),
        checks=checks, category=task.category, difficulty=task.difficulty,
        cli=suite.cli, version_command=suite.version_command, help_modes=list(suite.help_modes),
        system_prompt=suite.system_prompt, models=list(suite.providers),
        env={**suite.env, **task.env}, setup=[*suite.setup, *task.setup],
        timeout=task.timeout, solution=list(task.solution),
        repeat=task.repeat or suite.repeat,
        redact_env=list(suite.redact_env), redact_patterns=list(suite.redact_patterns),
        concurrency=suite.concurrency, about=dict(common["about"]), **shared,
    )


def _thresholds(suite: Suite | Plain | None, doc: Doc) -> model.Thresholds | None:
    t = suite.thresholds if suite else None
    if t is None:
        return None
    return model.Thresholds(t.default, dict(t.models), t.tolerance, t.behavior, suite=doc.abspath)


def _about(suite: Suite | Plain) -> dict[str, str]:
    fields = {"display_name": suite.display_name, "category": suite.category,
              "website_url": suite.website_url, "github_url": suite.github_url}
    return {"cli": suite.cli, **{k: v for k, v in fields.items() if v}}


def _abs(doc: Doc, path: str | None) -> str | None:
    if path is None or "{{" in path:
        return path
    return os.path.normpath(os.path.join(doc.base_dir, os.path.expanduser(path)))


def _scaffold(loader: LoadContext, doc: Doc, scaffold: Any) -> str | None:
    if not isinstance(scaffold, str):
        return None  # absent, or reported by the Suite model
    path = _abs(doc, scaffold)
    if path is not None and not os.path.isdir(path):
        loader.issues.error(doc, ("scaffold",), f"scaffold directory {scaffold!r} not found "
                            f"(relative to {doc.base_dir})")
    return path


def _warnings(loader: LoadContext, doc: Doc, data: dict[str, Any]) -> None:
    issues = loader.issues
    if data.get("upload") in ("auto", "on_failure", "always"):  # never: as it says
        issues.warn(doc, ("upload",), f"proctor uploads nothing (`upload: {data['upload']}` "
                    "is accepted and has no effect); results stay in the run directory")
    t = data.get("thresholds")
    if isinstance(t, dict):
        values = [t.get("default"), *(t.get("models") or {}).values()]
        for v in values:
            if isinstance(v, (int, float)) and not isinstance(v, bool) and 0 < v < 1:
                issues.warn(doc, ("thresholds",), f"thresholds are percentages (0–100): {v:g} "
                            f"means {v:g}%; write {v * 100:g} for {v * 100:g}%")
                break
        providers = data.get("providers")
        if isinstance(providers, list) and isinstance(t.get("models"), dict):
            for model in t["models"]:
                if model not in providers:
                    issues.warn(doc, ("thresholds", "models", model), f"{model!r} is not in "
                                "providers; this threshold applies only if you pass --model "
                                f"{model}", key=True)
