"""The run data as files hold it: `run.json` (what was asked, where, with what) and
`results.json` (SPEC §5: every trial, and the scored rows every report, `show`, `compare` and
the store read).

They are TypedDicts: the files are their JSON form, byte for byte, so a report rendered from
a file and one rendered in the run that made it see the same thing, and the type checker
holds every key a reader or writer names to its definition here. `load_results` and
`load_run_meta` validate a file's data through them (a key of the wrong type is a usage
error naming it; a key proctor does not know is kept: a newer proctor may add keys), and
`json_schema` describes them for other tools. The scorer (`proctor.scoring.summarize`) is the
only producer of the aggregate rows; reports never recompute a figure that is here.
`TrialRecord` (with `CheckRecord`, `ForbiddenRecord`) is also the engine's record of a trial:
one shape in memory, in results.jsonl and in results.json.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Mapping
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, NotRequired, TypeVar

from typing_extensions import (  # pydantic reads typing's only from 3.12
    TypedDict,
    Unpack,
    is_typeddict,
)

if TYPE_CHECKING:
    from pydantic import TypeAdapter
    from pydantic_core import SchemaValidator, ValidationError

# Written into run.json and results.json. Raised when a key changes meaning or goes away;
# new keys do not raise it (readers keep keys they do not know). A file without it was
# written before it existed, in the layout of version 1.
SCHEMA_VERSION = 1

TaskStatus = Literal["pass", "fail", "flaky", "error"]
ErrorKind = Literal["infra", "provider", "check"]  # where an `error` trial failed (SPEC §5)
LimitHit = Literal["timeout", "turns", "tokens", "cost_usd"]  # what stopped the agent
_T = TypeVar("_T")


def _open(cls: _T) -> _T:
    """pydantic's `with_config(ConfigDict(extra="allow"))`: keys added by a newer proctor are
    kept, never refused. Set by hand so that importing this module does not import pydantic
    (start-up time: `proctor runs`, `show` and `--help` need none of it)."""
    cls.__pydantic_config__ = {"extra": "allow"}  # type: ignore[attr-defined]
    return cls


@_open
class Summary(TypedDict):
    trials: int
    passed: int
    failed: int
    errored: int
    pass_rate: float  # a fraction
    not_run: NotRequired[list[str]]  # planned trials never started (a budget, an interruption)
    budget: NotRequired[dict[str, Any]]  # --max-cost: {max_cost_usd, cost_usd, unknown_cost_trials}
    # Per endpoint ("provider" or "provider@base_url"): the adaptive limit of model calls,
    # {calls, refused, waited, wait_s, max_in_flight, final_limit, lowest_limit, cap, adaptive}.
    rate_limit: NotRequired[dict[str, dict[str, Any]]]


# The rows: SPEC §5's keys are required; what proctor added since may be missing from files
# written before it was.

@_open
class Usage(TypedDict, total=False):
    """What a group of trials cost, the same figures in every report."""

    avg_turns: float
    avg_duration_s: float
    tokens: dict[str, int | None]  # {"input", "output"}, the known counts summed; None: unknown
    cost_usd: float | None  # the known costs summed; None when no trial's cost is known
    cost_per_success: float | None  # None without a known cost or without a success


@_open
class TaskRow(Usage):
    """One per task × agent/model × help mode × params: identical conditions."""

    task_id: str
    model: str | None
    agent: NotRequired[str]  # the agent under test, as the models rows name it
    help_mode: str | None
    params: dict[str, Any]
    status: TaskStatus
    verdict: NotRequired[str]  # the replicas aggregated as the task says (pass | fail)
    aggregation: NotRequired[str]  # scoring.replica_aggregation: all | any | majority | mean
    pass_rate: float
    trials: int
    passed: NotRequired[int]
    errored: NotRequired[int]
    mean_score: NotRequired[float]
    category: NotRequired[str | None]
    pass_at_k: NotRequired[dict[str, float]]  # "k" -> unbiased pass@k, k = 1 .. trials
    pass_hat_k: NotRequired[dict[str, float]]  # "k" -> pass^k: all k samples pass


@_open
class ModelRow(Usage):
    """One per agent under test (the model for `llm`, else `oracle`, `command:<program>`, …)."""

    model: str | None
    agent: str
    pass_rate: float
    ci95: list[float]
    threshold: float | None  # percent; None when no threshold applies
    met: bool | None
    trials: NotRequired[int]
    passed: NotRequired[int]
    errored: NotRequired[int]
    pass_at_k: NotRequired[dict[str, float]]  # the mean of its tasks rows', for k every row reaches
    pass_hat_k: NotRequired[dict[str, float]]


@_open
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
    """What the scorer returns: the aggregate sections of results.json."""

    summary: Summary
    tasks: list[TaskRow]
    models: list[ModelRow]
    help_modes: list[HelpModeEffect]
    exit_code: int


@_open
class Isolation(TypedDict):
    isolated: bool
    note: str
    backend: NotRequired[str]  # run.json's copy names the backend


# One trial, check and forbidden rule: the record the engine builds (`new_trial`, `new_check`,
# `new_forbidden`), scores, appends to results.jsonl and writes into results.json, and the
# record every reader gets back from the file. One declaration, no in-memory twin: a record
# is its JSON form already, so nothing converts it on the way out or in (SPEC §5's keys are
# required; the others may be missing from files written before proctor recorded them, and
# a record made by this proctor has every key, in the order declared: results.json's).

@_open
class CheckRecord(TypedDict):
    """One check of a trial."""

    name: str  # an invariant's key, or TYPE#INDEX for an assertion
    type: str
    passed: bool
    score: float
    weight: float
    gate: bool
    message: str
    error: NotRequired[str | None]  # the check itself could not run


@_open
class ForbiddenRecord(TypedDict):
    rule: str
    violated: bool
    details: str


@_open
class TrialRecord(TypedDict):
    """One trial."""

    id: str
    task_id: str
    model: NotRequired[str | None]
    help_mode: NotRequired[str | None]
    replica: NotRequired[int]
    params: NotRequired[dict[str, Any]]
    status: Literal["pass", "fail", "error"]
    composite_score: NotRequired[float]
    error: NotRequired[str | None]
    checks: NotRequired[list[CheckRecord]]
    forbidden: NotRequired[list[ForbiddenRecord]]
    reason: NotRequired[str | None]  # why it did not pass, in one line (None: it passed)
    timed_out: NotRequired[bool]  # the agent ran out of its time (task timeout)
    # What stopped the agent before it finished: "timeout", or a limit; None: it stopped by
    # itself (SPEC §5).
    limit_hit: NotRequired[LimitHit | None]
    # Where an `error` trial failed (SPEC §5; proctor.errorkinds); None for a verdict.
    error_kind: NotRequired[ErrorKind | None]
    turns: NotRequired[int]
    tokens: NotRequired[dict[str, int | None]]  # {"input", "output"}; None: not known (a command agent's)
    cost_usd: NotRequired[float | None]
    duration_s: NotRequired[float]
    agent: NotRequired[str | None]
    category: NotRequired[str | None]
    started_at: NotRequired[str | None]
    output: NotRequired[str]  # the agent's final message or output, cut
    node: NotRequired[str | None]  # where it ran under --executor ray: "HOSTNAME/NODE_ID[:8]"
    # What the agent changed that grading ran or would load (SPEC §4, §5): {"path", "change"}
    tampering: NotRequired[list[dict[str, str]]]


def _none() -> None:
    return None


# What a key not given is (zero-argument: a list or dict is new for each record). A key of
# the declaration without an entry here must be given.
_CHECK_DEFAULTS: dict[str, Callable[[], Any]] = {"error": _none}
_FORBIDDEN_DEFAULTS: dict[str, Callable[[], Any]] = {"details": str}
_TRIAL_DEFAULTS: dict[str, Callable[[], Any]] = {
    "model": _none, "help_mode": _none, "replica": int, "params": dict,
    "composite_score": float, "error": _none, "checks": list, "forbidden": list,
    "reason": _none, "timed_out": bool, "limit_hit": _none, "error_kind": _none, "turns": int,
    "tokens": lambda: {"input": 0, "output": 0}, "cost_usd": _none, "duration_s": float,
    "agent": _none, "category": _none, "started_at": _none, "output": str, "node": _none,
    "tampering": list}
_CHECK_KEYS = tuple(CheckRecord.__annotations__)
_FORBIDDEN_KEYS = tuple(ForbiddenRecord.__annotations__)
_TRIAL_KEYS = tuple(TrialRecord.__annotations__)


def _filled(keys: tuple[str, ...], defaults: Mapping[str, Callable[[], Any]],
            given: Mapping[str, Any]) -> Any:
    """Every declared key, in order: as given, else its default (KeyError: a key without
    one was not given); keys the declaration lacks are left out."""
    return {k: given[k] if k in given else defaults[k]() for k in keys}


def new_check(**given: Unpack[CheckRecord]) -> CheckRecord:
    """A check's record, every key present."""
    record: CheckRecord = _filled(_CHECK_KEYS, _CHECK_DEFAULTS, given)
    return record


def new_forbidden(**given: Unpack[ForbiddenRecord]) -> ForbiddenRecord:
    """A forbidden rule's record, every key present."""
    record: ForbiddenRecord = _filled(_FORBIDDEN_KEYS, _FORBIDDEN_DEFAULTS, given)
    return record


def new_trial(**given: Unpack[TrialRecord]) -> TrialRecord:
    """A trial's record, every key present, as the engine fills it in."""
    record: TrialRecord = _filled(_TRIAL_KEYS, _TRIAL_DEFAULTS, given)
    return record


def trial_from_line(obj: Mapping[str, Any]) -> TrialRecord:
    """A trial as results.jsonl holds it (keys sorted, perhaps from an older proctor): every
    key present, in results.json's order; a key this proctor does not know is left out.
    KeyError, TypeError: not a trial (a line torn by a kill)."""
    record: TrialRecord = _filled(_TRIAL_KEYS, _TRIAL_DEFAULTS, obj)
    record["checks"] = [_filled(_CHECK_KEYS, _CHECK_DEFAULTS, _mapping(c))
                        for c in record["checks"]]
    record["forbidden"] = [_filled(_FORBIDDEN_KEYS, _FORBIDDEN_DEFAULTS, _mapping(f))
                           for f in record["forbidden"]]
    return record


def _mapping(value: object) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise TypeError(f"not a record: {value!r}")
    return value


@_open
class RunResults(TypedDict):
    """results.json. `trials` is the only key every reader needs: a run still going is read
    from results.jsonl into this shape, its rows scored on the fly."""

    schema_version: NotRequired[int]
    run_id: NotRequired[str]
    started_at: NotRequired[str | None]
    finished_at: NotRequired[str | None]
    complete: NotRequired[bool]  # false: planned trials are missing (an interrupted run)
    interrupted: NotRequired[bool]
    summary: NotRequired[Summary]
    trials: list[TrialRecord]
    tasks: NotRequired[list[TaskRow]]
    models: NotRequired[list[ModelRow]]
    help_modes: NotRequired[list[HelpModeEffect]]
    notes: NotRequired[list[str]]  # why an agent ran fewer trials than the help modes say
    exit_code: NotRequired[int]
    isolation: NotRequired[Isolation]
    reports: NotRequired[list[str]]  # in the run's memory only: the report files it wrote


@_open
class SuiteIdentity(TypedDict, total=False):
    """What `proctor view` calls one suite (proctor.inputs.suite_identity; every key is
    written, older runs lack some)."""

    key: str  # the spec files read
    version: str  # their content and the task selection
    files: list[str]
    name: str  # for people


@_open
class RunMeta(TypedDict, total=False):
    """run.json: written when a run starts (every key below; older runs lack some), read by
    --resume, reports and `proctor view`."""

    schema_version: int
    run_id: str
    started_at: str
    trial_ids: str  # "padded": replica numbers zero-padded in trial ids
    paths: list[str]  # the spec paths the run was given, resolved
    options: dict[str, Any]  # RunOptions as asked (proctor.toml included)
    versions: dict[str, Any]  # proctor, python, agents, the suites' CLIs
    about: list[Any]  # what the benchmarks are ({display_name, ...}; reports skip the rest)
    notes: list[str]
    isolation: Isolation
    inputs: dict[str, Any]  # each input file's digest (proctor.inputs.fingerprint)
    suite: SuiteIdentity
    purpose: Literal["run", "check"]
    host: str | dict[str, Any]  # {name, cpus, platform}; older runs: a string


class InvalidRunFile(ValueError):
    """A run file whose data does not have the shape of its type; says where."""


@cache
def _adapter(kind: Literal["results", "run"]) -> TypeAdapter[Any]:
    from pydantic import TypeAdapter

    return TypeAdapter(RunResults if kind == "results" else RunMeta)


@cache
def _validator(kind: Literal["results", "run"]) -> SchemaValidator:
    """The type's validator. pydantic makes its core schema (~50 ms, and pydantic's own
    import ~50 ms more); the schema is then kept as JSON in the cache directory, keyed by
    this file's text and pydantic-core's version, so a later `report`, `show` or `compare`
    builds the validator from it with pydantic-core alone (under a millisecond). The file
    names classes of this module only: nothing in it is executed."""
    import pydantic_core

    key = hashlib.sha256(Path(__file__).read_bytes()
                         + pydantic_core.__version__.encode()).hexdigest()[:16]
    path = _cache_dir() / f"results-schema-{kind}-{key}.json"
    try:
        schema = json.loads(path.read_text(encoding="utf-8"), object_hook=_classes)
        return pydantic_core.SchemaValidator(schema)
    except (OSError, ValueError, KeyError, TypeError, pydantic_core.SchemaError):
        pass  # none yet (or unreadable): made below
    schema = _adapter(kind).core_schema
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}")
        tmp.write_text(json.dumps(schema, default=_class_name), encoding="utf-8")
        os.replace(tmp, path)
    except OSError:
        pass  # a read-only cache: the next reader makes it again
    return pydantic_core.SchemaValidator(schema)


def _cache_dir() -> Path:
    # sandbox/cache.py's cache_dir (this module sits below the sandbox layer)
    given = os.environ.get("PROCTOR_CACHE")
    if given:
        return Path(given)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "proctor"


def _class_name(value: object) -> str:
    name = str(getattr(value, "__name__", ""))
    if is_typeddict(value) and globals().get(name) is value:
        return name
    raise TypeError(f"not a type of proctor.results: {value!r}")


def _classes(obj: dict[str, Any]) -> dict[str, Any]:
    """A schema node read back: its `cls` (a TypedDict named by _class_name) this module's."""
    cls = obj.get("cls")
    if isinstance(cls, str):
        found = globals()[cls]
        if not is_typeddict(found):
            raise TypeError(f"{cls} is not one of proctor.results' types")
        obj["cls"] = found
    return obj


def json_schema(kind: Literal["results", "run"]) -> dict[str, Any]:
    """The JSON Schema of results.json or run.json."""
    title = "proctor results.json" if kind == "results" else "proctor run.json"
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", **_adapter(kind).json_schema(),
            "title": title}


def parse_results(text: str | bytes) -> RunResults:
    """results.json's text, parsed and checked against `RunResults`."""
    results: RunResults = _parse("results", text)
    return results


def parse_run_meta(text: str | bytes) -> RunMeta:
    """run.json's text, parsed and checked against `RunMeta`."""
    meta: RunMeta = _parse("run", text)
    return meta


def load_results(data: object) -> RunResults:
    """results.json's data (already parsed: a run still going, read from results.jsonl),
    checked against `RunResults`."""
    results: RunResults = _validate("results", data)
    return results


def _parse(kind: Literal["results", "run"], text: str | bytes) -> Any:
    from pydantic_core import ValidationError

    try:  # parsed and checked in one pass: no slower than json.loads alone
        return _validator(kind).validate_json(text)
    except ValidationError as e:
        if e.errors(include_url=False)[0]["type"] != "json_invalid":
            raise InvalidRunFile(_problems(e)) from None
    # A name that was not UTF-8 is kept as a \udcXX escape, which only json reads. Text
    # that is not JSON (or not UTF-8) raises json's ValueError.
    return _validate(kind, json.loads(text))


def _validate(kind: Literal["results", "run"], data: object) -> Any:
    from pydantic_core import ValidationError

    try:
        return _validator(kind).validate_python(data)
    except ValidationError as e:
        raise InvalidRunFile(_problems(e)) from None


def _problems(e: ValidationError) -> str:
    """The first three problems, each where it is: `trials.3.status: Input should be ...`."""
    problems = [f"{'.'.join(str(p) for p in err['loc']) or '(top)'}: {err['msg']}"
                for err in e.errors(include_url=False)[:3]]
    more = f" (and {e.error_count() - 3} more)" if e.error_count() > 3 else ""
    return "; ".join(problems) + more
