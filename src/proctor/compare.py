"""`proctor compare RUN_A RUN_B`: did pass rates change between two runs, beyond chance?

Per task (task × model) and per model, pass/not-pass counts of A and B go into Fisher's exact
test (two-sided). Each family of comparisons (tasks, models) is Holm-adjusted, and a row is
flagged a regression or improvement when its adjusted p-value is below alpha. Errored trials
count as not passed, as in every pass rate proctor reports. See docs/reports.md."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from proctor.report import data
from proctor.stats import fisher_exact, holm, newcombe_diff, wilson

if TYPE_CHECKING:
    from rich.console import Console

ALPHA = 0.05


@dataclass
class Comparison:
    """One row: the same task (or model) in run A and run B."""

    task_id: str | None  # None for a model row
    model: str | None  # the model in A (and in B, unless cross-model)
    label: str
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
    run_a: str
    run_b: str
    tasks: list[Comparison]
    models: list[Comparison]
    only_a: list[str]  # task × model labels present in A only
    only_b: list[str]
    cross_model: tuple[str, str] | None = None  # (model A, model B) when compared with each other
    alpha: float = ALPHA

    @property
    def regressions(self) -> list[Comparison]:
        return [c for c in self.tasks + self.models if c.flag == "regression"]

    @property
    def improvements(self) -> list[Comparison]:
        return [c for c in self.tasks + self.models if c.flag == "improvement"]


def _counts(trials: list[dict[str, Any]], key) -> dict[Any, list[int]]:
    out: dict[Any, list[int]] = {}
    for t in trials:
        c = out.setdefault(key(t), [0, 0])
        c[0] += t.get("status") == "pass"
        c[1] += 1
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


def compare_runs(results_a: dict[str, Any], results_b: dict[str, Any],
                 alpha: float = ALPHA) -> CompareResult:
    """Match tasks and models of two results dicts and test every difference."""
    ta, tb = results_a.get("trials") or [], results_b.get("trials") or []
    models_a = list(dict.fromkeys(t.get("model") for t in ta))
    models_b = list(dict.fromkeys(t.get("model") for t in tb))
    # One model each, and not the same one: "model X vs model Y on the same tasks".
    cross = (len(models_a) == 1 and len(models_b) == 1 and models_a != models_b)

    def task_key(t: dict[str, Any]) -> tuple[Any, Any]:
        return (t.get("task_id"), None if cross else t.get("model"))

    ca, cb = _counts(ta, task_key), _counts(tb, task_key)
    status_a = {(e.get("task_id"), None if cross else e.get("model")): e.get("status")
                for e in results_a.get("tasks") or []}
    status_b = {(e.get("task_id"), None if cross else e.get("model")): e.get("status")
                for e in results_b.get("tasks") or []}
    tasks = []
    for key in ca:
        if key not in cb:
            continue
        task_id, model = key
        label = data.model_label(models_a[0], ta) if cross else data.model_label(model, ta)
        tasks.append(Comparison(task_id, model, label, *ca[key], *cb[key],
                                status_a=status_a.get(key), status_b=status_b.get(key)))

    def label_of(key: tuple[Any, Any], trials: list[dict[str, Any]]) -> str:
        return f"{key[0]} · {data.model_label(key[1], trials)}" if key[1] else str(key[0])

    only_a = [label_of(k, ta) for k in ca if k not in cb]
    only_b = [label_of(k, tb) for k in cb if k not in ca]

    # Model rows pool only the tasks both runs have: a task added to B must not move
    # B's pass rate and pass for a change in the model.
    common = set(ca) & set(cb)
    ta_common = [t for t in ta if task_key(t) in common]
    tb_common = [t for t in tb if task_key(t) in common]
    models = []
    if cross and common:
        (pa, na), (pb, nb) = _counts(ta_common, lambda t: 0)[0], _counts(tb_common, lambda t: 0)[0]
        label = f"{data.model_label(models_a[0], ta)} → {data.model_label(models_b[0], tb)}"
        models.append(Comparison(None, models_a[0], label, pa, na, pb, nb))
    elif not cross:
        ma = _counts(ta_common, lambda t: t.get("model"))
        mb = _counts(tb_common, lambda t: t.get("model"))
        for m in ma:
            if m in mb:
                models.append(Comparison(None, m, data.model_label(m, ta), *ma[m], *mb[m]))
    _test_family(tasks, alpha)
    _test_family(models, alpha)
    return CompareResult(
        run_a=str(results_a.get("run_id") or "A"), run_b=str(results_b.get("run_id") or "B"),
        tasks=tasks, models=models, only_a=only_a, only_b=only_b,
        cross_model=(data.model_label(models_a[0], ta), data.model_label(models_b[0], tb))
        if cross else None, alpha=alpha)


# ---- printing -------------------------------------------------------------------------------


def _p(p: float) -> str:
    return "<0.001" if p < 0.001 else f"{p:.3f}"


def _rate(passed: int, n: int) -> str:
    return f"{passed}/{n} {data.pct(passed / n if n else 0.0)}"


def _table(rows: list[Comparison], title: str, with_task: bool, width: int,
           with_model: bool = True) -> Any:
    from rich.table import Table
    from rich.text import Text

    wide = width >= 110
    table = Table(title=title, title_justify="left", show_edge=False, pad_edge=False)
    # Names are never folded mid-word (`claude-son|net`): a name too long for the terminal
    # ends in an ellipsis, and `--format md` / `json` have them whole.
    if with_task:
        table.add_column("task", no_wrap=True, overflow="ellipsis", ratio=3,
                         min_width=min(24, max((len(r.task_id or "") for r in rows), default=4)))
    if with_model:
        table.add_column("model", no_wrap=True, overflow="ellipsis", ratio=2,
                         min_width=min(20, max((len(r.label) for r in rows), default=5)))
    table.add_column("A", justify="right", no_wrap=True)
    table.add_column("B", justify="right", no_wrap=True)
    table.add_column("Δ", justify="right", no_wrap=True)
    if wide:
        table.add_column("95% CI of Δ", justify="right", no_wrap=True)
        table.add_column("p", justify="right", no_wrap=True)
    table.add_column("p (Holm)", justify="right", no_wrap=True)
    table.add_column("", no_wrap=True)
    for r in rows:
        cells: list[Any] = []
        if with_task:
            cells.append(Text(data.clean(r.task_id)))
        if with_model:
            cells.append(Text(data.clean(r.label)))
        a, b = Text(_rate(r.passed_a, r.n_a)), Text(_rate(r.passed_b, r.n_b))
        if wide:  # each side's own 95% Wilson interval
            a.append(f" ({data.ci_text(wilson(r.passed_a, r.n_a))})", style="dim")
            b.append(f" ({data.ci_text(wilson(r.passed_b, r.n_b))})", style="dim")
        if with_task and r.status_a == "flaky":
            a.append(" ~", style="magenta")
        if with_task and r.status_b == "flaky":
            b.append(" ~", style="magenta")
        cells += [a, b, Text(f"{100 * r.diff:+.0f} pp",
                             style="red" if r.diff < 0 else ("green" if r.diff > 0 else ""))]
        if wide:
            lo, hi = r.diff_ci
            cells += [f"{100 * lo:+.0f} to {100 * hi:+.0f} pp", _p(r.p)]
        cells.append(_p(r.p_adj))
        if r.flag == "regression":
            cells.append(Text("REGRESSION", style="bold red"))
        elif r.flag == "improvement":
            cells.append(Text("improved", style="bold green"))
        else:
            cells.append("")
        table.add_row(*cells)
    return table


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
        console.print(Text(f"comparing model {data.clean(res.cross_model[0])} (A) with "
                           f"{data.clean(res.cross_model[1])} (B) on the same tasks",
                           style="dim"))
    elif len(labels) == 1:
        console.print(Text(f"model {data.clean(labels.pop())}", style="dim"))
    if res.models:
        console.print(_table(res.models, "Models", with_task=False, width=console.width))
        console.print()
    if res.tasks:
        console.print(_table(res.tasks, "Tasks", with_task=True, width=console.width,
                             with_model=task_models))
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


def compare_main(run_a: str | Path, run_b: str | Path, fail_on_regression: bool = False,
                 alpha: float = ALPHA, fmt: str = "text") -> int:
    """Print the comparison (text, md or json); exit 1 only with `fail_on_regression` and a
    significant drop."""
    from rich.console import Console

    a = data.load_run(run_a)
    b = data.load_run(run_b)
    res = compare_runs(a.results, b.results, alpha=alpha)
    if fmt == "json":
        print(json.dumps(comparison_data(res), indent=2))
    elif fmt == "md":
        print(comparison_markdown(res))
    else:
        print_comparison(res, Console(highlight=False))
    return 1 if fail_on_regression and res.regressions else 0


def _row(c: Comparison) -> dict[str, Any]:
    return {"task_id": c.task_id, "model": c.model, "label": c.label,
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
    def esc(s: Any) -> str:
        return str(s).replace("|", "\\|").replace("\n", " ")

    icon = {"regression": "🔻 regression", "improvement": "🔺 improvement"}
    lines = [f"## proctor compare `{esc(res.run_a)}` → `{esc(res.run_b)}`", "",
             f"{len(res.regressions)} regression(s), {len(res.improvements)} improvement(s) "
             f"(Holm-adjusted Fisher's exact test, α = {res.alpha:g})", ""]
    for title, rows in (("Models", res.models), ("Tasks", res.tasks)):
        if not rows:
            continue
        lines += [f"### {title}", "", "| | A | B | difference (95% CI) | p (adj.) | |",
                  "|:--|--:|--:|--:|--:|:--|"]
        for c in rows:
            lo, hi = c.diff_ci
            lines.append(f"| {esc(c.label)} | {c.passed_a}/{c.n_a} | {c.passed_b}/{c.n_b} | "
                         f"{100 * c.diff:+.0f} pts ({100 * lo:+.0f} to {100 * hi:+.0f}) | "
                         f"{c.p_adj:.3f} | {icon.get(c.flag, '')} |")
        lines.append("")
    for label, names in (("Only in A", res.only_a), ("Only in B", res.only_b)):
        if names:
            lines.append(f"**{label}:** " + ", ".join(f"`{esc(n)}`" for n in names))
    return "\n".join(lines).rstrip() + "\n"

