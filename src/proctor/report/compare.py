"""`proctor compare RUN_A RUN_B`: did pass rates change between two runs, beyond chance?
(`proctor compare RUN --by agent`: between the agents of one run, the same way.)

Per task (task × agent · model × help mode × params: identical conditions) and per agent
under test (agent · model), pass/not-pass
counts of A and B go into Fisher's exact
test (two-sided). Each family of comparisons (tasks, models) is Holm-adjusted, and a row is
flagged a regression or improvement when its adjusted p-value is below alpha. Errored trials
count as not passed, as in every pass rate proctor reports. See docs/reports.md."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from proctor.errors import UsageError
from proctor.report import data
from proctor.results import RunResults
from proctor.stats import fisher_exact, holm, newcombe_diff, wilson

if TYPE_CHECKING:
    from rich.console import Console

ALPHA = 0.05


@dataclass
class Comparison:
    """One row: the same task (or model) in run A and run B."""

    task_id: str | None  # None for a model row
    model: str | None  # the model in A (and in B, unless cross-model)
    label: str  # the model's display name
    passed_a: int
    n_a: int
    passed_b: int
    n_b: int
    status_a: str | None = None
    status_b: str | None = None
    p: float = 1.0
    p_adj: float = 1.0
    diff_ci: tuple[float, float] = (-1.0, 1.0)
    flag: str = ""  # "regression", "improvement" or ""
    min_p: float = 1.0  # the smallest p these trial counts could give at all
    help_mode: str | None = None
    params: dict[str, Any] = field(default_factory=dict)

    @property
    def task_label(self) -> str:
        """`git-init [injected, k=v]`: the task and what else made its conditions."""
        extra = [x for x in (self.help_mode, data.params_text(self.params)) if x]
        return f"{self.task_id} [{', '.join(extra)}]" if extra else str(self.task_id)

    @property
    def rate_a(self) -> float:
        return self.passed_a / self.n_a if self.n_a else 0.0

    @property
    def rate_b(self) -> float:
        return self.passed_b / self.n_b if self.n_b else 0.0

    @property
    def diff(self) -> float:
        return self.rate_b - self.rate_a


@dataclass
class CompareResult:
    """Two runs compared, by task and by model."""
    run_a: str
    run_b: str
    tasks: list[Comparison]
    models: list[Comparison]
    only_a: list[str]  # task × model labels present in A only
    only_b: list[str]
    cross_model: tuple[str, str] | None = None  # (model A, model B) when compared with each other
    alpha: float = ALPHA
    unit: str = "agent · model"  # what a row label names ("model": two agents of one run)

    @property
    def regressions(self) -> list[Comparison]:
        return [c for c in self.tasks + self.models if c.flag == "regression"]

    @property
    def improvements(self) -> list[Comparison]:
        return [c for c in self.tasks + self.models if c.flag == "improvement"]


def _counts(trials: Sequence[Mapping[str, Any]], key: Callable[[Mapping[str, Any]], Any]
            ) -> dict[Any, tuple[int, int]]:
    """(passed, trials) by `key`."""
    out: dict[Any, tuple[int, int]] = {}
    for t in trials:
        passed, n = out.get(k := key(t), (0, 0))
        out[k] = (passed + (t.get("status") == "pass"), n + 1)
    return out


def _test_family(rows: list[Comparison], alpha: float) -> None:
    for r in rows:
        table = (r.passed_a, r.n_a - r.passed_a, r.passed_b, r.n_b - r.passed_b)
        r.p = fisher_exact(*table)
        r.min_p = min(fisher_exact(r.n_a, 0, 0, r.n_b), fisher_exact(0, r.n_a, r.n_b, 0))
        r.diff_ci = newcombe_diff(r.passed_a, r.n_a, r.passed_b, r.n_b)
    for r, adj in zip(rows, holm([r.p for r in rows]), strict=True):
        r.p_adj = adj
        if adj < alpha and r.diff != 0:
            r.flag = "regression" if r.diff < 0 else "improvement"


def _model_only(t: Mapping[str, Any]) -> str:
    return str(t.get("model") or "(no model)")


def compare_runs(results_a: RunResults, results_b: RunResults,
                 alpha: float = ALPHA, same_agent: bool = True) -> CompareResult:
    """Match tasks and agents under test (agent · model) of two results dicts and test every
    difference. `same_agent=False` (two agents of one run): match by model only, so each
    task under each model is one agent's against the other's."""
    ta, tb = results_a.get("trials") or [], results_b.get("trials") or []
    who_of: Callable[[Mapping[str, Any]], str] = data.who if same_agent else _model_only
    who_a = list(dict.fromkeys(who_of(t) for t in ta))
    who_b = list(dict.fromkeys(who_of(t) for t in tb))
    # One agent under test each, and not the same one: "X vs Y on the same tasks".
    cross = (len(who_a) == 1 and len(who_b) == 1 and who_a != who_b)
    model_of = {who_of(t): t.get("model") for t in ta + tb}
    # X vs Y where one side takes no prompt (oracle, nop: one trial per task, no help
    # mode): its tasks meet the other's under any help mode.
    modeless = cross and any(all(t.get("help_mode") is None for t in side) for side in (ta, tb))

    def task_key(t: Mapping[str, Any]) -> tuple[Any, ...]:
        """Identical conditions: task, agent · model (not in X-vs-Y mode), help mode,
        params."""
        task, _, mode, params = data.condition(t)
        return (task, None if cross else who_of(t), None if modeless else mode, params)

    ca, cb = _counts(ta, task_key), _counts(tb, task_key)
    status_a = {task_key(e): e.get("status") for e in results_a.get("tasks") or []}
    status_b = {task_key(e): e.get("status") for e in results_b.get("tasks") or []}
    first = {task_key(t): t for t in ta + tb}  # a trial of each condition: its help mode, params
    tasks = []
    for key in ca:
        if key not in cb:
            continue
        t = first[key]
        who = who_a[0] if cross else key[1]
        tasks.append(Comparison(key[0], model_of.get(who), who, *ca[key], *cb[key],
                                status_a=status_a.get(key), status_b=status_b.get(key),
                                help_mode=t.get("help_mode"), params=dict(t.get("params") or {})))

    only_a = [_label(k, first[k]) for k in ca if k not in cb]
    only_b = [_label(k, first[k]) for k in cb if k not in ca]

    # Agent rows pool only the tasks both runs have: a task added to B must not move
    # B's pass rate and pass for a change in the agent.
    common = set(ca) & set(cb)
    ta_common = [t for t in ta if task_key(t) in common]
    tb_common = [t for t in tb if task_key(t) in common]
    if cross:  # one row: X → Y
        models = _pooled(ta_common, tb_common, model_of.get(who_a[0]),
                         f"{who_a[0]} → {who_b[0]}") if common else []
    else:
        models = _per_agent(ta_common, tb_common, who_of, model_of)
    _test_family(tasks, alpha)
    _test_family(models, alpha)
    return CompareResult(
        run_a=str(results_a.get("run_id") or "A"), run_b=str(results_b.get("run_id") or "B"),
        tasks=tasks, models=models, only_a=only_a, only_b=only_b,
        cross_model=(who_a[0], who_b[0]) if cross else None, alpha=alpha,
        unit="agent · model" if same_agent else "model")


def _label(key: tuple[Any, ...], trial: Mapping[str, Any]) -> str:
    """A condition only one side ran, as listed: task [help mode, params] · agent."""
    extra = [x for x in (trial.get("help_mode"), data.params_text(trial.get("params"))) if x]
    task = f"{key[0]} [{', '.join(extra)}]" if extra else str(key[0])
    return f"{task} · {key[1]}" if key[1] else task


def _pooled(ta: list[Any], tb: list[Any], model: Any, who: str) -> list[Comparison]:
    """One row for all the trials of each side (X vs Y)."""
    (pa, na), (pb, nb) = _counts(ta, lambda t: 0)[0], _counts(tb, lambda t: 0)[0]
    return [Comparison(None, model, who, pa, na, pb, nb)]


def _per_agent(ta: list[Any], tb: list[Any], who_of: Callable[[Mapping[str, Any]], str],
               model_of: dict[str, Any]) -> list[Comparison]:
    """One row per agent under test both sides ran."""
    ma, mb = _counts(ta, who_of), _counts(tb, who_of)
    return [Comparison(None, model_of.get(m), m, *ma[m], *mb[m]) for m in ma if m in mb]


def _agent_type(row: Mapping[str, Any]) -> str:
    """A trial's or `tasks` row's agent type (`claude-code`, `llm`, `command`)."""
    return data.who(row).split(" · ", 1)[0]


def split_by_agent(results: RunResults) -> list[tuple[str, RunResults]]:
    """One run's trials (and `tasks` rows) apart for each agent, in the run's order:
    `compare RUN --by agent` compares them as it compares two runs, task by task under each
    model."""
    parts: dict[str, list[Any]] = {}
    for t in results.get("trials") or []:
        parts.setdefault(_agent_type(t), []).append(t)
    rows: dict[str, list[Any]] = {}
    for r in results.get("tasks") or []:
        rows.setdefault(_agent_type(r), []).append(r)
    run_id = results.get("run_id") or "run"
    return [(who, cast(RunResults, {"run_id": f"{run_id} · {who}", "trials": trials,
                                    "tasks": rows.get(who, [])}))
            for who, trials in parts.items()]


# ---- printing -------------------------------------------------------------------------------


def _p(p: float) -> str:
    return "<0.001" if p < 0.001 else f"{p:.3f}"


def _rate(passed: int, n: int) -> str:
    return f"{passed}/{n} {data.pct(passed / n if n else 0.0)}"


def _table(rows: list[Comparison], title: str, with_task: bool, width: int,
           with_model: bool = True, unit: str = "agent · model") -> Any:
    """Names are never folded mid-word (`claude-son|net`): they are cut in the middle to
    fit (report.tables), and `--format md` / `json` have them whole. When a task and its
    model cannot both be read on one line, each model heads its own rows."""
    from rich.console import Group
    from rich.text import Text

    from proctor.report.tables import NAME_MIN, fitted_table, layout

    cols = _columns(rows, with_task, with_model, unit=unit)
    widths = {id(c): w for c, w in layout(cols, width)}
    squeezed = any(widths.get(id(c), 0) < min(max(len(x) for x in c.cells), NAME_MIN)
                   for c in cols if c.name)
    if not (with_task and with_model and squeezed):
        return fitted_table(cols, width, title=title, title_justify="left")
    # The same columns for every model: those the whole list keeps without a model column.
    every = _columns(rows, True, False)
    shown = {id(c) for c, _ in layout(every, width)}
    kept = [i for i, c in enumerate(every) if id(c) in shown]
    parts: list[Any] = [Text(title, style="italic")]
    for label in dict.fromkeys(r.label for r in rows):
        mine = _columns([r for r in rows if r.label == label], True, False,
                        flags=any(r.flag for r in rows))
        parts += [Text(data.clean(label), style="bold"),
                  fitted_table([mine[i] for i in kept], width)]
    return Group(*parts)


def _columns(rows: list[Comparison], with_task: bool, with_model: bool,
             flags: bool | None = None, unit: str = "agent · model") -> list[Any]:
    from rich.text import Text

    from proctor.report.tables import Col

    def rate(passed: int, n: int, flaky: bool) -> Text:
        t = Text(_rate(passed, n))
        if flaky:
            t.append(" ~", style="magenta")
        return t

    def mark(r: Comparison) -> Text:
        if r.flag == "regression":
            return Text("REGRESSION", style="bold red")
        return Text("improved", style="bold green") if r.flag == "improvement" else Text("")

    cols = []
    if with_task:
        cols.append(Col("task", [data.clean(r.task_label) for r in rows], name=True,
                        keep_tail=True))
    if with_model:
        cols.append(Col(unit, [data.clean(r.label) for r in rows], name=True))
    cols += [
        Col("A", [rate(r.passed_a, r.n_a, with_task and r.status_a == "flaky") for r in rows],
            right=True),
        # each side's own 95% Wilson interval, when there is room
        Col("95% CI", [data.ci_text(wilson(r.passed_a, r.n_a)) for r in rows], right=True,
            drop=4, style="dim"),
        Col("B", [rate(r.passed_b, r.n_b, with_task and r.status_b == "flaky") for r in rows],
            right=True),
        Col("95% CI", [data.ci_text(wilson(r.passed_b, r.n_b)) for r in rows], right=True,
            drop=4, style="dim"),
        Col("Δ", [Text(f"{data.points(r.diff)} pp",
                       style="red" if r.diff < 0 else ("green" if r.diff > 0 else ""))
                  for r in rows], right=True),
        Col("95% CI of Δ", [f"{data.points(r.diff_ci[0])} to {data.points(r.diff_ci[1])} pp"
                            for r in rows], right=True, drop=3),
        Col("p", [_p(r.p) for r in rows], right=True, drop=2),
        Col("p (Holm)", [_p(r.p_adj) for r in rows], right=True),
    ]
    if any(r.flag for r in rows) if flags is None else flags:
        cols.append(Col("", [mark(r) for r in rows]))
    return cols


def print_comparison(res: CompareResult, console: Console) -> None:
    from rich.text import Text

    head = Text()
    head.append("A ", style="bold")
    head.append(data.clean(res.run_a))
    head.append("  vs  ")
    head.append("B ", style="bold")
    head.append(data.clean(res.run_b))
    console.print(head)
    labels = {r.label for r in res.tasks}
    # One model for every task row (or model A vs model B): say it once, not on every row.
    task_models = not res.cross_model and len(labels) > 1
    if res.cross_model:
        console.print(Text(f"comparing {data.clean(res.cross_model[0])} (A) with "
                           f"{data.clean(res.cross_model[1])} (B) on the same tasks",
                           style="dim"))
    elif len(labels) == 1:
        console.print(Text(f"{res.unit}: {data.clean(labels.pop())}", style="dim"))
    if res.models:
        console.print(_table(res.models, "Agents" if res.unit != "model" else "Models",
                             with_task=False, width=console.width, unit=res.unit))
        console.print()
    if res.tasks:
        console.print(_table(res.tasks, "Tasks", with_task=True, width=console.width,
                             with_model=task_models, unit=res.unit))
        console.print()
    else:
        console.print("no task ran in both runs")
    for label, names in (("only in A", res.only_a), ("only in B", res.only_b)):
        if names:
            shown = ", ".join(data.clean(n) for n in names[:10])
            more = f" and {len(names) - 10} more" if len(names) > 10 else ""
            console.print(Text(f"{label} (not compared): {shown}{more}", style="dim"))
    if any("flaky" in (r.status_a, r.status_b) for r in res.tasks):
        console.print(Text("~ flaky: the task both passed and failed in that run", style="dim"))
    hopeless = [r for r in res.tasks if r.min_p * len(res.tasks) >= res.alpha]
    regs, imps = res.regressions, res.improvements
    summary = Text()
    summary.append(f"{len(regs)} significant regression{'s' if len(regs) != 1 else ''}",
                   style="bold red" if regs else "bold")
    summary.append(f", {len(imps)} improvement{'s' if len(imps) != 1 else ''}",
                   style="bold green" if imps else "")
    summary.append(f" (Fisher's exact test, two-sided, Holm-adjusted, alpha {res.alpha:g}).")
    console.print(summary)
    if hopeless:
        console.print(Text(
            f"{len(hopeless)} of {len(res.tasks)} task comparisons could not reach significance "
            "with these trial counts even at 100% vs 0%; run more trials (--repeat) to detect "
            "task-level changes. Not significant does not mean no difference.", style="dim"))


def compare_main(run_a: str | Path, run_b: str | Path | None, fail_on_regression: bool = False,
                 alpha: float = ALPHA, fmt: str = "text", by: str | None = None) -> int:
    """Print the comparison (text, md or json); exit 1 only with `fail_on_regression` and a
    significant drop. `by="agent"` (and no run B): within run A, each agent under test
    against the first (the run's order), with the same statistics as two runs."""
    from rich.console import Console

    a = data.load_run(run_a)
    if by is None:
        if run_b is None:
            raise UsageError("compare needs two runs (RUN_A RUN_B), or one run and --by agent")
        results = [compare_runs(a.results, data.load_run(run_b).results, alpha=alpha)]
    else:
        if run_b is not None:
            raise UsageError("--by agent compares the agents of one run: give one run")
        parts = split_by_agent(a.results)
        if len(parts) < 2:
            raise UsageError(f"{run_a}: one agent ({parts[0][0] if parts else '–'}); "
                             "--by agent needs a run of two or more (--agent X --agent Y)")
        (_, base), *others = parts
        results = [compare_runs(base, other, alpha=alpha, same_agent=False)
                   for _, other in others]
    if fmt == "json":
        out = [comparison_data(res) for res in results]
        print(json.dumps(out[0] if by is None else {"by": by, "comparisons": out}, indent=2))
    elif fmt == "md":
        print("\n".join(comparison_markdown(res) for res in results))
    else:
        console = Console(highlight=False)
        for i, res in enumerate(results):
            if i:
                console.print()
            print_comparison(res, console)
    return 1 if fail_on_regression and any(res.regressions for res in results) else 0


def _row(c: Comparison) -> dict[str, Any]:
    task = {"help_mode": c.help_mode, "params": c.params,
            "task_label": c.task_label} if c.task_id is not None else {}
    return {"task_id": c.task_id, **task, "model": c.model, "label": c.label,
            "passed_a": c.passed_a, "trials_a": c.n_a, "passed_b": c.passed_b,
            "trials_b": c.n_b, "status_a": c.status_a, "status_b": c.status_b,
            "diff": c.diff, "ci95": list(c.diff_ci), "p": c.p, "p_adjusted": c.p_adj,
            "flag": c.flag or None}


def comparison_data(res: CompareResult) -> dict[str, Any]:
    return {"run_a": res.run_a, "run_b": res.run_b, "alpha": res.alpha,
            "cross_model": list(res.cross_model) if res.cross_model else None,
            "tasks": [_row(c) for c in res.tasks], "models": [_row(c) for c in res.models],
            "only_a": res.only_a, "only_b": res.only_b,
            "regressions": len(res.regressions), "improvements": len(res.improvements)}


def comparison_markdown(res: CompareResult) -> str:
    """The comparison as GitHub-flavoured Markdown, for a pull-request comment."""
    from proctor.report.markdown import cell, code

    icon = {"regression": "🔻 regression", "improvement": "🔺 improvement"}
    lines = [f"## proctor compare {code(res.run_a)} → {code(res.run_b)}", "",
             f"{len(res.regressions)} regression(s), {len(res.improvements)} improvement(s) "
             f"(Holm-adjusted Fisher's exact test, α = {res.alpha:g})", ""]
    task_models = {c.label for c in res.tasks}
    if res.cross_model:
        lines += [f"{code(res.cross_model[0])} (A) against {code(res.cross_model[1])} "
                  "(B) on the same tasks.", ""]
    elif len(task_models) == 1:
        lines += [f"{res.unit.capitalize()} {code(next(iter(task_models)))}.", ""]
    with_model = not res.cross_model and len(task_models) > 1
    for title, rows in (("Agents", res.models), ("Tasks", res.tasks)):
        if not rows:
            continue
        names = ([res.unit] if title == "Agents" else
                 ["task"] + ([res.unit] if with_model else []))
        lines += [f"### {title}", "",
                  "| " + " | ".join(names) + " | A | B | difference (95% CI) | p (adj.) | |",
                  "|" + ":--|" * len(names) + "--:|--:|--:|--:|:--|"]
        for c in rows:
            lo, hi = c.diff_ci
            label = ([cell(c.label, 200)] if title == "Agents" else
                     [cell(c.task_label, 200)] + ([cell(c.label, 200)] if with_model else []))
            lines.append(f"| {' | '.join(label)} | {c.passed_a}/{c.n_a} | {c.passed_b}/{c.n_b} | "
                         f"{data.points(c.diff)} pts ({data.points(lo)} to {data.points(hi)}) | "
                         f"{_p(c.p_adj)} | {icon.get(c.flag, '')} |")
        lines.append("")
    for heading, only in (("Only in A", res.only_a), ("Only in B", res.only_b)):
        if only:
            lines.append(f"**{heading}:** " + ", ".join(code(n, 200) for n in only))
    return "\n".join(lines).rstrip() + "\n"
