"""The suite dialect (a `cli-bench.yaml`): its models (the schema, the reference and the
errors); spec/suite_load.py turns a suite into TaskDefs."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator

from proctor.durations import Seconds
from proctor.spec.base import EnvMap, Limits, SpecModel, valid_regexes
from proctor.spec.services import Service


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
