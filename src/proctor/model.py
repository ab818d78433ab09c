"""The dialect-free representation every stage after loading works on.

Both spec dialects load into `TaskDef`s: "a task with a prompt, an environment, an agent and a
list of checks with weight/gate". The planner turns them into `Trial`s; executing a trial gives
a `proctor.results.TrialRecord`. All of these are plain, picklable data so an executor can ship
them to another process or machine.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypedDict

from proctor.fieldwise import Fieldwise

if TYPE_CHECKING:
    from proctor.config import ProctorConfig

Status = Literal["pass", "fail", "error"]
AgentType = str  # a name in proctor.agents.AGENTS (the spec and the CLI take only those)
EXTERNAL_AGENTS = ("claude-code", "codex", "mini-swe-agent")  # installed programs with a model
# Agents that take a prompt, so a suite's help modes apply (oracle and nop run one trial).
PROMPTED_AGENTS = ("llm", "command", *EXTERNAL_AGENTS)
MODEL_AGENT_TYPES = ("llm", *EXTERNAL_AGENTS)  # agent types whose trials call a model



@dataclass(eq=False, repr=False)
class CheckDef(Fieldwise):
    """One assertion (suite) or invariant (scenario)."""

    name: str  # invariant key, or "TYPE#INDEX" for an assertion
    type: str  # registry name, e.g. "file_contains", "sql"
    config: Any  # the validated pydantic config model of that check type
    weight: float = 1.0
    gate: bool = False
    description: str = ""

    @property
    def templated(self) -> bool:
        """Whether the config holds `{{ ... }}` placeholders to render per trial (computed
        once: trials render only the checks that need it)."""
        cached = self.__dict__.get("_templated")
        if cached is None:
            cached = self.__dict__["_templated"] = _placeholder(self.config.__dict__)
        return cached


def _placeholder(value: Any) -> bool:
    """Whether `{{` is in a text anywhere in a config's values (nested models, lists and
    mappings, keys too): what its JSON would show, without building its serializer."""
    if isinstance(value, str):
        return "{{" in value
    if isinstance(value, dict):
        return any(_placeholder(k) or _placeholder(v) for k, v in value.items())
    if isinstance(value, (list, tuple, set, frozenset)):
        return any(_placeholder(v) for v in value)
    inner = getattr(value, "__dict__", None)
    return isinstance(inner, dict) and _placeholder(inner)


@dataclass(eq=False, repr=False)
class ImageEnv(Fieldwise):
    """The image is the whole environment (a Harbor task's): commands run as a user of the
    image, in its WORKDIR, with its ENTRYPOINT, on its own writable file system, instead of
    proctor's unprivileged places. Docker backend only."""

    user: str | None = None  # agent commands' user (name or uid); None: the image's USER
    check_user: str | None = None  # the user executing checks run as; None: the image's USER
    workdir: str | None = None  # None: the image's WORKDIR (else /)


@dataclass(eq=False, repr=False)
class HealthcheckDef(Fieldwise):
    """Polled before the agent starts (Docker HEALTHCHECK semantics): `retries` consecutive
    failures after `start_period` make the trial `error`."""

    command: str
    interval: float = 5.0
    timeout: float = 30.0
    retries: int = 3
    start_period: float = 0.0
    start_interval: float = 5.0


@dataclass(eq=False, repr=False)
class StepDef(Fieldwise):
    """One step of a multi-step task: the agent works on `prompt` in the same sandbox the
    previous steps left, then the step's checks run. Steps run in order; a step scoring
    below `min_score` (a number, or per check part) stops the remaining ones."""

    name: str
    prompt: str
    checks: list[CheckDef]
    timeout: float
    solution: list[str] = field(default_factory=list)
    solution_dir: str | None = None
    uploads: list[tuple[str, str]] = field(default_factory=list)  # (host dir, path inside)
    setup: list[str] = field(default_factory=list)  # run after the uploads, before the agent
    healthcheck: HealthcheckDef | None = None
    min_score: float | dict[str, float] | None = None
    weight: float = 1.0  # its share of the task's score (0: verified, not counted)


@dataclass(eq=False, repr=False)
class ServiceDef(Fieldwise):
    """A backing service a scenario declares (a database, an HTTP mock, a container)."""
    name: str
    kind: Literal["postgres", "mysql", "http_mock", "container"]
    config: dict[str, Any]  # validated fields: image, seed, routes, record, default_response, wait_for, env, ...


@dataclass(eq=False, repr=False)
class SecretDef(Fieldwise):
    """A secret a scenario declares: its value, or one made afresh per trial."""
    name: str
    value: str | None  # resolved when the spec loads; None when generated per trial
    generated: bool = False


@dataclass(eq=False, repr=False)
class Limits(Fieldwise):
    """Limits that stop the agent (SPEC §2 "Limits"): at most `turns` model responses,
    `tokens` (input + output, every model call) and `cost_usd`. None: no limit."""

    turns: int | None = None
    tokens: int | None = None
    cost_usd: float | None = None

    def any(self) -> bool:
        return self.turns is not None or self.tokens is not None or self.cost_usd is not None


@dataclass(eq=False, repr=False)
class AgentDef(Fieldwise):
    """Which agent a task runs and its limits: type, model, command, turns, timeout."""
    type: AgentType = "llm"
    model: str | None = None
    command: str | None = None  # for type=command; may contain {{prompt}}
    max_turns: int = 5
    timeout: float = 300.0
    version: str | None = None  # external agent types: the pinned version to install
    ignore_commands: list[str] = field(default_factory=list)  # regexes: not agent commands
    # The spec named an agent that runs only on a hosted service (Keystone's `paragon`,
    # `snapshot NAME`); `type` is the local agent standing in for it.
    hosted: str | None = None
    limits: Limits = field(default_factory=Limits)


@dataclass(eq=False, repr=False)
class Thresholds(Fieldwise):
    """A suite's pass-rate thresholds: the default, per model, and what missing one means."""
    default: float | None = None  # percent, 0-100
    models: dict[str, float] = field(default_factory=dict)
    tolerance: float = 0.0
    behavior: Literal["error", "informational"] = "error"
    # The suite file that set them: a model's trials of one suite are judged together.
    suite: str = ""


# A task's blocks as the loaders write them: TypedDicts, not dataclasses, because a key left
# out means "not set" (the scenario dumps its models with exclude_none) and readers say
# `.get(key)`; and the planner and the Ray bundle copy them as plain dicts.
class TaskResources(TypedDict, total=False):
    """`resources:` of a scenario, `[environment]` of a Harbor task."""

    timeout: float  # wall seconds for the whole trial
    memory: str  # as written (`2g`); memory_bytes is what is read
    memory_bytes: int
    cpu: float  # cores
    disk: str  # as written; disk_bytes is what is read
    disk_bytes: int
    storage_bytes: int  # Harbor's storage_mb (recorded, not enforced)
    build_timeout: float  # seconds the image build may take (docker backend)


class EgressPolicy(TypedDict, total=False):
    """Where the agent may connect: `allow` hosts only under `egress: deny`."""

    egress: Literal["allow", "deny"]  # absent: allow
    allow: list[str]


class NetworkPolicy(EgressPolicy, total=False):
    """The agent's egress policy, and the checks' when it differs (a Harbor verifier's)."""

    checks: EgressPolicy


class ForbiddenRules(TypedDict, total=False):
    """A scenario's `forbidden:` (trial/forbidden.py judges each rule set here)."""

    file_writes_outside: list[str]
    http_except: list[str]
    secrets_in_logs: Literal["deny"]
    db_writes_outside: list[str]


@dataclass(eq=False, repr=False)
class TaskDef(Fieldwise):
    """One task of any dialect, as loaded: what the agent is asked, where, and how it is judged."""
    id: str
    dialect: Literal["suite", "scenario", "harbor"]
    source: str  # path of the spec file this came from
    base_dir: str  # directory relative paths (scaffold, scripts, seeds) resolve against
    prompt: str  # suite intent or scenario task.prompt; may hold {{ params.X }}
    agent: AgentDef
    checks: list[CheckDef]
    description: str = ""
    category: str | None = None
    difficulty: str | None = None
    # LLM agent context (suite dialect)
    cli: str | None = None
    version_command: str | None = None
    help_modes: list[str] = field(default_factory=lambda: ["injected"])
    system_prompt: str | None = None
    models: list[str] = field(default_factory=list)  # providers; empty = configured default
    # environment
    env: dict[str, str] = field(default_factory=dict)  # suite env, then task env, merged
    setup: list[str] = field(default_factory=list)  # shell commands run before the agent
    files: dict[str, str] = field(default_factory=dict)  # path -> content written before setup
    packages: list[str] = field(default_factory=list)
    scaffold: str | None = None  # directory copied into the workdir
    workdir: str | None = None  # fixed workdir instead of a fresh temp dir
    base_image: str | None = None
    dockerfile: str | None = None  # docker backend: build the image from this (absolute path)
    resources: TaskResources = field(default_factory=TaskResources)
    network: NetworkPolicy = field(default_factory=NetworkPolicy)
    timeout: float = 300.0  # seconds for the agent
    solution: list[str] = field(default_factory=list)  # what the oracle agent runs
    services: list[ServiceDef] = field(default_factory=list)
    secrets: list[SecretDef] = field(default_factory=list)
    forbidden: ForbiddenRules = field(default_factory=ForbiddenRules)
    # trials and verdicts
    repeat: int = 1  # replicas per (model, help mode, params)
    matrix: dict[str, list[Any]] = field(default_factory=dict)
    pass_threshold: float | None = None  # None: a trial passes iff every check passed
    replica_aggregation: Literal["all", "any", "majority", "mean"] = "all"
    thresholds: Thresholds | None = None
    redact_env: list[str] = field(default_factory=list)
    redact_patterns: list[str] = field(default_factory=list)
    concurrency: int | None = None  # the suite's `concurrency`; --concurrency overrides
    # The scenario's `audit` block, kept as written: nothing reads it (proctor always records
    # commands, file writes, DB writes and HTTP calls).
    audit: dict[str, object] = field(default_factory=dict)
    # The image is the environment (Harbor): see ImageEnv. None: proctor's own places.
    image_env: ImageEnv | None = None
    uploads: list[tuple[str, str]] = field(default_factory=list)  # (host dir, path inside)
    healthcheck: HealthcheckDef | None = None  # before the agent, after setup
    solution_dir: str | None = None  # copied to `solution_path` by the oracle, for no one else
    solution_path: str = "/solution"
    steps: list[StepDef] = field(default_factory=list)  # a multi-step task: see StepDef
    artifacts: list[str] = field(default_factory=list)  # paths copied out after the trial
    unavailable: str | None = None  # why this task cannot run here: its trials are `error`
    # What the benchmark is, for reports (run.json "about"): display_name, category,
    # website_url, github_url of a suite; name, description of a Harbor task ...
    about: dict[str, str] = field(default_factory=dict)


@dataclass(eq=False, repr=False)
class Trial(Fieldwise):
    """One execution: a task with one model, help mode, params and replica number."""

    id: str  # deterministic, so --resume can tell which trials are done
    task_id: str
    agent: AgentType
    model: str | None
    help_mode: str | None
    replica: int
    params: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True, eq=False, repr=False)
class Process(Fieldwise):
    """A program an agent command started: one exec, anywhere in its process tree."""

    argv: list[str]
    parent: int  # index (in the command's `processes`) of the program it descends from;
    #              -1: the command's own shell
    exit_code: int | None  # how its process ended: the exit code, or -SIGNAL; None: it
    #                        exec'd another program, or had not ended
    exe: str = ""  # the file it executed (symlinks resolved), whatever its argv[0] says
    exe_lead: int = 1  # how many leading argv entries `exe` stands for: 1, or for the dynamic
    #                    loader run as a program (`ld.so [OPTIONS] PROGRAM ARGS`) all but ARGS

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"argv": self.argv, "parent": self.parent,
                             "exit_code": self.exit_code}
        if self.exe:
            d["exe"] = self.exe
        if self.exe_lead != 1:
            d["exe_lead"] = self.exe_lead
        return d

    def texts(self) -> list[str]:
        """Its argv joined with spaces, and again with argv[0] (or what `exe_lead` counts)
        replaced by the base name of the file it executed when that differs (SPEC §2:
        `exec -a`, `execv`, `fexecve`, a copy, `ld.so PROGRAM`)."""
        joined = " ".join(self.argv)
        name = posixpath.basename(self.exe)
        named = " ".join([name, *self.argv[self.exe_lead:]])
        if not name or not self.argv or named == joined:
            return [joined]
        return [joined, named]


@dataclass(eq=False, repr=False)
class CommandRecord(Fieldwise):
    """One agent command (SPEC §2): what the agent asked a shell to run in one tool call,
    the same unit for every agent. Written by proctor from outside the agent: by the tool
    loop for `llm` and `oracle` (output from proctor's own pipes), from the tracer's record
    for every other agent."""

    command: str  # the command string (a shell's `-c` string; else the argv, shell-quoted)
    argv: list[str]  # how it was started (the shell that ran `command`)
    cwd: str
    exit_code: int | None  # None: killed at the timeout, or never ended
    stdout: str
    stderr: str
    started_at: float  # unix time
    duration_s: float
    timed_out: bool = False
    truncated: bool = False  # stdout or stderr went past the output limit
    # every program it started (its whole tree: pipeline members, a script's children), in
    # order; not the shell running `command` itself
    processes: list[Process] = field(default_factory=list)
    # "agent": proctor ran it for the agent (llm, oracle); "traced": read from the tracer's
    # record of an agent program (command, claude-code, codex, mini-swe-agent);
    # "launcher": the agent program itself (in the trace only, never an agent command)
    source: Literal["agent", "traced", "launcher"] = "agent"
    tool_call_id: str | None = None  # the model's tool call it answers, when known

    def to_dict(self) -> dict[str, Any]:
        d = dict(self.__dict__)  # flat; asdict's deep copy is a hot-path cost
        d["processes"] = [p.to_dict() for p in self.processes]
        return d

    def texts(self) -> list[str]:
        """What `ran`, `not_ran` and `run_count` search: the command string, then each
        process's argv joined with spaces (also under the name of the file it executed)."""
        return [self.command, *(t for p in self.processes for t in p.texts())]


@dataclass(eq=False, repr=False)
class CheckPart(Fieldwise):
    """One of the results a check found only when it ran (a key of a reward file, a test of a
    test report): the trial lists it as check `NAME.part` in place of the check itself."""

    name: str
    passed: bool
    score: float
    message: str = ""
    share: float = 1.0  # of the check's weight (a report's tests: 0, shown, not scored)


@dataclass(eq=False, repr=False)
class CheckOutcome(Fieldwise):
    """What a check's evaluate() returns."""

    passed: bool
    score: float | None = None  # None -> 1.0 if passed else 0.0
    message: str = ""
    error: str | None = None  # the check itself could not run -> trial status error
    details: dict[str, Any] | None = None
    parts: list[CheckPart] | None = None  # results named only at run time; see CheckPart

    def final_score(self) -> float:
        if self.score is None:
            return 1.0 if self.passed else 0.0
        return min(1.0, max(0.0, float(self.score)))


def _defaults() -> ProctorConfig:
    from proctor.config import ProctorConfig  # pydantic: only what runs imports it (start-up)

    return ProctorConfig()


@dataclass(eq=False, repr=False)
class RunOptions(Fieldwise):
    """Everything `proctor run` was asked for, beyond the specs themselves."""

    agent: AgentType | None = None  # overrides every task's agent (the first of `agents`)
    # Every --agent given (repeatable): the run is agent × model × help mode × task. Empty:
    # `agent`, else proctor.toml's `agents`, else each task's own (plan.run_agents).
    agents: list[AgentType] = field(default_factory=list)
    agent_command: str | None = None  # --agent-command: the program for the command agent
    models: list[str] = field(default_factory=list)  # --model, overrides providers
    tasks: list[str] = field(default_factory=list)  # --task filters
    categories: list[str] = field(default_factory=list)  # --category filters
    repeat: int | None = None
    concurrency: int | None = None
    output_dir: str | None = None
    formats: list[str] = field(default_factory=lambda: ["json"])
    resume: str | None = None
    backend: str = "local"  # a name in proctor.sandbox.BACKENDS
    backend_chosen: bool = False  # --backend or proctor.toml said which (else tasks may pick)
    # auto: namespaces, or exit 2 saying what is missing; none: run without a boundary.
    isolation: Literal["auto", "namespaces", "none"] = "auto"
    executor: str = "local"  # a name in proctor.executors.EXECUTORS
    ray_address: str | None = None  # --ray-address (over proctor.toml's [ray] address)
    keep: bool = False  # keep trial workdirs
    quiet: bool = False
    output_limit: int = 1_000_000  # bytes kept per stream per command
    config: ProctorConfig = field(default_factory=_defaults)  # proctor.toml, typed
    # "check": `proctor check`'s scratch runs (oracle, nop): not indexed, never a trend
    purpose: Literal["run", "check"] = "run"
    # --max-cost (or proctor.toml's max_cost): no trial starts once the run's recorded cost
    # reaches it (USD); None: no budget.
    max_cost: float | None = None
    # --retry-errors (with --resume): the stored `error` trials of these error kinds run again.
    retry_errors: list[str] = field(default_factory=list)
    # --otlp-endpoint (or proctor.toml's otlp_endpoint): an OTLP/HTTP receiver each finished
    # trial's spans are sent to (report/otlp.py); None: none. Never stored in run.json.
    otlp_endpoint: str | None = None
