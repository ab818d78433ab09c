"""report.html: one self-contained page (inline CSS, JS and SVG; nothing fetched) to read a run.

Charts are SVG drawn here, so the page works offline, in CI artifact viewers and with scripts
off; the small script only sorts, filters and expands the trial table. Every string from the
run goes through `e()`: agent output is untrusted, and a Content-Security-Policy forbids any
network access even if something slipped through."""

from __future__ import annotations

import base64
import gzip
import json
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any
from urllib.parse import quote

from proctor.report import data, trajectory, trajectory_assets
from proctor.report.charts import chart_durations, chart_models, chart_scores, e, num
from proctor.report.html_assets import CSS, JS
from proctor.report.labels import gist
from proctor.report.triage import errors, triage
from proctor.results import RunResults
from proctor.stats import quantile

OUTPUT_LIMIT = 4000
MESSAGE_LIMIT = 2000
STATUS_COLOR = {"pass": "var(--pass)", "fail": "var(--fail)", "error": "var(--error)",
                "flaky": "var(--flaky)"}


def breakable(name: Any) -> str:
    """A model name that wraps after its `/` and `-` before anywhere mid-word."""
    return e(name).replace("/", "/<wbr>")


# What `quote(x, safe="")` leaves as it is: most trial ids, quoted by nothing else.
_UNRESERVED = re.compile(r"[A-Za-z0-9_.~-]*")
MAX_HEAT_TASKS = 500  # rows of the heat map; a larger run shows the tasks needing a look
ATTENTION = {"error": 0, "flaky": 1, "fail": 2}


def heat_map(results: RunResults) -> str:
    """Tasks down, models across; each cell coloured by pass rate, labelled with counts."""
    rows = data.task_rows(results)
    models: dict[Any, str] = {}
    for row in rows:  # one column per agent under test (agent · model)
        models.setdefault(data.who(row), row["label"])
    tasks: dict[Any, dict[Any, dict[str, Any]]] = {}
    for row in rows:
        tasks.setdefault(row["task_label"], {})[data.who(row)] = row
    hidden = 0
    if len(tasks) > MAX_HEAT_TASKS:  # the tasks needing a look first; the table has them all
        order = sorted(tasks, key=lambda k: min(ATTENTION.get(str(c.get("status")), 3)
                                                for c in tasks[k].values()))
        hidden = len(order) - MAX_HEAT_TASKS
        tasks = {k: tasks[k] for k in order[:MAX_HEAT_TASKS]}
    out = ['<div class="scroll"><table class="heat"><thead><tr><th>task</th>']
    # Whole names, wrapped at any character: two long names that share a start stay apart.
    out += [f'<th class="model" title="{e(label)}">{breakable(label)}</th>'
            for label in models.values()]
    out.append("</tr></thead><tbody>")
    names = {m: e(label) for m, label in models.items()}
    for task, cells in tasks.items():
        task_html = e(task)
        out.append(f'<tr><th scope="row">{task_html}</th>')
        for m in models:
            r = cells.get(m)
            if r is None:
                out.append('<td class="none">–</td>')
                continue
            rate = float(r.get("pass_rate") or 0.0)
            status = e(r.get("status") or "")
            badge = (f' <span class="badge {status}">{status}</span>'
                     if status in ("flaky", "error") else "")
            k = data.pass_k_text(r)
            k_line = f'<br><small class="k">{k}</small>' if k != "–" else ""
            label = f"{task_html} · {names[m]}"
            out.append(f'<td class="cell" style="--h:{round(120 * rate)}" '
                       f'data-cell="{e(data.cell_key(r))}" data-label="{label}" '
                       f'title="{label}: {r["passed"]}/{r["trials"]} passed, '
                       f'status {status or "–"}, verdict {e(data.verdict_text(r))}, '
                       f'pass@k / pass^k {k}">{data.pct(rate)} '
                       f'<small>{r["passed"]}/{r["trials"]}</small>{badge}{k_line}</td>')
        out.append("</tr>")
    out.append("</tbody></table></div>")
    if hidden:
        out.append(f'<p class="muted">… and {hidden} more tasks (those needing a look come '
                   "first; the trial table below has every trial)</p>")
    return "".join(out)


# ---- tables ---------------------------------------------------------------------------------


def models_table(results: RunResults) -> str:
    out = ['<div class="scroll"><table class="grid-table"><thead><tr><th>agent · model</th>'
           '<th class="n">passed</th><th class="n">pass rate</th><th class="n">95% CI</th>'
           '<th class="n">threshold</th><th class="n">avg turns</th><th class="n">tokens in</th>'
           '<th class="n">tokens out</th><th class="n">$ total</th><th class="n">$ / success</th>'
           '<th class="n">pass@k / pass^k</th></tr></thead><tbody>']
    for r in data.model_rows(results):
        th = r.get("threshold")
        met = ("–" if th is None else
               f'{num(float(th))}% <span class="badge {"pass" if r.get("met") else "fail"}">'
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


def help_modes(results: RunResults) -> str:
    """Does --help help? Per model, each help mode against the baseline (the suite's first):
    both pass rates, the difference with its 95% CI (also drawn) and Fisher's exact p."""
    effects = results.get("help_modes") or []
    notes = "".join(f'<p class="muted">note: {e(n)}</p>' for n in results.get("notes") or [])
    if not effects:
        return f"<section>{notes}</section>" if notes else ""
    out = ['<section><h2>Help modes <span class="muted">(does --help help?)</span></h2>'
           '<div class="scroll"><table class="grid-table" id="help-modes"><thead><tr>'
           '<th>agent · model</th><th>baseline</th><th class="n">passed</th><th>mode</th>'
           '<th class="n">passed</th><th class="n">Δ (points)</th><th class="n">95% CI of Δ</th>'
           '<th>−100 … 0 … +100</th><th class="n">p (Fisher)</th></tr></thead><tbody>']
    names = data.agent_names(results)
    for x in effects:
        lo, hi = x["ci95"]
        ra = x["passed_a"] / x["trials_a"] if x["trials_a"] else 0.0
        rb = x["passed_b"] / x["trials_b"] if x["trials_b"] else 0.0
        p = x["p_value"]
        out.append(
            f'<tr><td>{e(names.get(x["agent"], x["agent"]))}</td><td>{e(x["mode_a"])}</td>'
            f'<td class="n">{x["passed_a"]}/{x["trials_a"]} ({data.pct(ra)})</td>'
            f'<td>{e(x["mode_b"])}</td>'
            f'<td class="n">{x["passed_b"]}/{x["trials_b"]} ({data.pct(rb)})</td>'
            f'<td class="n">{data.points(x["diff"])}</td>'
            f'<td class="n">{data.points(lo)} to {data.points(hi)}</td>'
            f"<td>{_effect_svg(x['diff'], lo, hi)}</td>"
            f'<td class="n">{"&lt;0.001" if p < 0.001 else f"{p:.3f}"}</td></tr>')
    out.append('</tbody></table></div><p class="muted">Δ: the mode\'s pass rate minus the '
               "baseline's, in percentage points, over the tasks both ran; the interval is "
               "Newcombe's, the p-value Fisher's exact test (two-sided). An interval that "
               f"crosses 0 means the runs cannot tell.</p>{notes}</section>")
    return "".join(out)


def _effect_svg(diff: float, lo: float, hi: float) -> str:
    """A difference on a −100…+100 scale: a dot and its interval, coloured when the interval
    leaves 0 (better: green, worse: red)."""
    def x(v: float) -> str:
        return num(80 + 76 * max(-1.0, min(1.0, v)))

    cls = "up" if lo > 0 else ("down" if hi < 0 else "")
    return (f'<svg class="effect {cls}" viewBox="0 0 160 16" width="160" height="16" '
            f'role="img" aria-label="{data.points(diff)} points, 95% CI {data.points(lo)} to '
            f'{data.points(hi)}"><line x1="80" y1="1" x2="80" y2="15" class="grid"/>'
            f'<line x1="{x(lo)}" y1="8" x2="{x(hi)}" y2="8" class="ci"/>'
            f'<circle cx="{x(diff)}" cy="8" r="4"/></svg>')


def _checks_table(t: Mapping[str, Any]) -> str:
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
            f'<td class="n">{num(float(c.get("weight", 1.0) or 0.0))}</td>'
            f'<td>{"gate" if c.get("gate") else ""}</td>'
            f'<td><pre class="msg">{e(c.get("message"), MESSAGE_LIMIT)}</pre></td></tr>')
    out.append("</tbody></table>")
    return "".join(out)


def _forbidden(t: Mapping[str, Any]) -> str:
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
DETAILS_CHUNK = 50  # trials per compressed block of details
WHY_LIMIT = 300  # characters of a trial's reason in its table row


@dataclass
class _Columns:
    """The trial table's optional columns: only when some trial has a value."""

    help_mode: bool
    params: bool
    # The run's one agent, named in the column's head (its cells give the model alone, as
    # narrow as before); None with several agents: each cell says `agent · model`.
    agent: str | None = None

    @classmethod
    def of(cls, trials: Sequence[Mapping[str, Any]]) -> _Columns:
        agents = {t.get("agent") or "llm" for t in trials}
        one = agents.pop() if len(agents) == 1 and all(t.get("model") for t in trials) else None
        return cls(any(t.get("help_mode") for t in trials), any(t.get("params") for t in trials),
                   one)

    def label(self, t: Mapping[str, Any]) -> str:
        return str(t.get("model")) if self.agent else data.row_label(t)

    @cached_property
    def count(self) -> int:
        """How many columns (every row's colspan)."""
        return len(self.heads())

    def heads(self) -> list[tuple[str, str, str]]:
        who = f"{self.agent} · model" if self.agent else "agent · model"
        heads = [("id", "trial", "text"), ("task", "task", "text"), ("model", who, "text")]
        heads += [("help", "help mode", "text")] if self.help_mode else []
        heads += [("params", "params", "text")] if self.params else []
        return heads + [("status", "status", "text"), ("score", "score", "num"),
                        ("turns", "turns", "num"), ("tokens", "tokens in / out", "num"),
                        ("cost", "cost", "num"), ("duration", "duration", "num")]


def trial_detail(t: Mapping[str, Any], model: str, params: str, traced: bool, why: str,
                 base: str = "", page: bool = True) -> str:
    """A trial's meta line, why, checks, forbidden rules, output and trajectory box. `base`:
    where its run's report is (its trace links are relative to it); `page`: link the
    trial's own page (shown only when `proctor view` serves the report: `viewonly`)."""
    tid = data.clean(t.get("id"))
    link = tid if _UNRESERVED.fullmatch(tid) else quote(tid, safe="")
    detail = [f'<div class="meta">task <b>{e(t.get("task_id"))}</b> · <b>{e(model)}</b>']
    if t.get("help_mode"):
        detail.append(f' · help mode <b>{e(t.get("help_mode"))}</b>')
    if params:
        detail.append(f" · params <code>{e(params)}</code>")
    detail.append(f' · replica {int(t.get("replica") or 0)}')  # (the agent: in `model`)
    detail.append(f' · <a href="{base}trials/{link}/trace.jsonl">trace</a> · '
                  f'<a href="{base}trials/{link}/audit.jsonl">audit</a>')
    if page:
        detail.append(f'<span class="viewonly"> · <a href="{base}trials/{link}/">its own page'
                      "</a></span>")
    detail.append("</div>")
    if why:  # the trial's reason says whether it failed or errored ("failed: …", "agent error: …")
        detail.append(f'<p class="why"><b>Why:</b> {e(why, MESSAGE_LIMIT)}</p>')
    if t.get("error") and t.get("error") != why:
        detail.append(f'<h4>Error</h4><pre class="err">{e(t.get("error"), MESSAGE_LIMIT)}</pre>')
    detail.append("<h4>Checks</h4>" + _checks_table(t) + _forbidden(t))
    if t.get("output"):
        detail.append(f'<h4>Agent output</h4><pre class="out">{e(t.get("output"), OUTPUT_LIMIT)}'
                      "</pre>")
    detail.append('<h4>Trajectory</h4>' + (
        '<div class="traj"><p class="muted">Unpacking… (this needs JavaScript; the trace '
        'link above has it all)</p></div>' if traced else
        '<p class="muted">No trace recorded.</p>'))
    return "".join(detail)


def _trial_body(t: Mapping[str, Any], cols: _Columns, index: int, traced: bool,
                details: list[str] | None, labels: dict[Any, tuple[str, str, str, str]]) -> str:
    """A trial's row, its reason (a failed or errored trial: why, on one line) and its
    detail; with `details`, the detail goes there (to be embedded compressed and drawn when
    the row is opened) instead of into the page. `labels`: each model's label, escaped and
    breakable, and its `data.who`, worked out once per run (ten thousand rows share a few
    models)."""
    status = data.status_of(t)
    key = (t.get("agent"), t.get("model"))
    if key not in labels:
        label = data.row_label(t)
        labels[key] = (label, breakable(cols.label(t)), e(label), data.who(t))
    model, model_html, model_attr, who = labels[key]
    tokens = t.get("tokens") or {}
    tin, tout = tokens.get("input"), tokens.get("output")
    score = float(t.get("composite_score") or 0.0)
    duration = float(t.get("duration_s") or 0.0)
    cost = t.get("cost_usd")
    params = data.params_text(t.get("params")) if t.get("params") else ""
    help_mode = t.get("help_mode") or ""
    task, tid = e(t.get("task_id")), e(t.get("id"))
    cell = "␟".join((str(t.get("task_id")), who, help_mode, params))  # data.cell_key
    turns = int(t.get("turns") or 0)
    known = (tin or 0) + (tout or 0) if tin is not None or tout is not None else ""
    columns = cols.count
    why = data.reason(t)
    detail = trial_detail(t, model, params, traced, why)
    if details is not None:
        details.append(detail)
    return (
        f'<tbody data-id="{tid}" data-task="{task}" data-model="{model_attr}" '
        f'data-status="{status}" data-help="{e(help_mode)}" data-params="{e(params)}" '
        f'data-score="{score:.4f}" data-turns="{turns}" data-tokens="{known}" '
        f'data-cost="{"" if cost is None else f"{float(cost):.6f}"}" '
        f'data-duration="{duration:.3f}" data-cell="{e(cell)}" data-i="{index}">'
        f'<tr class="trial"><td><button class="toggle" aria-expanded="false">▸</button> '
        f"<code>{tid}</code></td><td>{task}</td><td>{model_html}</td>"
        + (f"<td>{e(help_mode)}</td>" if cols.help_mode else "")
        + (f"<td><code>{e(params)}</code></td>" if cols.params else "")
        + f'<td><span class="badge {status}">{status}</span></td>'
        f'<td class="n">{score:.2f}</td><td class="n">{turns}</td>'
        f'<td class="n">{data.count(tin)} / {data.count(tout)}</td>'
        f'<td class="n">{data.usd(cost)}</td><td class="n">{data.seconds(duration)}</td></tr>'
        + (f'<tr class="why {status}"><td colspan="{columns}">{e(gist(why, WHY_LIMIT))}</td></tr>'
           if why else "")
        + ("" if details is not None else
           f'<tr class="detail"><td colspan="{columns}">{detail}</td></tr>')
        + "</tbody>"
    )


def trials_table(results: RunResults, traced: list[bool] | None = None,
                 details: list[str] | None = None) -> str:
    return "".join(_trials_table_pieces(results, traced, details))


def _trials_table_pieces(results: RunResults, traced: list[bool] | None = None,
                         details: list[str] | None = None) -> list[str]:
    """`trials_table` in pieces: a trial's rows each (the page joins nothing this large)."""
    trials = results.get("trials") or []
    traced = traced or [False] * len(trials)
    cols = _Columns.of(trials)
    models = sorted({data.row_label(t) for t in trials})  # the filter: data-model's values
    statuses = Counter(data.status_of(t) for t in trials)
    controls = (
        '<div class="controls"><input id="q" type="search" placeholder="filter trials…" '
        'aria-label="filter trials"><select id="fstatus" aria-label="status">'
        '<option value="">all statuses</option>'
        + "".join(f'<option value="{s}">{s} ({statuses[s]})</option>'
                  for s in ("pass", "fail", "error") if statuses[s])
        + '</select><select id="fmodel" aria-label="agent · model"><option value="">all agents'
        ' · models</option>'
        + "".join(f'<option value="{e(m)}">{e(m)}</option>' for m in models)
        + '</select><span class="chip" id="fcell" hidden>heat-map cell <b></b>'
        '<button type="button" title="show all trials" aria-label="clear">✕</button></span>'
        + f'<span class="muted"><span id="shown">{len(trials)}</span> of {len(trials)} '
        "shown · click a row for its checks and trajectory</span></div>"
    )
    head = "".join(
        f'<th data-key="{k}" data-type="{kind}" class="c-{k}{" n" if kind == "num" else ""}" '
        f'tabindex="0">{label}</th>' for k, label, kind in cols.heads())
    labels: dict[Any, tuple[str, str, str, str]] = {}
    return [f'{controls}<div class="scroll"><table id="trials" class="grid-table">'
            f"<thead><tr>{head}</tr></thead>",
            *(_trial_body(t, cols, i, traced[i], details, labels)
              for i, t in enumerate(trials)),
            "</table></div>"]


# ---- the page -------------------------------------------------------------------------------


def _meta(results: RunResults, run: Mapping[str, Any]) -> str:
    bits = []
    for a in data.about(run)[:5]:  # the benchmarks: display name, category, links
        links = "".join(f' <a href="{e(u)}" rel="noopener noreferrer">{e(_host(u))}</a>'
                        for u in a["links"])
        cat = f" ({e(a['category'])})" if a["category"] else ""
        bits.append(f"<b>{e(a['name'])}</b>{cat}{links}")
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


def _host(url: str) -> str:
    return url.split("://", 1)[-1].split("/", 1)[0]


def _cards(results: RunResults) -> str:
    h = data.headline(results)
    cards = [("trials", str(h["trials"]), ""), ("passed", str(h["passed"]), "pass"),
             ("failed", str(h["failed"]), "fail" if h["failed"] else ""),
             ("errored", str(h["errored"]), "error" if h["errored"] else ""),
             ("pass rate", data.pct(h["pass_rate"], 1), "")]
    budget, not_run = data.budget(results)
    if budget:  # --max-cost: spend against budget, and what it left out
        cards.append(("spent of budget", f"${float(budget.get('cost_usd') or 0):.4f} / "
                      f"${float(budget.get('max_cost_usd') or 0):g}", "fail" if not_run else ""))
        if not_run:
            cards.append(("not run", str(not_run), "fail"))
    out = "".join(f'<div class="card {cls}"><div class="k">{k}</div><div class="v">{v}</div>'
                  f"</div>" for k, v, cls in cards)
    out += (f'<div class="card"><div class="k">95% CI</div>'
            f'<div class="v small">{data.ci_text(h["ci95"])}</div></div>')
    return f'<div class="cards">{out}</div>'


def island(name: str, items: list[str | None], chunk: int | None = None) -> str:
    """A JSON array of base64 strings (or nulls) in a data element: base64 and JSON
    punctuation only, so nothing in it can close the element."""
    return "".join(_island_parts(name, items, chunk))


def _island_parts(name: str, items: list[str | None], chunk: int | None = None) -> list[str]:
    """`island`'s text in pieces, for the page to join once (each copy of a 20 MB string
    is also 5,000 fresh pages to fault in)."""
    if not any(items):
        return []
    extra = f' data-chunk="{chunk}"' if chunk else ""
    # JSON by hand: base64 needs no escaping, and json.dumps of 25 MB of it is slow
    out = [f'<script type="application/json" id="{name}"{extra}>[']
    for i, b in enumerate(items):
        out.append(("," if i else "") + ("null" if b is None else f'"{b}"'))
    out.append("]</script>")
    return out


def _details_blocks(details: list[str]) -> list[str | None]:
    """A large run's trial details, DETAILS_CHUNK to a block, gzipped (fast: the blocks are
    made here, at every render)."""
    out: list[str | None] = []
    for i in range(0, len(details), DETAILS_CHUNK):
        raw = json.dumps(details[i:i + DETAILS_CHUNK], separators=(",", ":"),
                         ensure_ascii=False).encode()
        out.append(base64.b64encode(gzip.compress(raw, compresslevel=1, mtime=0)).decode())
    return out


def render_html(results: RunResults, run: Mapping[str, Any] | None = None,
                run_dir: Path | None = None) -> str:
    """The whole report page; with `run_dir`, each trial's trajectory is embedded."""
    return "".join(render_html_pieces(results, run, run_dir))


def render_html_pieces(results: RunResults, run: Mapping[str, Any] | None = None,
                       run_dir: Path | None = None) -> list[str]:
    """`render_html`'s page in pieces, for a writer to encode one at a time: the page whole
    is 25 MB of text held twice over (one non-ASCII character makes Python keep every
    character in two bytes, and encoding it makes a third copy)."""
    run = run or {}
    trials = results.get("trials") or []
    traced = trajectory.recorded(trials, Path(run_dir) if run_dir else None)
    details: list[str] | None = [] if len(trials) > INLINE_DETAILS else None
    model_rows = data.model_rows(results)
    missed = [r for r in model_rows if r.get("met") is False]
    banner = ""
    incomplete = data.headline(results)["incomplete"]
    title_state = " (incomplete)" if incomplete else ""  # the tab and the heading say it too
    if incomplete:
        banner += ('<div class="banner">Incomplete run: it was interrupted or trials are '
                   "missing; only finished trials are counted.</div>")
    if note := data.not_isolated(results):
        banner += f'<div class="banner">Not isolated: {e(note)}.</div>'

    if missed:
        banner += ('<div class="banner">Threshold missed: '
                  + ", ".join(f"<b>{e(r['label'])}</b> ({data.pct(r.get('pass_rate'))} &lt; "
                              f"{num(float(r['threshold']))}%)" for r in missed) + "</div>")
    durations = [float(t.get("duration_s") or 0.0) for t in trials]
    med, p90 = quantile(durations, 0.5), quantile(durations, 0.9)
    run_id = e(results.get("run_id") or run.get("run_id") or "")
    # A run with failures opens on them (what failed, where, the command, why), above the
    # charts; a run without has nothing there.
    failures = errors(results) + triage(results, Path(run_dir) if run_dir else None)
    body = f"""
<header><h1>proctor <span class="muted">run</span> {run_id}{title_state}</h1>
<p class="muted">{_meta(results, run)}</p></header>
{_cards(results)}{banner}
{failures}<section class="charts">
<figure class="wide"><figcaption>Pass rate by model <span class="muted">(bars: pass rate; whiskers: 95%
Wilson CI; tick: threshold)</span></figcaption>{chart_models(model_rows)}</figure>
<figure><figcaption>Composite score <span class="muted">(trials per score bin)</span>
</figcaption>{chart_scores(trials)}</figure>
<figure><figcaption>Duration <span class="muted">(median {data.seconds(med)}, p90
{data.seconds(p90)})</span></figcaption>{chart_durations(trials)}</figure>
</section>
<section><h2>Tasks × models</h2>{heat_map(results)}</section>
<section><h2>Models</h2>{models_table(results)}</section>
{help_modes(results)}
<section><h2>Trials</h2>"""
    table = _trials_table_pieces(results, [d is not None for d in traced], details)
    end = """</section>
<footer class="muted">Written by proctor. Pass rates count every repeat and replica as one
trial; intervals are 95% Wilson score intervals.</footer>"""
    head = (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">"
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>proctor run {run_id}{title_state}</title>"
        f"<style>{CSS}{trajectory_assets.CSS}</style>"
        "<noscript><style>tr.detail{display:table-row!important}.toggle{display:none}</style>"
        f"</noscript></head><body>{body}"
    )
    before = [head, *table, end]
    after = f"<script>{trajectory_assets.JS}{JS}</script></body></html>\n"
    carried = island("details", _details_blocks(details), DETAILS_CHUNK) if details else ""
    # The trajectories get what is left of the page's target size (see trajectory.py).
    budget = max(trajectory.BUDGET_MIN, trajectory.PAGE_TARGET - sum(map(_utf8_len, before))
                 - len(after) - len(carried))
    docs = trajectory.embedded(trials, traced, budget)
    return [*before, carried, *_island_parts("trajectories", docs), after]


def _utf8_len(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode())
