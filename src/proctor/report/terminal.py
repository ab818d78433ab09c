"""The tables printed at the end of `proctor run` (and by `proctor report` on a terminal).

Meaning never rests on colour alone: statuses are words (PASS, FAIL, FLAKY, ERROR), so the
output reads the same with NO_COLOR, in CI logs and when piped. In narrow terminals the
less important columns are dropped instead of wrapping every cell."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from proctor.report import data

if TYPE_CHECKING:
    from rich.console import Console

STATUS_STYLE = {"pass": "green", "fail": "red", "flaky": "magenta", "error": "yellow"}
NARROW = 100  # below this width, usage columns go


def status_text(status: str | None) -> Any:
    from rich.text import Text

    if not status:
        return Text("–")
    return Text(status.upper(), style=f"bold {STATUS_STYLE.get(status, '')}".strip())


def headline_text(results: dict[str, Any]) -> Any:
    """One line: "12 trials: 9 passed, 2 failed, 1 errored · pass rate 75% (95% CI 47–91%)"."""
    from rich.text import Text

    h = data.headline(results)
    t = Text()
    t.append(f"{h['trials']} trials: ")
    t.append(f"{h['passed']} passed", style="green")
    t.append(", ")
    t.append(f"{h['failed']} failed", style="red" if h["failed"] else "")
    t.append(", ")
    t.append(f"{h['errored']} errored", style="yellow" if h["errored"] else "")
    t.append(" · pass rate ")
    t.append(data.pct(h["pass_rate"]), style="bold")
    t.append(f" (95% CI {data.ci_text(h['ci95'])})")
    if h["incomplete"]:
        t.append(" · INCOMPLETE (interrupted)", style="bold yellow")
    if h["not_isolated"]:
        t.append(f"\nNOT ISOLATED: {h['not_isolated']}", style="bold yellow")
    return t


# Beyond this many task rows the terminal shows the ones that need a look (error, flaky, fail)
# first, then says how many passing rows it left out: summary.md and report.html have them all.
MAX_TASK_ROWS = 200
_ATTENTION = {"error": 0, "flaky": 1, "fail": 2}


def task_table(results: dict[str, Any], width: int) -> Any:
    from rich.table import Table
    from rich.text import Text

    rows = data.task_rows(results)
    hidden = 0
    if len(rows) > MAX_TASK_ROWS:
        rows = sorted(rows, key=lambda r: _ATTENTION.get(str(r.get("status")), 3))
        hidden, rows = len(rows) - MAX_TASK_ROWS, rows[:MAX_TASK_ROWS]
    wide = width >= NARROW
    show_model = any(r.get("model") for r in rows) or len({r["label"] for r in rows}) > 1
    table = Table(title="Tasks", title_justify="left", show_edge=False, pad_edge=False)
    table.add_column("task", overflow="fold", ratio=3)
    if show_model:
        table.add_column("model", overflow="fold", ratio=2)
    table.add_column("status", no_wrap=True)
    verdicts = data.shows_verdicts(rows)
    if verdicts:
        table.add_column("verdict", no_wrap=True)
    table.add_column("pass", justify="right", no_wrap=True)
    pass_k = wide and data.shows_pass_k(rows)
    if pass_k:
        table.add_column("pass@k / pass^k", justify="right", no_wrap=True)
    if wide:
        table.add_column("turns", justify="right", no_wrap=True)
        table.add_column("duration", justify="right", no_wrap=True)
    for r in rows:
        cells: list[Any] = [Text(data.clean(r["task_label"]))]
        if show_model:
            cells.append(Text(data.clean(r["label"])))
        cells.append(status_text(r.get("status")))
        if verdicts:
            cells.append(data.verdict_text(r))
        cells.append(f"{r['passed']}/{r['trials']} {data.pct(r.get('pass_rate'))}")
        if pass_k:
            cells.append(data.pass_k_text(r))
        if wide:
            turns = r.get("avg_turns")
            cells += ["–" if turns is None else f"{turns:.1f}", data.seconds(r.get("avg_duration_s"))]
        table.add_row(*cells)
    if hidden:
        table.caption = (f"… and {hidden} more rows (the tasks needing a look come first; "
                         "all are in summary.md / report.html: --format md,html)")
    return table


def help_mode_table(results: dict[str, Any], width: int = 120) -> Any:
    from rich.table import Table
    from rich.text import Text

    table = Table(title="Help modes (does --help help?)", title_justify="left",
                  show_edge=False, pad_edge=False)
    rows = [[data.clean(e["agent"]), data.clean(e["mode_a"]), f"{e['passed_a']}/{e['trials_a']}",
             data.clean(e["mode_b"]), f"{e['passed_b']}/{e['trials_b']}", data.diff_text(e),
             f"{e['p_value']:.3f}"] for e in results["help_modes"]]
    heads = ("model", "mode", "passed", "vs mode", "passed", "Δ (95% CI)", "p")
    widest = [max([len(name)] + [len(r[i]) for r in rows]) for i, name in enumerate(heads)]
    # The model name gives way (its middle cut) before any figure does; 3 = padding, rule.
    room = max(8, width - sum(widest[1:]) - 3 * (len(heads) - 1))
    names = data.short_labels([r[0] for r in rows], room)
    for r in rows:
        r[0] = names[r[0]]
    for i, name in enumerate(heads):
        if i == 0:
            table.add_column(name, no_wrap=True, overflow="ellipsis", max_width=room)
        else:
            table.add_column(name, justify="left" if "mode" in name else "right",
                             no_wrap=True, min_width=widest[i])
    for r in rows:
        table.add_row(*(Text(c) for c in r))
    return table


def model_table(results: dict[str, Any], width: int) -> Any:
    from rich.table import Table
    from rich.text import Text

    rows = data.model_rows(results)
    wide = width >= NARROW
    has_threshold = any(r.get("threshold") is not None for r in rows)
    table = Table(title="Models", title_justify="left", show_edge=False, pad_edge=False)
    table.add_column("model", overflow="fold", ratio=2)
    table.add_column("pass rate", justify="right", no_wrap=True)
    table.add_column("95% CI", justify="right", no_wrap=True)
    pass_k = wide and data.shows_pass_k(rows)
    if pass_k:
        table.add_column("pass@k / pass^k", justify="right", no_wrap=True)
    # Narrow, the total cost stays (when anything cost money): what a run cost is asked first.
    cost_only = not wide and any(r.get("cost_usd") for r in rows)
    if wide:
        table.add_column("tokens in/out", justify="right", no_wrap=True)
        table.add_column("$ total", justify="right", no_wrap=True)
        table.add_column("$/success", justify="right", no_wrap=True)
    elif cost_only:
        table.add_column("$ total", justify="right", no_wrap=True)
    if has_threshold:
        table.add_column("threshold", justify="right", no_wrap=True)
    for r in rows:
        cells: list[Any] = [
            Text(data.clean(r["label"])),
            f"{r['passed']}/{r['trials']} {data.pct(r.get('pass_rate'))}",
            data.ci_text(r.get("ci95")),
        ]
        if pass_k:
            cells.append(data.pass_k_text(r))
        if wide:
            cells += [f"{data.count(r['tokens']['input'])}/{data.count(r['tokens']['output'])}",
                      data.usd(r.get("cost_usd")), data.usd(r.get("cost_per_success"))]
        elif cost_only:
            cells.append(data.usd(r.get("cost_usd")))
        if has_threshold:
            cells.append(threshold_text(r, Text))
        table.add_row(*cells)
    return table


def threshold_text(row: dict[str, Any], text_cls: Any) -> Any:
    th, met = row.get("threshold"), row.get("met")
    if th is None:
        return text_cls("–")
    word = "met" if met else "MISSED"
    return text_cls(f"{th:g}% {word}", style="green" if met else "bold red")


def print_summary(results: dict[str, Any], console: Console) -> None:
    """Print the task and model tables and the headline to `console`."""
    width = console.width
    if results.get("trials"):
        console.print(task_table(results, width))
        console.print()
        console.print(model_table(results, width))
        console.print()
        if results.get("help_modes"):
            console.print(help_mode_table(results, width))
            console.print()
    console.print(headline_text(results))
