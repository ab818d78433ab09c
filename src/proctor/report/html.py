"""report.html: one self-contained page (inline CSS, JS and SVG; nothing fetched) to read a run.

Charts are SVG drawn here, so the page works offline, in CI artifact viewers and with scripts
off; the small script only sorts, filters and expands the trial table. Every string from the
run goes through `e()`: agent output is untrusted, and a Content-Security-Policy forbids any
network access even if something slipped through."""

from __future__ import annotations

import html
import json
import math
from collections import Counter
from pathlib import Path
from typing import Any
from urllib.parse import quote

from proctor.report import data, trajectory
from proctor.report.html_assets import CSS, JS
from proctor.stats import quantile

OUTPUT_LIMIT = 4000
MESSAGE_LIMIT = 2000
STATUS_COLOR = {"pass": "var(--pass)", "fail": "var(--fail)", "error": "var(--error)",
                "flaky": "var(--flaky)"}


def e(value: Any, limit: int | None = None) -> str:
    """Escaped text (also safe inside a quoted attribute)."""
    s = data.clean(value) if limit is None else data.cut(value, limit)
    return html.escape(s, quote=True)


def _num(x: float) -> str:
    return f"{x:.1f}".rstrip("0").rstrip(".")


# ---- charts (SVG) ---------------------------------------------------------------------------


def chart_models(rows: list[dict[str, Any]]) -> str:
    """Horizontal bars: pass rate per model, whiskers for the 95% CI, a tick for thresholds."""
    left, plot, right, row_h, top = 230, 440, 60, 30, 22
    height = top + row_h * len(rows) + 8
    names = data.short_labels([data.clean(r["label"]) for r in rows], 34)
    width = left + plot + right
    out = [f'<svg viewBox="0 0 {width} {height}" role="img" aria-label="pass rate per model">']
    for p in (0, 25, 50, 75, 100):
        x = left + plot * p / 100
        out.append(f'<line x1="{_num(x)}" y1="{top - 4}" x2="{_num(x)}" y2="{height - 6}" '
                   f'class="grid"/><text x="{_num(x)}" y="{top - 8}" class="axis" '
                   f'text-anchor="middle">{p}%</text>')
    for i, r in enumerate(rows):
        y = top + i * row_h
        rate = float(r.get("pass_rate") or 0.0)
        lo, hi = (list(r.get("ci95") or (0.0, 1.0)) + [0.0, 1.0])[:2]
        label = data.clean(r["label"])
        cy = y + row_h / 2
        out.append(f'<g><title>{e(label)}: {data.pct(rate)} ({r["passed"]}/{r["trials"]}), '
                   f'95% CI {data.ci_text((lo, hi))}</title>')
        out.append(f'<text x="{left - 8}" y="{_num(cy + 4)}" text-anchor="end" '
                   f'class="label">{e(names[label])}</text>')
        out.append(f'<rect x="{left}" y="{_num(y + 7)}" width="{_num(plot * rate)}" '
                   f'height="{row_h - 14}" rx="3" class="bar"/>')
        x1, x2 = left + plot * lo, left + plot * hi
        out.append(f'<path d="M{_num(x1)} {_num(cy)}H{_num(x2)}M{_num(x1)} {_num(cy - 6)}'
                   f'V{_num(cy + 6)}M{_num(x2)} {_num(cy - 6)}V{_num(cy + 6)}" class="whisker"/>')
        th = r.get("threshold")
        if th is not None:
            tx = left + plot * min(100.0, max(0.0, float(th))) / 100
            cls = "thr met" if r.get("met") else "thr missed"
            out.append(f'<path d="M{_num(tx)} {y + 3}V{y + row_h - 3}" class="{cls}"/>')
        out.append(f'<text x="{left + plot + 8}" y="{_num(cy + 4)}" class="value">'
                   f'{data.pct(rate)}</text></g>')
    out.append("</svg>")
    return "".join(out)


def _histogram(counts: list[int], labels: list[str], colors: list[str], title: str) -> str:
    left, plot_w, plot_h, top, bottom = 34, 420, 120, 14, 34
    width, height = left + plot_w + 10, top + plot_h + bottom
    peak = max(counts) if counts and max(counts) else 1
    n = max(1, len(counts))
    bw = plot_w / n
    out = [f'<svg viewBox="0 0 {width} {height}" role="img" aria-label="{e(title)}">']
    # Whole trials on the y axis: 0, about half the peak, the peak (no "219.5").
    for tick in sorted({0, peak // 2, peak} if peak >= 2 else {0, peak}):
        y = top + plot_h * (1 - tick / peak)
        out.append(f'<line x1="{left}" y1="{_num(y)}" x2="{left + plot_w}" y2="{_num(y)}" '
                   f'class="grid"/><text x="{left - 6}" y="{_num(y + 4)}" class="axis" '
                   f'text-anchor="end">{tick}</text>')
    for i, c in enumerate(counts):
        h = plot_h * c / peak
        x = left + i * bw
        out.append(f'<g><title>{e(labels[i])}: {c} trial{"s" if c != 1 else ""}</title>'
                   f'<rect x="{_num(x + 2)}" y="{_num(top + plot_h - h)}" '
                   f'width="{_num(max(bw - 4, 1))}" height="{_num(h)}" rx="2" '
                   f'style="fill:{colors[i]}"/></g>')
    step = max(1, math.ceil(n / 6))
    for i in range(0, n, step):
        out.append(f'<text x="{_num(left + i * bw + bw / 2)}" y="{top + plot_h + 16}" '
                   f'class="axis" text-anchor="middle">{e(labels[i])}</text>')
    out.append("</svg>")
    return "".join(out)


def chart_scores(trials: list[dict[str, Any]]) -> str:
    counts = [0] * 10
    for t in trials:
        s = min(1.0, max(0.0, float(t.get("composite_score") or 0.0)))
        counts[min(9, int(s * 10))] += 1
    labels = [f"{i / 10:.1f}–{(i + 1) / 10:.1f}" for i in range(10)]
    colors = [f"hsl({12 * i + 6} 62% 50%)" for i in range(10)]
    return _histogram(counts, labels, colors, "composite score distribution")


def _nice_step(span: float, bins: int = 10) -> float:
    raw = span / bins if span > 0 else 1.0
    mag = 10 ** math.floor(math.log10(raw))
    return next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)


def _axis_seconds(x: float, places: int) -> str:
    if x >= 60:
        return data.seconds(x)  # 16m40s
    text = f"{x:.{places}f}"
    return (text.rstrip("0").rstrip(".") if "." in text else text) + "s"


def chart_durations(trials: list[dict[str, Any]]) -> str:
    durations = [float(t.get("duration_s") or 0.0) for t in trials]
    step = _nice_step(max(durations, default=0.0))
    n = max(1, math.floor(max(durations, default=0.0) / step) + 1)
    counts = [0] * n
    for d in durations:
        counts[min(n - 1, int(d // step))] += 1
    # As many decimals as the step needs: 0.025 s bins read 0s 0.025s 0.05s, not 0s 0s 0.1s.
    places = max(0, -math.floor(math.log10(step) + 1e-9)) + (1 if f"{step:g}"[-1] == "5" else 0)
    labels = [_axis_seconds(i * step, places) for i in range(n)]
    return _histogram(counts, labels, ["var(--accent)"] * n, "trial duration distribution")


def heat_map(results: dict[str, Any]) -> str:
    """Tasks down, models across; each cell coloured by pass rate, labelled with counts."""
    rows = data.task_rows(results)
    models: dict[Any, str] = {}
    for r in rows:
        models.setdefault(r.get("model"), r["label"])
    tasks: dict[Any, dict[Any, dict[str, Any]]] = {}
    for r in rows:
        tasks.setdefault(r["task_label"], {})[r.get("model")] = r
    out = ['<div class="scroll"><table class="heat"><thead><tr><th>task</th>']
    # Whole names, wrapped at any character: two long names that share a start stay apart.
    out += [f'<th class="model" title="{e(label)}">{e(label)}</th>' for label in models.values()]
    out.append("</tr></thead><tbody>")
    for task, cells in tasks.items():
        out.append(f'<tr><th scope="row">{e(task)}</th>')
        for m in models:
            r = cells.get(m)
            if r is None:
                out.append('<td class="none">–</td>')
                continue
            rate = float(r.get("pass_rate") or 0.0)
            status = r.get("status") or ""
            badge = (f' <span class="badge {e(status)}">{e(status)}</span>'
                     if status in ("flaky", "error") else "")
            k = data.pass_k_text(r)
            k_line = f'<br><small class="k">{e(k)}</small>' if k != "–" else ""
            out.append(f'<td class="cell" style="--h:{round(120 * rate)}" '
                       f'data-cell="{e(data.cell_key(r))}" '
                       f'data-label="{e(task)} · {e(r["label"])}" '
                       f'title="{e(task)} · {e(r["label"])}: {r["passed"]}/{r["trials"]} passed, '
                       f'status {e(status or "–")}, verdict {e(data.verdict_text(r))}, '
                       f'pass@k / pass^k {e(k)}">'
                       f'{data.pct(rate)} '
                       f'<small>{r["passed"]}/{r["trials"]}</small>{badge}{k_line}</td>')
        out.append("</tr>")
    out.append("</tbody></table></div>")
    return "".join(out)


# ---- tables ---------------------------------------------------------------------------------


def models_table(results: dict[str, Any]) -> str:
    out = ['<div class="scroll"><table class="grid-table"><thead><tr><th>model</th>'
           '<th class="n">passed</th><th class="n">pass rate</th><th class="n">95% CI</th>'
           '<th class="n">threshold</th><th class="n">avg turns</th><th class="n">tokens in</th>'
           '<th class="n">tokens out</th><th class="n">$ total</th><th class="n">$ / success</th>'
           '<th class="n">pass@k / pass^k</th></tr></thead><tbody>']
    for r in data.model_rows(results):
        th = r.get("threshold")
        met = ("–" if th is None else
               f'{_num(float(th))}% <span class="badge {"pass" if r.get("met") else "fail"}">'
               f'{"met" if r.get("met") else "missed"}</span>')
        turns = r.get("avg_turns")
        out.append(
            f'<tr><td>{e(r["label"])}</td><td class="n">{r["passed"]}/{r["trials"]}</td>'
            f'<td class="n">{data.pct(r.get("pass_rate"), 1)}</td>'
            f'<td class="n">{data.ci_text(r.get("ci95"))}</td><td class="n">{met}</td>'
            f'<td class="n">{"–" if turns is None else f"{turns:.1f}"}</td>'
            f'<td class="n">{data.count(r["tokens"]["input"])}</td>'
            f'<td class="n">{data.count(r["tokens"]["output"])}</td>'
            f'<td class="n">{e(data.usd(r.get("cost_usd")))}</td>'
            f'<td class="n">{e(data.usd(r.get("cost_per_success")))}</td>'
            f'<td class="n">{e(data.pass_k_text(r))}</td></tr>')
    out.append("</tbody></table></div>")
    return "".join(out)


def _checks_table(t: dict[str, Any]) -> str:
    checks = t.get("checks") or []
    if not checks:
        return '<p class="muted">No checks ran.</p>'
    out = ['<table class="checks"><thead><tr><th>check</th><th>type</th><th>result</th>'
           '<th class="n">score</th><th class="n">weight</th><th>gate</th><th>message</th>'
           "</tr></thead><tbody>"]
    for c in checks:
        ok = bool(c.get("passed"))
        out.append(
            f'<tr class="{"ok" if ok else "bad"}"><td><code>{e(c.get("name"))}</code></td>'
            f'<td>{e(c.get("type"))}</td>'
            f'<td><span class="badge {"pass" if ok else "fail"}">{"pass" if ok else "fail"}'
            f'</span></td><td class="n">{float(c.get("score") or 0.0):.2f}</td>'
            f'<td class="n">{_num(float(c.get("weight", 1.0) or 0.0))}</td>'
            f'<td>{"gate" if c.get("gate") else ""}</td>'
            f'<td><pre class="msg">{e(c.get("message"), MESSAGE_LIMIT)}</pre></td></tr>')
    out.append("</tbody></table>")
    return "".join(out)


def _forbidden(t: dict[str, Any]) -> str:
    rules = t.get("forbidden") or []
    if not rules:
        return ""
    items = "".join(
        f'<li><span class="badge {"fail" if f.get("violated") else "pass"}">'
        f'{"violated" if f.get("violated") else "ok"}</span> <code>{e(f.get("rule"))}</code>'
        f'{" — " + e(f.get("details"), MESSAGE_LIMIT) if f.get("details") else ""}</li>'
        for f in rules)
    return f"<h4>Forbidden rules</h4><ul class=\"rules\">{items}</ul>"


INLINE_DETAILS = 1000  # above this many trials, details travel compressed (a smaller DOM)


def _trial_body(t: dict[str, Any], columns: int, index: int, traced: bool,
                details: list[str] | None) -> str:
    """A trial's row and its detail; with `details`, the detail goes there (to be embedded
    compressed and drawn when the row is opened) instead of into the page."""
    status = data.status_of(t)
    model = data.model_label(t.get("model"), [t])
    tokens = t.get("tokens") or {}
    known = [int(v) for v in (tokens.get("input"), tokens.get("output")) if v is not None]
    score = float(t.get("composite_score") or 0.0)
    duration = float(t.get("duration_s") or 0.0)
    cost = t.get("cost_usd")
    params = data.params_text(t.get("params"))
    attrs = {
        "id": t.get("id"), "task": t.get("task_id"), "model": model, "status": status,
        "score": f"{score:.4f}", "turns": str(int(t.get("turns") or 0)), "tokens": str(sum(known)) if known else "",
        "cost": "" if cost is None else f"{float(cost):.6f}", "duration": f"{duration:.3f}",
        "cell": data.cell_key(t),
    }
    data_attrs = " ".join(f'data-{k}="{e(v)}"' for k, v in attrs.items())
    tid = data.clean(t.get("id"))
    link = quote(tid, safe="")
    detail = [f'<div class="meta">task <b>{e(t.get("task_id"))}</b> · model <b>{e(model)}</b>']
    if t.get("help_mode"):
        detail.append(f' · help mode <b>{e(t.get("help_mode"))}</b>')
    if params:
        detail.append(f" · params <code>{e(params)}</code>")
    detail.append(f' · replica {int(t.get("replica") or 0)}')
    if t.get("agent"):
        detail.append(f' · agent {e(t.get("agent"))}')
    detail.append(f' · <a href="trials/{link}/trace.jsonl">trace</a> · '
                  f'<a href="trials/{link}/audit.jsonl">audit</a></div>')
    if t.get("error"):
        detail.append(f'<h4>Error</h4><pre class="err">{e(t.get("error"), MESSAGE_LIMIT)}</pre>')
    detail.append("<h4>Checks</h4>" + _checks_table(t) + _forbidden(t))
    if t.get("output"):
        detail.append(f'<h4>Agent output</h4><pre class="out">{e(t.get("output"), OUTPUT_LIMIT)}'
                      "</pre>")
    detail.append('<h4>Trajectory</h4>' + (
        '<div class="traj"><p class="muted">Unpacking… (this needs JavaScript; the trace '
        'link above has it all)</p></div>' if traced else
        '<p class="muted">No trace recorded.</p>'))
    if details is not None:
        details.append("".join(detail))
    return (
        f'<tbody {data_attrs} data-i="{index}"><tr class="trial">'
        f'<td><button class="toggle" aria-expanded="false">▸</button> '
        f"<code>{e(tid)}</code></td>"
        f"<td>{e(t.get('task_id'))}</td><td>{e(model)}</td>"
        f'<td><span class="badge {status}">{status}</span></td>'
        f'<td class="n">{score:.2f}</td><td class="n">{int(t.get("turns") or 0)}</td>'
        f'<td class="n">{data.count(tokens.get("input"))} / {data.count(tokens.get("output"))}</td>'
        f'<td class="n">{e(data.usd(cost))}</td><td class="n">{data.seconds(duration)}</td></tr>'
        + ("" if details is not None else
           f'<tr class="detail"><td colspan="{columns}">{"".join(detail)}</td></tr>')
        + "</tbody>"
    )


def trials_table(results: dict[str, Any], traced: list[bool] | None = None,
                 details: list[str] | None = None) -> str:
    trials = results.get("trials") or []
    traced = traced or [False] * len(trials)
    heads = [("id", "trial", "text"), ("task", "task", "text"), ("model", "model", "text"),
             ("status", "status", "text"), ("score", "score", "num"), ("turns", "turns", "num"),
             ("tokens", "tokens in / out", "num"), ("cost", "cost", "num"),
             ("duration", "duration", "num")]
    models = sorted({data.model_label(t.get("model"), [t]) for t in trials})
    statuses = Counter(data.status_of(t) for t in trials)
    controls = (
        '<div class="controls"><input id="q" type="search" placeholder="filter trials…" '
        'aria-label="filter trials"><select id="fstatus" aria-label="status">'
        '<option value="">all statuses</option>'
        + "".join(f'<option value="{s}">{s} ({statuses[s]})</option>'
                  for s in ("pass", "fail", "error") if statuses[s])
        + '</select><select id="fmodel" aria-label="model"><option value="">all models</option>'
        + "".join(f'<option value="{e(m)}">{e(m)}</option>' for m in models)
        + '</select><span class="chip" id="fcell" hidden>heat-map cell <b></b>'
        '<button type="button" title="show all trials" aria-label="clear">✕</button></span>'
        + f'<span class="muted"><span id="shown">{len(trials)}</span> of {len(trials)} '
        "shown · click a row for its checks and trajectory</span></div>"
    )
    head = "".join(
        f'<th data-key="{k}" data-type="{kind}" class="{"n" if kind == "num" else ""}" '
        f'tabindex="0">{label}</th>' for k, label, kind in heads)
    bodies = "".join(_trial_body(t, len(heads), i, traced[i], details)
                     for i, t in enumerate(trials))
    return (f'{controls}<div class="scroll"><table id="trials" class="grid-table">'
            f"<thead><tr>{head}</tr></thead>{bodies}</table></div>")


MAX_GROUPS = 100  # failing-check groups listed in the page; the rest are counted


def triage(results: dict[str, Any]) -> str:
    """Failing checks grouped by task, model and check, most frequent first; each names an
    example trial that opens in the table below."""
    groups = sorted(data.failure_groups(results), key=lambda g: -g["failed"])
    if not groups:
        return ""
    out = [f'<section><h2>Failing checks <span class="muted">'
           f'({sum(g["failed"] for g in groups)} in {len(groups)} groups)</span></h2>'
           '<ul class="triage">']
    for g in groups[:MAX_GROUPS]:
        t, c = g["trial"], g["check"]
        model = f' · {e(data.model_label(g["model"], [t]))}' if g["model"] else ""
        gate = ", gate" if c.get("gate") else ""
        tid = data.clean(t.get("id"))
        out.append(
            f'<li><b>{e(g["task_id"])}</b>{model} · <code>{e(c.get("name"))}</code> '
            f'<span class="muted">({e(c.get("type"))}{gate})</span> failed in '
            f'<b>{g["failed"]} of {g["trials"]}</b> trials: {e(c.get("message") or "failed", 300)}'
            f' <span class="muted">e.g.</span> <a href="#" data-show-trial="{e(tid)}">'
            f'<code>{e(tid)}</code></a></li>')
    if len(groups) > MAX_GROUPS:
        out.append(f'<li class="muted">… and {len(groups) - MAX_GROUPS} more groups</li>')
    out.append("</ul></section>")
    return "".join(out)


# ---- the page -------------------------------------------------------------------------------


def _meta(results: dict[str, Any], run: dict[str, Any]) -> str:
    bits = []
    for label, value in (("started", results.get("started_at")),
                         ("finished", results.get("finished_at"))):
        if value:
            bits.append(f"{label} {e(value)}")
    versions = run.get("versions")
    if isinstance(versions, dict) and versions.get("proctor"):
        bits.append(f"proctor {e(versions.get('proctor'))}")
        bits += [e(f"{k[4:]} {v}", 80) for k, v in versions.items() if k.startswith("cli ")]
    host = run.get("host")
    if isinstance(host, dict):
        host = host.get("hostname") or host.get("name")
    if host:
        bits.append(f"host {e(host)}")
    specs = run.get("paths")  # run.json: the spec paths the run was given
    if isinstance(specs, list) and specs:
        names = ", ".join(data.clean(s if isinstance(s, str) else s.get("path", s))
                          for s in specs[:5])
        more = f" +{len(specs) - 5}" if len(specs) > 5 else ""
        bits.append(f"specs {e(names)}{more}")
    return " · ".join(bits)


def _cards(results: dict[str, Any]) -> str:
    h = data.headline(results)
    cards = [("trials", str(h["trials"]), ""), ("passed", str(h["passed"]), "pass"),
             ("failed", str(h["failed"]), "fail" if h["failed"] else ""),
             ("errored", str(h["errored"]), "error" if h["errored"] else ""),
             ("pass rate", data.pct(h["pass_rate"], 1), "")]
    out = "".join(f'<div class="card {cls}"><div class="k">{k}</div><div class="v">{v}</div>'
                  f"</div>" for k, v, cls in cards)
    out += (f'<div class="card"><div class="k">95% CI</div>'
            f'<div class="v small">{data.ci_text(h["ci95"])}</div></div>')
    return f'<div class="cards">{out}</div>'


def _trajectories(blocks: list[str]) -> str:
    """The encoded trajectory blocks as one JSON array (trajectory.blocks). Base64 and JSON
    punctuation only, so nothing in it can close the element."""
    if not blocks:
        return ""
    return (f'<script type="application/json" id="trajectories" data-chunk="{trajectory.CHUNK}">'
            + json.dumps(blocks, separators=(",", ":")) + "</script>")


def render_html(results: dict[str, Any], run: dict[str, Any] | None = None,
                run_dir: Path | None = None) -> str:
    """The whole report page; with `run_dir`, each trial's trajectory is embedded."""
    run = run or {}
    trials = results.get("trials") or []
    traced = trajectory.recorded(trials, Path(run_dir) if run_dir else None)
    details: list[str] | None = [] if len(trials) > INLINE_DETAILS else None
    model_rows = data.model_rows(results)
    missed = [r for r in model_rows if r.get("met") is False]
    banner = ""
    if data.headline(results)["incomplete"]:
        banner += ('<div class="banner">Incomplete run: it was interrupted or trials are '
                   "missing; only finished trials are counted.</div>")
    if note := data.not_isolated(results):
        banner += f'<div class="banner">Not isolated: {e(note)}.</div>'

    if missed:
        banner += ('<div class="banner">Threshold missed: '
                  + ", ".join(f"<b>{e(r['label'])}</b> ({data.pct(r.get('pass_rate'))} &lt; "
                              f"{_num(float(r['threshold']))}%)" for r in missed) + "</div>")
    durations = [float(t.get("duration_s") or 0.0) for t in trials]
    med, p90 = quantile(durations, 0.5), quantile(durations, 0.9)
    run_id = e(results.get("run_id") or run.get("run_id") or "")
    body = f"""
<header><h1>proctor <span class="muted">run</span> {run_id}</h1>
<p class="muted">{_meta(results, run)}</p></header>
{_cards(results)}{banner}
<section class="charts">
<figure class="wide"><figcaption>Pass rate by model <span class="muted">(bars: pass rate; whiskers: 95%
Wilson CI; tick: threshold)</span></figcaption>{chart_models(model_rows)}</figure>
<figure><figcaption>Composite score <span class="muted">(trials per score bin)</span>
</figcaption>{chart_scores(trials)}</figure>
<figure><figcaption>Duration <span class="muted">(median {data.seconds(med)}, p90
{data.seconds(p90)})</span></figcaption>{chart_durations(trials)}</figure>
</section>
<section><h2>Tasks × models</h2>{heat_map(results)}</section>
<section><h2>Models</h2>{models_table(results)}</section>
{triage(results)}
<section><h2>Trials</h2>{trials_table(results, [d is not None for d in traced], details)}</section>
<footer class="muted">Written by proctor. Pass rates count every repeat and replica as one
trial; intervals are 95% Wilson score intervals.</footer>"""
    before = (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">"
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>proctor run {run_id}</title><style>{CSS}</style>"
        "<noscript><style>tr.detail{display:table-row!important}.toggle{display:none}</style>"
        f"</noscript></head><body>{body}"
    )
    after = f"<script>{JS}</script></body></html>\n"
    # The trajectories get what is left of the page's target size (see trajectory.py).
    budget = max(trajectory.BUDGET_MIN,
                 trajectory.PAGE_TARGET - len(before.encode()) - len(after))
    return before + _trajectories(trajectory.blocks(trials, traced, budget, details)) + after
