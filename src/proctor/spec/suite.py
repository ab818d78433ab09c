"""The suite dialect (a `cli-bench.yaml`): models, and one TaskDef per task."""

from __future__ import annotations

import os
from collections.abc import Collection
from typing import Any, Literal

from pydantic import Field, ValidationError, field_validator

from proctor import model
from proctor.durations import Seconds
from proctor.model import AgentDef, CheckDef, TaskDef
from proctor.spec import plain
from proctor.spec.base import EnvMap, Limits, SpecModel, valid_regexes
from proctor.spec.checks import assertion
from proctor.spec.context import LoadContext
from proctor.spec.diagnostics import describe
from proctor.spec.includes import TaskSource, expand
from proctor.spec.plain import Plain
from proctor.spec.refs import check_refs
from proctor.spec.services import Service, check_names, service_defs
from proctor.spec.yamlpos import Doc

NO_NAMES: dict[str, Collection[str] | None] = {"secrets": None, "params": None}  # suites declare neither


class Thresholds(SpecModel):
    """Pass-rate targets per model, in percent (0–100). A model meets its threshold when
    pass rate × 100 ≥ max(0, threshold − tolerance); a model with no threshold is not enforced."""

    default: float | None = Field(None, ge=0, le=100, description="Threshold for every model "
                                  "without its own entry, in percent.")
    models: dict[str, float] = Field({}, description="Per-model thresholds in "
                                     "percent, keyed `provider/model`; they override `default`.")
    tolerance: float = Field(0, ge=0, le=100, description="Percentage points a model may fall short.")
    behavior: Literal["error", "informational"] = Field(
        "error", description="`error`: a missed threshold makes `proctor run` exit 1; "
        "`informational`: it is only reported."
    )

    @field_validator("models")
    @classmethod
    def _percentages(cls, v: dict[str, float]) -> dict[str, float]:
        for name, pct in v.items():
            if not 0 <= pct <= 100:
                raise ValueError(f"threshold for {name!r} must be a percentage 0–100 (got {pct})")
        return v


class SuiteTask(SpecModel):
    """One task: what the agent is asked to do, and the assertions that decide whether it did."""

    id: str = Field(min_length=1, description="Unique task id (used in trial ids and reports).")
    intent: str = Field(min_length=1, description="What the agent is asked to do, in plain words.")
    assert_: list[Any] = Field(
        alias="assert", min_length=1,
        description="Assertions, all of which must pass: `- TYPE: value` or `- TYPE: {fields}`.",
    )
    setup: list[str] = Field([], description="Shell commands run before the "
                             "agent, after the suite's `setup`.")
    max_turns: int = Field(5, ge=1, le=20, description="Tool rounds the agent may take.")
    limits: Limits | None = Field(None, description="Limits that stop the agent, over the "
                                  "suite's `limits` key by key.")
    difficulty: Literal["easy", "medium", "hard"] | None = Field(None, description="For reports.")
    category: str | None = Field(None, description="Group for reports and `--category`.")
    repeat: int | None = Field(None, ge=1, le=100, description="Trials per model and help mode "
                               "(default: the suite's `repeat`).")
    env: EnvMap = Field({}, description="Environment variables, over the suite's "
                        "`env`; `{{workdir}}` expands.")
    timeout: Seconds = Field(300, gt=0, description="Seconds (or 30s, 5m, 1h) the agent may take.")
    solution: list[str] = Field([], description="Shell commands that solve the "
                                "task: what the `oracle` agent runs.")
    ignore_commands: list[str] = Field([], description="Regexes: commands matching one are "
                                       "not agent commands (`ran`, `not_ran`, `run_count` skip "
                                       "them; the trace keeps them), added to the suite's.")

    @field_validator("ignore_commands")
    @classmethod
    def _regexes(cls, v: list[str]) -> list[str]:
        return valid_regexes(v)


class Suite(SpecModel):
    """A CLI benchmark: can agents use this CLI? Every task becomes one or more trials."""

    cli: str = Field(min_length=1, description="The CLI under test (its name, as run in a shell).")
    display_name: str | None = Field(None, description="The CLI's name as people write it "
                                     "(shown in reports and `proctor view`).")
    category: str | None = Field(None, description="What kind of CLI this is (shown in "
                                 "reports); a task's own `category` groups tasks.")
    website_url: str | None = Field(None, description="The CLI's home page (linked in reports).")
    github_url: str | None = Field(None, description="The CLI's source repository (linked in "
                                   "reports).")
    version_command: str | None = Field(None, description="Command printing the CLI's version, "
                                        "recorded in run.json.")
    providers: list[str] = Field([], description="Models to run, as "
                                 "`provider/model` (default: the configured model).")
    help_modes: list[Literal["injected", "discoverable", "none"]] = Field(
        ["injected"], min_length=1,
        description="How the agent learns the CLI: `injected` (its --help text, where the agent "
        "reads instructions: the system prompt for `llm`), `discoverable` (told to run --help), "
        "`none`. Each mode is a separate trial, for every agent that takes a prompt.",
    )
    system_prompt: str | None = Field(None, description="Extra text for the agent's system prompt "
                                      "(or where the agent reads instructions).")
    concurrency: int = Field(3, ge=1, le=1024, description="Trials at once (`--concurrency` overrides).")
    workdir: str | None = Field(None, description="Fixed working directory (relative to the spec "
                                "file) instead of a fresh temp dir per trial.")
    repeat: int = Field(1, ge=1, le=100, description="Trials per task, model and help mode.")
    thresholds: Thresholds | None = Field(None, description="Pass-rate targets (percent).")
    limits: Limits | None = Field(None, description="Limits that stop the agent, for every "
                                  "task (a task's `limits` override them key by key).")
    env: EnvMap = Field({}, description="Environment variables for every task; "
                        "`{{workdir}}` expands.")
    setup: list[str] = Field([], description="Shell commands run before every task.")
    ignore_commands: list[str] = Field([], description="Regexes: commands matching one are "
                                       "not agent commands (`ran`, `not_ran`, `run_count` skip "
                                       "them; the trace keeps them); for every task.")
    scaffold: str | None = Field(None, description="Directory (relative to the spec file) copied "
                                 "into each trial's workdir.")
    redact_env: list[str] = Field([], description="Environment variables whose "
                                  "values are redacted from everything proctor writes.")
    redact_patterns: list[str] = Field([], description="Regular expressions "
                                       "redacted from everything proctor writes.")
    upload: Literal["auto", "never", "on_failure", "always"] | None = Field(
        None, description="Accepted for cli-bench compatibility; proctor never uploads results "
        "(they stay in the run directory), and says so when this is set."
    )
    services: list[Service] = Field([], description="Backing services for "
                                    "every task (see Service).")
    tasks: list[Any] = Field(min_length=1, description="Tasks (see SuiteTask), or `file://GLOB` "
                             "strings naming YAML files that each hold a list of tasks.")

    @field_validator("providers")
    @classmethod
    def _providers(cls, v: list[str]) -> list[str]:
        for p in v:
            if "/" not in p.strip("/"):
                raise ValueError(f"provider {p!r} must be written provider/model, e.g. openai/gpt-4.1")
        return v

    @field_validator("help_modes")
    @classmethod
    def _unique_modes(cls, v: list[str]) -> list[str]:
        if len(set(v)) != len(v):
            raise ValueError("each help mode may be listed once")
        return v

    @field_validator("redact_patterns", "ignore_commands")
    @classmethod
    def _regexes(cls, v: list[str]) -> list[str]:
        return valid_regexes(v)


def load_suite(loader: LoadContext, doc: Doc) -> list[TaskDef]:
    issues, data = loader.issues, doc.data
    suite: Suite | Plain | None = plain.suite(data)  # the model only for what it cannot read
    if suite is None:
        try:
            suite = Suite.model_validate(data)
        except ValidationError as e:
            issues.validation(doc, (), e, Suite)
    check_names(issues, doc, data.get("services"), ("services",))
    check_refs(issues, doc, {k: v for k, v in data.items() if k != "tasks"}, (), NO_NAMES)
    _warnings(loader, doc, data)
    # Resolved once, against the suite file (tasks may come from included files elsewhere).
    shared = {
        "services": service_defs(issues, doc, data.get("services"), ("services",)),
        "scaffold": _scaffold(loader, doc, data.get("scaffold")),
        "workdir": _abs(doc, suite.workdir) if suite else None,
        # One object for the whole suite: a model's threshold is judged over all its trials
        # of this suite (SPEC §2), not task by task.
        "thresholds": _thresholds(suite, doc),
    }
    entries = data.get("tasks")
    sources = expand(issues, loader.open_doc, doc, entries, ("tasks",)) if isinstance(entries, list) else []
    tasks = []
    for src in sources:
        task = _task(loader, src)
        if task is not None and suite is not None:
            tasks.append(_task_def(suite, *task, src, shared))
    return tasks


def _task(loader: LoadContext, src: TaskSource) -> tuple[SuiteTask | Plain, list[CheckDef]] | None:
    issues, raw, doc = loader.issues, src.data, src.doc
    if not isinstance(raw, dict):
        issues.error(doc, src.path, "a task is a mapping (id, intent, assert) or a `file://GLOB` "
                     f"include; got {describe(raw)}")
        return None
    if isinstance(raw.get("id"), (str, int)):  # `id: 42` is the id "42"
        loader.claim_id(str(raw["id"]), doc, (*src.path, "id"))
    task: SuiteTask | Plain | None = plain.task(raw)
    if task is None:
        try:
            task = SuiteTask.model_validate(raw)
        except ValidationError as e:
            issues.validation(doc, src.path, e, SuiteTask)
    checks = []
    entries = raw.get("assert")
    for j, entry in enumerate(entries if isinstance(entries, list) else []):
        found = assertion(issues, doc, (*src.path, "assert", j), entry)
        if found is not None:
            checks.append(CheckDef(name=f"{found[0]}#{j}", type=found[0], config=found[1]))
    check_refs(issues, doc, raw, src.path, NO_NAMES)
    if task is None or len(checks) != len(task.assert_):
        return None
    return task, checks


def _task_def(suite: Suite | Plain, task: SuiteTask | Plain, checks: list[CheckDef], src: TaskSource,
              shared: dict[str, Any]) -> TaskDef:
    return TaskDef(
        id=task.id, dialect="suite", source=src.doc.abspath, base_dir=src.doc.base_dir,
        prompt=task.intent,
        agent=AgentDef(type="llm", max_turns=task.max_turns, timeout=task.timeout,
                       ignore_commands=[*suite.ignore_commands, *task.ignore_commands],
                       limits=plain.limits_def(suite.limits, task.limits)),
        checks=checks, category=task.category, difficulty=task.difficulty,
        cli=suite.cli, version_command=suite.version_command, help_modes=list(suite.help_modes),
        system_prompt=suite.system_prompt, models=list(suite.providers),
        env={**suite.env, **task.env}, setup=[*suite.setup, *task.setup],
        timeout=task.timeout, solution=list(task.solution),
        repeat=task.repeat or suite.repeat,
        redact_env=list(suite.redact_env), redact_patterns=list(suite.redact_patterns),
        concurrency=suite.concurrency, about=_about(suite), **shared,
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
