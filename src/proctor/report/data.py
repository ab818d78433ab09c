"""Reading a run directory and the small views every report format shares.

Reports read `results.json` (SPEC §5) and nothing the runner keeps in memory, so `proctor
report` re-renders a finished run exactly as `proctor run` did. Per-model extras (turns, tokens,
cost per success) are computed here from the trials, so they need no extra results keys."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal, cast

from proctor.errors import UsageError
from proctor.report.collector import collector_paused
from proctor.results import (
    CheckRecord,
    InvalidRunFile,
    RunMeta,
    RunResults,
    Summary,
    TrialRecord,
    load_results,
    trial_from_line,
)
from proctor.stats import wilson
from proctor.store import read_results, read_run_meta

# What every report calls an agent under test (`claude-code · mock/solver`), re-exported.
from proctor.text import agent_model as agent_model
from proctor.text import agent_of, printable
from proctor.text import cut as text_cut
from proctor.text import row_label as row_label

# ANSI escape sequences and C0/C1 control characters (keeping \t and \n): agent output is
# untrusted and must not move a terminal's cursor, retitle it, or break an XML file.
_ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def clean(text: Any) -> str:
    """Printable text: no escape sequences or control characters (\\r\\n becomes \\n)."""
    if text is None:
        return ""
    s = str(text)
    if not _CONTROL.search(s):  # most text (\r and ESC are control characters): one scan
        return s
    s = s.replace("\r\n", "\n")
    s = _ANSI.sub("", s)
    return _CONTROL.sub("", s)


def cut(text: Any, limit: int, keep: Literal["head", "tail", "both"] = "head") -> str:
    """Clean and cut to `limit` characters, saying how much was left out (proctor.text.cut):
    the start, or both ends (`keep="both"`: a check's message, whose output ends with why)."""
    return text_cut(clean(text), limit, keep=keep)


def one_line(text: Any, limit: int = 200) -> str:
    """Whitespace collapsed to single spaces, then cut: for table cells and attributes."""
    return cut(" ".join(clean(text).split()), limit)


# ---- formatting -----------------------------------------------------------------------------


def pct(x: float | None, digits: int = 0) -> str:
    return "–" if x is None else f"{100 * x:.{digits}f}%"


def ci_text(ci: Iterable[float] | None) -> str:
    if not ci:
        return "–"
    lo, hi = list(ci)[:2]
    return f"{100 * lo:.0f}–{100 * hi:.0f}%"


def seconds(x: float | None) -> str:
    if x is None:
        return "–"
    if x < 1:
        return f"{x:.2f}s"
    if x < 60:
        return f"{x:.1f}s"
    m, s = divmod(int(round(x)), 60)
    if m < 60:
        return f"{m}m{s:02d}s"
    h, m = divmod(m, 60)
    return f"{h}h{m:02d}m"


def count(n: float | None) -> str:
    """Token counts: 950, 12.3k, 4.1M."""
    if n is None:
        return "–"
    if n < 1000:
        return f"{n:.0f}"
    if n < 1_000_000:
        return f"{n / 1000:.1f}k"
    return f"{n / 1_000_000:.1f}M"


def usd(x: float | None) -> str:
    """`$0.0123`, `$4.20`; `–` when unknown; `free` when known to cost nothing (mock models:
    `$0.0000` read like a rounding of something)."""
    if x is None:
        return "–"
    if x == 0:
        return "free"
    if x == float("inf"):
        return "∞"
    return f"${x:.4f}" if x < 1 else f"${x:.2f}"


def points(x: float) -> str:
    """A difference of rates in percentage points: `+40`, `-12`, and `0` for anything that
    rounds to zero (no `-0` for an interval's bound a hair below it)."""
    s = f"{100 * x:+.0f}"
    return "0" if s in ("+0", "-0") else s


def diff_text(effect: Mapping[str, Any]) -> str:
    """`+40 pts (-2 to +72)`: a difference of pass rates, in percentage points, with its CI."""
    lo, hi = effect["ci95"]
    return f"{points(effect['diff'])} pts ({points(lo)} to {points(hi)})"


def top_k(row: Mapping[str, Any]) -> int:
    """The largest k a row has pass@k for (its repeats, up to the scorer's 10)."""
    return max((int(k) for k in row.get("pass_at_k") or {}), default=0)


def pass_k_text(row: Mapping[str, Any]) -> str:
    """`k=3: 97% / 34%`: pass@k and pass^k at the row's largest k; `–` with one trial, where
    both are just the pass rate."""
    k = top_k(row)
    if k < 2:
        return "–"
    at, hat = row["pass_at_k"][str(k)], (row.get("pass_hat_k") or {}).get(str(k))
    return f"k={k}: {pct(at)} / {pct(hat)}"


def shows_pass_k(rows: Sequence[Mapping[str, Any]]) -> bool:
    return any(top_k(r) >= 2 for r in rows)


def params_text(params: dict[str, Any] | None) -> str:
    if not params:  # most trials: asked for per trial, per row, per heat-map cell
        return ""
    return ",".join(f"{k}={v}" for k, v in sorted(params.items()))


# ---- the run --------------------------------------------------------------------------------


@dataclass
class Run:
    """A run as reports read it: its directory, results and configuration."""
    dir: Path
    results: RunResults
    config: RunMeta = field(default_factory=lambda: RunMeta())  # run.json, {} when absent
    complete: bool = True  # False when read from results.jsonl (the run did not finish)

    @property
    def trials(self) -> list[TrialRecord]:
        return self.results.get("trials") or []

    def trial_dir(self, trial_id: str) -> Path:
        return self.dir / "trials" / trial_id


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """Every parseable JSON object line; a torn last line (crash mid-write) is skipped."""
    out: list[dict[str, Any]] = []
    try:
        with path.open(encoding="utf-8", errors="replace") as f:
            for line in f:
                line = line.strip()
                if not line:
                    continue
                try:
                    obj = json.loads(line)
                except ValueError:
                    continue
                if isinstance(obj, dict):
                    # A name that is not UTF-8 (kept as \\udcXX in the log) is shown byte
                    # for byte, never an encoding error in a report.
                    out.append(_printable(obj) if "\\udc" in line else obj)
    except FileNotFoundError:
        return []
    return out


def _printable(value: Any) -> Any:
    if isinstance(value, str):
        return printable(value)
    if isinstance(value, dict):
        return {printable(k): _printable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_printable(v) for v in value]
    return value


def load_run(run_dir: str | Path, *, allow_partial: bool = False) -> Run:
    """The run in `run_dir`, its files checked against their types (proctor.results). Without
    results.json, `allow_partial` reads results.jsonl (the trials finished so far, last line
    per trial id wins, as after a --resume)."""
    d = Path(run_dir)
    if not d.is_dir():
        raise UsageError(f"{d} is not a directory")
    with collector_paused():  # a large results.json is a million objects and no cycle
        return _load_run(d, allow_partial)


def _load_run(d: Path, allow_partial: bool) -> Run:
    config = read_run_meta(d / "run.json") if (d / "run.json").is_file() else RunMeta()
    if (d / "results.json").is_file():
        return Run(d, read_results(d / "results.json"), config)
    if (d / "results.jsonl").is_file() and allow_partial:
        by_id = {t["id"]: t for t in read_jsonl(d / "results.jsonl") if "id" in t}
        trials = list(by_id.values())
        try:
            results = load_results({
                "run_id": config.get("run_id", d.name),
                "started_at": config.get("started_at"),
                "finished_at": None,
                "complete": False,  # every report says so
                "summary": summarize(trials),
                "trials": trials,
                "tasks": [],
                "models": [],
            })
        except InvalidRunFile as e:
            raise UsageError(f"{d / 'results.jsonl'} holds a line that is not a trial: {e}"
                             ) from None
        return Run(d, results, config, complete=False)
    if (d / "results.jsonl").is_file() or (d / "run.json").is_file():
        raise UsageError(
            f"{d} has no results.json: the run did not finish "
            f"(finish it with: proctor run --resume {d})"
        )
    raise UsageError(f"{d} is not a run directory (no results.json or run.json)")


def summarize(trials: Sequence[Mapping[str, Any]]) -> Summary:
    """The SPEC §5 summary block, for trials that have no results.json yet."""
    n = len(trials)
    passed = sum(t.get("status") == "pass" for t in trials)
    errored = sum(t.get("status") == "error" for t in trials)
    return {
        "trials": n,
        "passed": passed,
        "failed": n - passed - errored,
        "errored": errored,
        "pass_rate": passed / n if n else 0.0,
    }


# ---- shared views ---------------------------------------------------------------------------


def model_label(model: str | None, trials: Sequence[Mapping[str, Any]] | None = None) -> str:
    """A model's display name; trials without a model (oracle, nop, command) show their agent."""
    if model:
        return model
    agents = {t.get("agent") for t in trials or [] if not t.get("model") and t.get("agent")}
    return f"({agents.pop()})" if len(agents) == 1 else "(no model)"


def headline(results: RunResults) -> dict[str, Any]:
    """Totals and the overall pass rate with its Wilson interval."""
    s = results.get("summary") or summarize(results.get("trials") or [])
    n, passed = int(s.get("trials", 0)), int(s.get("passed", 0))
    return {
        "trials": n,
        "passed": passed,
        "failed": int(s.get("failed", 0)),
        "errored": int(s.get("errored", 0)),
        "pass_rate": float(s.get("pass_rate", passed / n if n else 0.0)),
        "ci95": wilson(passed, n),
        # The runner writes complete=false when planned trials are missing (interrupted run).
        "incomplete": results.get("complete") is False or bool(results.get("interrupted")),
        "not_isolated": not_isolated(results),
    }


def not_isolated(results: RunResults) -> str:
    """Why the run's verdicts can be forged, in words ("" for an isolated run)."""
    iso = results.get("isolation")
    if iso is None or iso.get("isolated", True):
        return ""
    return iso.get("note") or "this run was not isolated (--isolation none)"


def shows_verdicts(rows: Sequence[Mapping[str, Any]]) -> bool:
    """Whether a verdict column says anything the status does not: only when some task
    aggregates replicas by any/majority/mean (with `all`, verdict pass == status pass)."""
    return any(r.get("verdict") and r.get("aggregation") not in (None, "all") for r in rows)


def verdict_text(row: Mapping[str, Any]) -> str:
    if not row.get("verdict"):
        return "–"
    how = row.get("aggregation")
    return f"{row['verdict']} ({how})" if how else str(row["verdict"])


def model_rows(results: RunResults) -> list[dict[str, Any]]:
    """The scorer's `models` rows (one per agent × model), each with its display label:
    agent and model together (`claude-code · mock/solver`, `oracle`)."""
    rows = []
    for e in _scored(results)["models"]:
        row = dict(e)
        row["label"] = row_label(e)
        rows.append(row)
    return rows


def agent_names(results: RunResults) -> dict[str, str]:
    """The scorer's agent labels (SPEC §5 `agent`: `mock/x`, `claude-code:mock/x`, `oracle`)
    as reports show them (`llm · mock/x`, `claude-code · mock/x`, `oracle`)."""
    return {str(e.get("agent")): row_label(e) for e in _scored(results)["models"]}


def task_rows(results: RunResults) -> list[dict[str, Any]]:
    """The scorer's `tasks` rows, each with display labels (agent · model; which help mode
    and params)."""
    rows = []
    for e in _scored(results)["tasks"]:
        row = dict(e)
        row["label"] = row_label(e)
        row["task_label"] = task_label(e)
        rows.append(row)
    return rows


def who(row: Mapping[str, Any]) -> str:
    """The agent under test of a `tasks` row or a trial as one key, the same for both: its
    agent type and model (a trial names them apart; a row's `agent` label holds both, and
    a command agent's program, which its trials do not name)."""
    return _who(row.get("model"), row.get("agent"))


@lru_cache(maxsize=4096)  # a large run's rows and trials share a few agents and models
def _who(model: Any, agent: Any) -> str:
    if agent and model and (agent == model or str(agent).endswith(":" + model)):
        agent = agent_of(str(agent), model)
    elif agent and not model:
        agent = str(agent).split(":", 1)[0]
    return agent_model(agent or ("llm" if model else "?"), model)


def condition(row: Mapping[str, Any]) -> tuple[Any, ...]:
    """What makes trials identical conditions (a `tasks` row, or a trial): task, agent and
    model, help mode, params."""
    given = row.get("params")
    params = tuple(sorted((k, repr(v)) for k, v in given.items())) if given else ()
    return (row.get("task_id"), who(row), row.get("help_mode"), params)


def cell_key(row: Mapping[str, Any]) -> str:
    """A heat-map cell's key, the same for a `tasks` row and each of its trials: task, agent
    and model, help mode, params (report.html filters trials by it)."""
    return "␟".join(str(x) for x in (row.get("task_id"), who(row),
                                          row.get("help_mode") or "", params_text(row.get("params"))))


def task_label(row: Mapping[str, Any]) -> str:
    """`git-init [injected, k=v]`: a task and the other conditions of its trials."""
    extra = [x for x in (row.get("help_mode"), params_text(row.get("params"))) if x]
    task = str(row.get("task_id"))
    return f"{task} [{', '.join(extra)}]" if extra else task


def failure_groups(results: RunResults) -> list[dict[str, Any]]:
    """Failing checks grouped by identical conditions (task, model, help mode, params) and
    check, in first-seen order: one group says "failed in 6 of 6 trials" with the first
    message and trial, instead of six lines; a check failing under one help mode only is
    not blurred with the other mode's passes."""
    runs: dict[tuple[Any, ...], int] = {}
    for t in results.get("trials") or []:
        key = condition(t)
        runs[key] = runs.get(key, 0) + 1
    groups: dict[tuple[Any, ...], dict[str, Any]] = {}
    for t, c in failed_checks(results):
        key = (*condition(t), c.get("name"))
        if key not in groups:
            groups[key] = {"task_id": t.get("task_id"), "task_label": task_label(t),
                           "model": t.get("model"), "label": row_label(t), "trial": t,
                           "check": c, "failed": 0,
                           "trials": runs.get(key[:-1], 0), "ids": []}
        groups[key]["failed"] += 1
        groups[key]["ids"].append(t.get("id"))
    return list(groups.values())


def rows_by_condition(results: RunResults) -> dict[tuple[Any, ...], dict[str, Any]]:
    """The `tasks` rows by `condition`: the row of a trial in O(1)."""
    return {condition(r): r for r in _scored(results)["tasks"]}


def _scored(results: RunResults) -> dict[str, Any]:
    """results.json's rows; a run still going (read from results.jsonl) is scored here by
    the real scorer, without its tasks' rules (no verdicts or thresholds yet)."""
    if results.get("tasks") or results.get("models") or not results.get("trials"):
        return {"tasks": results.get("tasks") or [], "models": results.get("models") or []}
    cache = cast(dict[str, Any], results)  # kept in the dict: it goes when the run does
    if "_scored" not in cache:
        from proctor.scoring import summarize as score  # a run still going only

        trials = [trial_from_line(t) for t in results["trials"]]
        cache["_scored"] = score(trials, [])
    scored: dict[str, Any] = cache["_scored"]
    return scored


def failed_checks(results: RunResults) -> list[tuple[TrialRecord, CheckRecord]]:
    """(trial, check) for every check that did not pass, in trial order."""
    out = []
    for t in results.get("trials") or []:
        for c in t.get("checks") or []:
            if not c.get("passed"):
                out.append((t, c))
    return out


def reason(trial: Mapping[str, Any]) -> str:
    """Why a trial did not pass, as its result says (`reason`, written by runs since it
    exists), else worked out from its error, forbidden rules and checks; "" for a pass."""
    if status_of(trial) == "pass":
        return ""
    if trial.get("reason"):
        return clean(trial["reason"])
    if trial.get("error"):
        return clean(trial["error"])
    for f in violated_rules(trial):
        return f"forbidden rule {clean(f.get('rule'))} violated" + (
            f": {clean(f.get('details'))}" if f.get("details") else "")
    failed = [c for c in trial.get("checks") or [] if not c.get("passed")]
    gates = [c for c in failed if c.get("gate")]
    for c in gates or failed:
        more = len(failed) - 1
        return (("gate " if c.get("gate") else "") + f"{clean(c.get('name'))}: "
                + (clean(c.get("message")) or "failed")
                + (f" (and {more} more failed check{'s' if more > 1 else ''})" if more else ""))
    if status_of(trial) == "error":
        return ""  # nothing recorded says why
    score = float(trial.get("composite_score") or 0.0)
    return f"score {score:.2f} is below the pass threshold"


# Parts of an error message that differ between trials with the same cause: long numbers
# (ports, pids, times), hex ids, temp paths.
_VARYING = re.compile(r"\b0x[0-9a-f]+\b|\b[0-9a-f]{12,}\b|\b\d{4,}(?:\.\d+)?\b|/tmp/\S+")


def budget(results: RunResults) -> tuple[dict[str, Any] | None, int]:
    """--max-cost's spend against budget ({max_cost_usd, cost_usd, ...}; None: no budget)
    and how many planned trials were not run."""
    summary: Mapping[str, Any] = results.get("summary") or {}
    return summary.get("budget"), len(summary.get("not_run") or [])


def error_groups(results: RunResults) -> list[dict[str, Any]]:
    """Errored trials grouped by error kind and cause (the error with what varies between
    trials blurred), the most frequent first: {cause, kind, trials: [trial, ...], tasks,
    models}."""
    groups: dict[str, dict[str, Any]] = {}
    for t in results.get("trials") or []:
        if status_of(t) != "error":
            continue
        text = " ".join(reason(t).split())
        kind = t.get("error_kind")
        key = f"{kind}:{_VARYING.sub('…', text)}"
        g = groups.setdefault(key, {"cause": text, "kind": kind, "trials": [], "tasks": set(),
                                    "models": set()})
        g["trials"].append(t)
        g["tasks"].add(t.get("task_id"))
        g["models"].add(row_label(t))
    return sorted(groups.values(), key=lambda g: -len(g["trials"]))


def violated_rules(trial: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [f for f in trial.get("forbidden") or [] if f.get("violated")]


def status_of(trial: Mapping[str, Any]) -> str:
    s = trial.get("status")
    return s if s in ("pass", "fail", "error") else "error"


def find_trial(trials: Sequence[Mapping[str, Any]], key: str) -> Mapping[str, Any]:
    """A trial by exact id or unique id prefix; a clear usage error otherwise."""
    for t in trials:
        if t.get("id") == key:
            return t
    hits = [t for t in trials if str(t.get("id", "")).startswith(key)]
    if len(hits) == 1:
        return hits[0]
    if not hits:
        raise UsageError(f"no trial {key!r} in this run (list them with: proctor show RUN_DIR)")
    names = ", ".join(str(t.get("id")) for t in hits[:5])
    more = f" and {len(hits) - 5} more" if len(hits) > 5 else ""
    raise UsageError(f"{key!r} matches {len(hits)} trials: {names}{more}; give more of the id")


def about(run: Mapping[str, Any]) -> list[dict[str, Any]]:
    """What the run's benchmarks are (run.json "about": a suite's display_name, category,
    website_url, github_url; a Harbor task's name ...): the name to show, a category, and
    http(s) links only (anything else in a spec is not a link a report may follow)."""
    out = []
    for a in run.get("about") or []:
        if not isinstance(a, dict):
            continue
        name = a.get("display_name") or a.get("name") or a.get("cli")
        if not isinstance(name, str) or not name:
            continue
        links = [str(a[k]) for k in ("website_url", "github_url")
                 if isinstance(a.get(k), str) and re.match(r"https?://", a[k])]
        category = a.get("category") if isinstance(a.get("category"), str) else None
        out.append({"name": one_line(name, 80), "category": one_line(category or "", 60),
                    "links": links})
    return out

