"""The tables printed at the end of `proctor run` (and by `proctor report` on a terminal).

Meaning never rests on colour alone: statuses are words (PASS, FAIL, FLAKY, ERROR), so the
output reads the same with NO_COLOR, in CI logs and when piped. Tables fit the terminal
(report.tables): long names are cut in the middle, and in narrow terminals the less important
columns go, instead of wrapping every cell."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from proctor.report import data
from proctor.report.tables import NAME_MIN, Col, col_width, fitted_table, name_widths
from proctor.results import RunResults

if TYPE_CHECKING:
    from rich.console import Console

STATUS_STYLE = {"pass": "green", "fail": "red", "flaky": "magenta", "error": "yellow"}


def status_text(status: str | None) -> Any:
    from rich.text import Text

    if not status:
        return Text("–")
    return Text(status.upper(), style=f"bold {STATUS_STYLE.get(status, '')}".strip())


def headline_text(results: RunResults) -> Any:
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


def task_table(results: RunResults, width: int) -> Any:
    rows = data.task_rows(results)
    hidden = 0
    if len(rows) > MAX_TASK_ROWS:
        rows = sorted(rows, key=lambda r: _ATTENTION.get(str(r.get("status")), 3))
        hidden, rows = len(rows) - MAX_TASK_ROWS, rows[:MAX_TASK_ROWS]
    show_model = any(r.get("model") for r in rows) or len({r["label"] for r in rows}) > 1
    cols = [Col("task", [data.clean(r["task_label"]) for r in rows], name=True, keep_tail=True)]
    if show_model:
        cols.append(Col("agent · model", [data.clean(r["label"]) for r in rows], name=True))
    cols.append(Col("status", [status_text(r.get("status")) for r in rows]))
    if data.shows_verdicts(rows):
        cols.append(Col("verdict", [data.verdict_text(r) for r in rows]))
    cols.append(Col("pass", [f"{r['passed']}/{r['trials']} {data.pct(r.get('pass_rate'))}"
                             for r in rows], right=True))
    # Narrow terminals lose the usage columns first (turns, then duration, then pass@k).
    if data.shows_pass_k(rows):
        cols.append(Col("pass@k / pass^k", [data.pass_k_text(r) for r in rows], right=True,
                        drop=1))
    cols.append(Col("turns", ["–" if r.get("avg_turns") is None else f"{r['avg_turns']:.1f}"
                              for r in rows], right=True, drop=3))
    cols.append(Col("duration", [data.seconds(r.get("avg_duration_s")) for r in rows],
                    right=True, drop=2))
    table = fitted_table(cols, width, title="Tasks", title_justify="left")
    if hidden:
        table.caption = (f"… and {hidden} more rows (the tasks needing a look come first; "
                         "all are in summary.md / report.html: --format md,html)")
        table.caption_justify = "left"
    return table


def p_text(p: float) -> str:
    return "<0.001" if p < 0.001 else f"{p:.3f}"


HELP_MODE_NOTE = ("Δ: the mode's pass rate minus the baseline's (the suite's first help mode), "
                  "in points; 95% CI of Δ (Newcombe); p: Fisher's exact test, two-sided.")


def help_mode_table(results: RunResults, width: int = 120) -> Any:
    """Does --help help? Per model, each help mode against the baseline. When the model
    names do not fit next to the figures, each model heads its own rows."""
    from rich.console import Group
    from rich.text import Text

    effects = results["help_modes"]

    def figures(es: Sequence[Mapping[str, Any]]) -> list[Col]:
        def ci(e: Mapping[str, Any]) -> str:
            lo, hi = e["ci95"]
            return f"{data.points(lo)} to {data.points(hi)}"

        return [Col("baseline", [data.clean(e["mode_a"]) for e in es]),
                Col("passed", [f"{e['passed_a']}/{e['trials_a']}" for e in es], right=True),
                Col("mode", [data.clean(e["mode_b"]) for e in es]),
                Col("passed", [f"{e['passed_b']}/{e['trials_b']}" for e in es], right=True),
                Col("Δ", [f"{data.points(e['diff'])} pts" for e in es], right=True),
                Col("95% CI", [ci(e) for e in es], right=True, drop=1),
                Col("p", [p_text(e["p_value"]) for e in es], right=True)]

    title = Text("Help modes (does --help help?)", style="italic")
    note = Text(HELP_MODE_NOTE, style="dim")
    names = data.agent_names(results)
    models = [data.clean(names.get(e["agent"], e["agent"])) for e in effects]
    cols = [Col("agent · model", models, name=True), *figures(effects)]
    longest = max(map(len, models))
    (room,) = name_widths(width, [col_width(c) for c in cols[1:]], [longest])
    if room >= min(longest, NAME_MIN):  # every figure and a readable name on one line
        return Group(title, fitted_table(cols, width), note)
    parts: list[Any] = [title]
    for model in dict.fromkeys(models):
        mine = [e for e, m in zip(effects, models, strict=True) if m == model]
        parts += [Text(model, style="bold"), fitted_table(figures(mine), width)]
    return Group(*parts, note)


def model_table(results: RunResults, width: int) -> Any:
    from rich.text import Text

    rows = data.model_rows(results)
    cols = [Col("agent · model", [data.clean(r["label"]) for r in rows], name=True),
            Col("pass rate", [f"{r['passed']}/{r['trials']} {data.pct(r.get('pass_rate'))}"
                              for r in rows], right=True),
            Col("95% CI", [data.ci_text(r.get("ci95")) for r in rows], right=True)]
    # Narrow terminals lose $/success, then pass@k, then tokens; the total cost goes last.
    if data.shows_pass_k(rows):
        cols.append(Col("pass@k / pass^k", [data.pass_k_text(r) for r in rows], right=True,
                        drop=3))
    cols.append(Col("tokens in/out", [f"{data.count(r['tokens']['input'])}/"
                                      f"{data.count(r['tokens']['output'])}" for r in rows],
                    right=True, drop=2))
    cols.append(Col("$ total", [data.usd(r.get("cost_usd")) for r in rows], right=True,
                    drop=1))
    cols.append(Col("$/success", [data.usd(r.get("cost_per_success")) for r in rows],
                    right=True, drop=4))
    if any(r.get("threshold") is not None for r in rows):
        cols.append(Col("threshold", [threshold_text(r, Text) for r in rows], right=True))
    return fitted_table(cols, width, title="Models", title_justify="left")


def threshold_text(row: Mapping[str, Any], text_cls: Any) -> Any:
    th, met = row.get("threshold"), row.get("met")
    if th is None:
        return text_cls("–")
    word = "met" if met else "MISSED"
    return text_cls(f"{th:g}% {word}", style="green" if met else "bold red")


def print_summary(results: RunResults, console: Console) -> None:
    """Print the task and model tables and the headline to `console`."""
    from rich.text import Text

    width = console.width
    if results.get("trials"):
        console.print(task_table(results, width))
        console.print()
        console.print(model_table(results, width))
        console.print()
        if results.get("help_modes"):
            console.print(help_mode_table(results, width))
            console.print()
        for note in results.get("notes") or []:  # e.g. why oracle ran no help modes
            console.print(Text(f"note: {data.clean(note)}", style="dim"))
        if why := reasons_text(results):
            console.print(why)
            console.print()
    for line in rate_limit_lines(results):
        console.print(Text(data.clean(line), style="dim"))
    console.print(headline_text(results))


def rate_limit_lines(results: RunResults) -> list[str]:
    """One line per endpoint whose calls were refused or had to wait for a slot (the
    adaptive limit of model calls in flight; summary.rate_limit)."""
    lines = []
    for endpoint, r in (results.get("summary", {}).get("rate_limit") or {}).items():
        if not (r.get("refused") or r.get("waited")):
            continue
        limit = (f"limit {r.get('lowest_limit')}..{r.get('final_limit')} of {r.get('cap')}"
                 if r.get("adaptive", True) else f"fixed limit {r.get('cap')}")
        lines.append(f"rate limit: {endpoint}: {r.get('calls')} calls, {r.get('refused')} "
                     f"refused (429/overload), {r.get('waited')} waited for a slot "
                     f"({r.get('wait_s', 0):.1f}s in all), at most {r.get('max_in_flight')} "
                     f"in flight, {limit}")
    return lines


MAX_REASONS = 5  # trials whose reason `proctor run` prints; `proctor show --failed` has all


def reasons_text(results: RunResults) -> Any:
    """"why: TRIAL: reason" for the first trials that did not pass (None when all did)."""
    from rich.text import Text

    bad = [t for t in results.get("trials") or [] if data.status_of(t) in ("fail", "error")]
    if not bad:
        return None
    out = Text()
    for t in bad[:MAX_REASONS]:
        out.append("why: ", style=f"bold {STATUS_STYLE[data.status_of(t)]}")
        out.append(f"{data.clean(t.get('id'))}: ", style="bold")
        out.append(data.cut(data.clean(t.get("reason") or t.get("error") or "(no reason "
                                       "recorded)"), 300) + "\n")
    if len(bad) > MAX_REASONS:
        out.append(f"… and {len(bad) - MAX_REASONS} more\n", style="dim")
    out.rstrip()
    return out
