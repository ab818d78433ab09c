"""The pages of `proctor view` (view.py serves them): the runs, searchable and filtered by
suite, agent, model, outcome and date, under their pass rate over time (view_trend.py); a
suite's pass rate per agent over time; two runs compared. Plain HTML from the server, no script: filters are a GET form, so a filtered list
is a link too."""

from __future__ import annotations

import html
from datetime import date
from typing import Any
from urllib.parse import quote

from proctor.report import data
from proctor.report.view_runs import Line, RunRow
from proctor.report.view_trend import COLORS, Series, stamp, trend_svg
from proctor.store import shown

OUTCOMES = ("passed", "failed", "errored", "running", "interrupted", "unfinished")

CSS = """
:root{--bg:#fff;--fg:#1d2330;--muted:#6b7280;--line:#e5e7eb;--panel:#f8fafc;--accent:#4f6bed}
@media (prefers-color-scheme:dark){:root{--bg:#0f1420;--fg:#e5e7eb;--muted:#9ca3af;
--line:#273043;--panel:#151c2c;--accent:#7c93ff}}
body{margin:0 auto;max-width:1280px;padding:24px;background:var(--bg);color:var(--fg);
font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif}
h1{font-size:22px;margin:0 0 12px}a{color:var(--accent)}.muted{color:var(--muted)}
table{border-collapse:collapse;width:100%}th,td{padding:6px 8px;text-align:left;
border-bottom:1px solid var(--line);vertical-align:top}th{white-space:nowrap}
.n{text-align:right;font-variant-numeric:tabular-nums}code{font:12px ui-monospace,Menlo,monospace}
.passed{color:#16a34a}.failed{color:#dc2626}.errored{color:#d97706;font-weight:600}
.interrupted,.running,.unfinished{color:#9333ea}
svg{width:100%;height:auto;background:var(--panel);border:1px solid var(--line);border-radius:10px}
svg text{fill:var(--fg);font-size:11px}svg .axis{fill:var(--muted)}svg .grid{stroke:var(--line)}
svg .change{stroke:var(--muted);stroke-dasharray:4 3}
.legend span{display:inline-block;margin-right:14px}.legend i{display:inline-block;width:12px;
height:12px;border-radius:3px;margin-right:5px;vertical-align:-1px}
form.filters{display:flex;flex-wrap:wrap;gap:8px;align-items:end;margin:0 0 12px;
background:var(--panel);border:1px solid var(--line);border-radius:10px;padding:10px}
form.filters label{display:flex;flex-direction:column;font-size:12px;color:var(--muted)}
form.filters input,form.filters select{font:inherit;padding:4px 6px;border:1px solid var(--line);
border-radius:6px;background:var(--bg);color:var(--fg)}form.filters input[type=search]{width:16em}
td.lines div,#runs td:first-child code{white-space:nowrap}svg.trend{max-width:1000px;display:block}
details.chart{margin:0 0 12px}details.chart summary{cursor:pointer;font-weight:600;margin:0 0 6px}
"""


def e(value: Any) -> str:
    return html.escape(data.clean(value), quote=True)


def q(run_id: Any) -> str:
    """A run id inside a link: one path segment, escaped for the URL and the attribute."""
    return html.escape(quote(str(run_id), safe=""), quote=True)


def page(title: str, body: str) -> bytes:
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{e(title)}</title><style>{CSS}</style></head><body>{body}"
            "</body></html>\n").encode()


# ---- the runs -------------------------------------------------------------------------------


def _day(value: str) -> date | None:
    try:
        return date.fromisoformat(value)
    except ValueError:
        return None


def keeps(row: RunRow, f: dict[str, str]) -> bool:
    """Whether a run passes the index's filters (each empty one keeps everything)."""
    if f.get("suite") and row.suite_key != f["suite"]:
        return False
    if f.get("agent") and all(line.agent != f["agent"] for line in row.lines):
        return False
    if f.get("model") and all(line.model != f["model"] for line in row.lines):
        return False
    if f.get("status") and row.outcome != f["status"]:
        return False
    when = row.when.date() if row.when else None
    since, until = _day(f.get("since", "")), _day(f.get("until", ""))
    if (since or until) and when is None:
        return False
    if when is not None and ((since and when < since) or (until and when > until)):
        return False
    text = f.get("q", "").strip().lower()
    if text:
        hay = " ".join([row.run_id, row.suite_name, row.dir, row.outcome,
                        *(line.title for line in row.lines)]).lower()
        return all(word in hay for word in text.split())
    return True


def _select(name: str, label: str, options: list[tuple[str, str]], chosen: str) -> str:
    opts = "".join(f'<option value="{e(v)}"{" selected" if v == chosen else ""}>{e(t)}</option>'
                   for v, t in options)
    return (f'<label>{label}<select name="{name}"><option value="">all</option>{opts}'
            "</select></label>")


def _filters(rows: list[RunRow], f: dict[str, str]) -> str:
    suites = sorted({(r.suite_key, r.suite_name) for r in rows}, key=lambda s: s[1])
    agents = sorted({line.agent for r in rows for line in r.lines if line.agent != "?"})
    models = sorted({line.model for r in rows for line in r.lines if line.model})
    return (
        '<form class="filters" method="get" action="/">'
        f'<label>search<input type="search" name="q" value="{e(f.get("q", ""))}" '
        'placeholder="run, suite, agent, model, directory"></label>'
        + _select("suite", "suite", [(k, n) for k, n in suites], f.get("suite", ""))
        + _select("agent", "agent", [(a, a) for a in agents], f.get("agent", ""))
        + _select("model", "model", [(m, m) for m in models], f.get("model", ""))
        + _select("status", "outcome", [(o, o) for o in OUTCOMES], f.get("status", ""))
        + f'<label>from<input type="date" name="since" value="{e(f.get("since", ""))}"></label>'
        f'<label>to<input type="date" name="until" value="{e(f.get("until", ""))}"></label>'
        '<button type="submit">filter</button> <a href="/">clear</a></form>')


def _counts(r: RunRow) -> str:
    if r.trials is None:
        return ""
    bits = [f'<span class="passed">{r.passed}/{r.trials}</span>']
    if r.failed:
        bits.append(f'<span class="failed">{r.failed} failed</span>')
    if r.errored:
        bits.append(f'<span class="errored">{r.errored} errored</span>')
    return " · ".join(bits)


def _lines_cell(r: RunRow) -> str:
    return "".join(f"<div>{e(line.title)} <span class=muted>{line.passed}/{line.trials}</span>"
                   "</div>" for line in r.lines) or "–"


MAX_LINES = len(COLORS)  # lines on the index's chart (those run last); filters pick others


def index_chart(rows: list[RunRow]) -> str:
    """The runs shown, as pass rate over time: one line per suite × agent × model."""
    lines: dict[tuple[str, str], Series] = {}
    for r in sorted(rows, key=stamp):
        for line in r.lines:
            if r.when is not None and line.trials:
                key = (r.suite_key, line.label)
                lines.setdefault(key, Series(f"{r.suite_name} · {line.title}")).points.append(
                    (r, line))
    if not lines:
        return ""
    series = sorted(lines.values(), key=lambda s: -stamp(s.points[-1][0]))[:MAX_LINES]
    runs = list({id(r): r for s in series for r, _ in s.points}.values())
    more = len(lines) - len(series)
    note = (f' <span class="muted">(the {len(series)} lines run last; {more} more: pick a '
            "suite, agent or model above)</span>" if more else "")
    return (f'<details class="chart" open><summary>Pass rate over time <span class="muted">per '
            f"suite × agent × model</span>{note}</summary>"
            + trend_svg(runs, series, aria="pass rate per suite, agent and model over time",
                        changes=False, plot_h=150) + "</details>")


def index_page(rows: list[RunRow], where: str, f: dict[str, str]) -> bytes:
    if not rows:
        return page("proctor runs", f"<h1>proctor runs</h1><p class=muted>No runs in "
                                    f"{e(where)} yet.</p>")
    shown_rows = [r for r in rows if keeps(r, f)]
    out = [f"<h1>proctor runs <span class=muted>({len(shown_rows)} of {len(rows)}, {e(where)})"
           f"</span></h1>{_filters(rows, f)}{index_chart(shown_rows)}"
           '<table id="runs"><thead><tr><th>run</th><th>started</th><th>outcome</th>'
           '<th>trials</th><th>agent · model</th><th>suite</th><th>directory</th>'
           "</tr></thead><tbody>"]
    for r in shown_rows:
        outcome = r.outcome + (" (deleted)" if r.gone else "")
        run_link = (e(r.run_id) if r.gone else
                    f'<a href="/runs/{q(r.run_id)}/">{e(r.run_id)}</a>')
        out.append(
            f'<tr data-outcome="{e(r.outcome)}"><td><code>{run_link}</code></td>'
            f"<td>{e(r.started_at.replace('T', ' ')[:19])}</td>"
            f'<td class="{e(r.outcome)}">{e(outcome)}</td><td>{_counts(r)}</td>'
            f'<td class="lines">{_lines_cell(r)}</td>'
            f'<td><a href="/suites/{q(r.suite_key)}">{e(r.suite_name)}</a></td>'
            f'<td><code class="muted">{e(shown(r.dir))}</code></td></tr>')
    if not shown_rows:
        out.append('<tr><td colspan="7" class="muted">No run matches these filters.</td></tr>')
    out.append("</tbody></table><p class=muted>errored: some trial could not be judged (a "
               "provider, a service or a check failed), apart from failed: the agent did not "
               "do the task. A suite's link shows each agent's pass rate over time.</p>")
    return page("proctor runs", "".join(out))


# ---- a suite over time ----------------------------------------------------------------------


def suite_page(runs: list[RunRow]) -> bytes:
    """A suite's runs, newest first: each agent's pass rate (a line per agent and model),
    each run against the one before it."""
    labels: dict[str, str] = {}
    for r in reversed(runs):
        for line in r.lines:
            labels.setdefault(line.label, line.title)
    head = "".join(f'<th class="n">{e(t)}</th>' for t in labels.values())
    rows = []
    for i, r in enumerate(runs):  # newest first: each against the run before it
        by: dict[str, Line] = {line.label: line for line in r.lines}
        cells = "".join(
            f'<td class="n">{by[k].passed}/{by[k].trials} {data.pct(by[k].rate)}'
            + (f' <span class="errored">{by[k].errored} errored</span>' if by[k].errored else "")
            + "</td>" if k in by else '<td class="n muted">–</td>' for k in labels)
        older = runs[i + 1] if i + 1 < len(runs) else None
        changed = older is not None and older.suite_version != r.suite_version
        vs = (f'<a href="/compare/{q(older.run_id)}/{q(r.run_id)}">vs previous</a>'
              + (' <span class="muted">(suite changed)</span>' if changed else "")
              if older is not None else "")
        rows.append(f'<tr><td><code><a href="/runs/{q(r.run_id)}/">{e(r.run_id)}</a></code></td>'
                    f'<td class="{e(r.outcome)}">{e(r.outcome)}</td>{cells}<td>{vs}</td></tr>')
    series = [Series(title, [(r, line) for r in runs for line in r.lines if line.label == k])
              for k, title in labels.items()]
    chart = trend_svg(runs, series, aria="pass rate per agent over time")
    files = ", ".join(shown(s) for s in runs[0].specs) or "(no specs)"
    body = (f'<p><a href="/">all runs</a></p><h1>{e(runs[0].suite_name)} <span class="muted">'
            f"pass rate per agent over time ({len(runs)} runs)</span></h1>"
            f'<p class="muted">{e(files)}</p>{chart}'
            f"<table><thead><tr><th>run</th><th>outcome</th>{head}<th></th></tr></thead>"
            f"<tbody>{''.join(rows)}</tbody></table>"
            '<p class="muted">A line follows one agent on one model; it breaks where the '
            "suite's files or task selection changed (a dashed rule).</p>")
    return page(f"proctor: {runs[0].suite_name}", body)


def compare_page(run_a: str, run_b: str, res: Any, pairs: dict[int, str] | None = None
                 ) -> bytes:
    """`proctor compare A B` as a page: did pass rates change beyond chance? `pairs`: a
    task row's link to a trial of A beside one of B."""
    mark = {"regression": '<b class="failed">REGRESSION</b>',
            "improvement": '<b class="passed">improved</b>'}
    out = [f'<p><a href="/">all runs</a></p><h1>compare <a href="/runs/{q(run_a)}/">{e(run_a)}'
           f'</a> → <a href="/runs/{q(run_b)}/">{e(run_b)}</a></h1>'
           f"<p>{len(res.regressions)} significant regression(s), {len(res.improvements)} "
           f"improvement(s) <span class=muted>(Fisher's exact test, two-sided, Holm-adjusted, "
           f"alpha {res.alpha:g}; docs/reports.md)</span></p>"]
    for title, comparisons in (("Models", res.models), ("Tasks", res.tasks)):
        if not comparisons:
            continue
        out.append(f"<h2>{title}</h2><table><thead><tr><th></th><th class=n>A</th>"
                   "<th class=n>B</th><th class=n>difference (95% CI)</th>"
                   "<th class=n>p (Holm)</th><th></th></tr></thead><tbody>")
        for i, c in enumerate(comparisons):
            lo, hi = c.diff_ci
            label = f"{c.task_label} · {c.label}" if c.task_id else c.label
            pair = (pairs or {}).get(i) if comparisons is res.tasks else None
            beside = f' <a href="{pair}">side by side</a>' if pair else ""
            out.append(f"<tr><td>{e(label)}</td><td class=n>{c.passed_a}/{c.n_a}</td>"
                       f"<td class=n>{c.passed_b}/{c.n_b}</td><td class=n>{data.points(c.diff)} "
                       f"pts ({data.points(lo)} to {data.points(hi)})</td>"
                       f"<td class=n>{c.p_adj:.3f}</td><td>{mark.get(c.flag, '')}{beside}</td>"
                       "</tr>")
        out.append("</tbody></table>")
    for label, names in (("Only in A", res.only_a), ("Only in B", res.only_b)):
        if names:
            out.append(f"<p class=muted>{label}: {e(', '.join(names))}</p>")
    return page(f"compare {run_a} → {run_b}", "".join(out))


def error_page(status: int, text: str) -> bytes:
    return page(f"{status}", f'<p><a href="/">all runs</a></p><h1>{status}</h1><p>{e(text)}</p>')
