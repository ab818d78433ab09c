"""The trial pages of `proctor view` (view.py serves them):

* `/runs/RUN/trials/TRIAL/`: one trial on a page of its own — a link to keep or send — with
  its verdict, why, checks, output and trajectory, and previous / next through the run's
  trials, failing ones first (then errored, then passed; in the run's order within each);
* `/runs/RUN/trials/TRIAL/vs/RUN2/TRIAL2`: two trials of one task side by side (two agents
  or two models in one run, or the same one before and after), each one's verdict, checks
  and trajectory in a column; a trial's page lists the trials it can be set beside.

The trial's detail is report.html's (html.trial_detail) and its trajectory is drawn by the
report's script from the same document, so a trial reads the same on its page as in the
report."""

from __future__ import annotations

import html as _html
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from proctor.report import data, trajectory, trajectory_assets
from proctor.report.charts import e
from proctor.report.html import island, trial_detail
from proctor.report.html_assets import CSS as REPORT_CSS
from proctor.report.view_runs import RunRow
from proctor.results import TrialRecord

RANK = {"fail": 0, "error": 1, "pass": 2}  # the order of next / previous: failing first
MAX_OTHER_RUNS = 5  # earlier runs of the suite whose trials of the task are offered

CSS = """
nav.top{margin:0 0 10px}nav.pager{display:flex;gap:12px;align-items:center;margin:6px 0 14px;
padding:6px 10px;background:var(--panel);border:1px solid var(--line);border-radius:10px}
nav.pager .pos{flex:1;text-align:center;color:var(--muted)}nav.pager .off{color:var(--muted)}
h1 code{font-size:18px}.facts{color:var(--muted);margin:2px 0 8px}
.pair{display:grid;grid-template-columns:1fr 1fr;gap:16px;align-items:start;margin-top:16px}
.pair>.col{min-width:0;background:var(--panel);border:1px solid var(--line);border-radius:10px;
padding:10px 12px}.pair h2{margin:0 0 4px;font-size:16px;overflow-wrap:anywhere}
ul.others{margin:4px 0;padding-left:18px}ul.others li{margin:2px 0}
table.verdicts td,table.verdicts th{white-space:nowrap}table.verdicts td.msg{white-space:normal;
width:40%}body.wide{max-width:none}.pair table.checks :is(th,td):is(:nth-child(2),:nth-child(5),
:nth-child(6)){display:none}
"""

# Draws each `[data-doc]` element's trajectory from the page's `trajectories` island.
DRAW = r"""
(function(){var el=document.getElementById('trajectories');
var docs=el?JSON.parse(el.textContent):[];
document.querySelectorAll('[data-doc]').forEach(function(col){var box=col.querySelector('.traj');
if(!box)return;var b=docs[+col.dataset.doc];if(!b){box.textContent='No trace recorded.';return;}
if(typeof DecompressionStream==='undefined'){box.textContent='This browser cannot unpack '+
'the trajectory (it needs DecompressionStream).';return;}
var bin=atob(b),u=new Uint8Array(bin.length);for(var i=0;i<bin.length;i++)u[i]=bin.charCodeAt(i);
new Response(new Blob([u]).stream().pipeThrough(new DecompressionStream('gzip'))).text()
.then(JSON.parse).then(function(d){if(d&&d.items)Traj.draw(box,d,col.dataset.id);
else box.textContent='No trace recorded.';},function(err){
box.textContent='Could not unpack the trajectory: '+err;});});
document.addEventListener('keydown',function(ev){if(ev.altKey||ev.ctrlKey||ev.metaKey)return;
var t=ev.target;if(t&&/^(INPUT|TEXTAREA|SELECT)$/.test(t.tagName))return;
var rel=ev.key==='ArrowLeft'||ev.key==='p'?'prev':ev.key==='ArrowRight'||ev.key==='n'?'next':'';
var a=rel&&document.querySelector('nav.pager a[rel='+rel+']');if(a)location.href=a.href;});
})();
"""


@dataclass
class Picked:
    """A trial and the run it is in."""

    row: RunRow
    run: data.Run
    trial: TrialRecord

    @property
    def id(self) -> str:
        return str(self.trial.get("id"))


def seg(value: Any) -> str:
    """One path segment of a link: escaped for the URL and the attribute (`=`, `:`, `@`,
    `+` and `,` kept: trial ids such as `refund-order.db=mysql.r0` read as they are)."""
    return _html.escape(quote(str(value), safe="=:@+,"), quote=True)


def trial_href(run_id: str, trial_id: Any) -> str:
    return f"/runs/{seg(run_id)}/trials/{seg(trial_id)}/"


def pair_href(a: Picked, b_run: str, b_trial: Any) -> str:
    return f"{trial_href(a.row.run_id, a.id)}vs/{seg(b_run)}/{seg(b_trial)}"


def ordered(trials: Sequence[TrialRecord]) -> list[TrialRecord]:
    """The run's trials as next / previous walk them: failed, errored, passed (stable)."""
    return sorted(trials, key=lambda t: RANK.get(data.status_of(t), 1))


def first_trial(trials: Sequence[TrialRecord]) -> TrialRecord | None:
    """Where walking a run's trials starts: its first failing trial (or first at all)."""
    return min(trials, key=lambda t: RANK.get(data.status_of(t), 1), default=None)


def _shell(title: str, body: str, docs: list[str | None], cls: str = "") -> bytes:
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{e(title)}</title><style>{REPORT_CSS}{trajectory_assets.CSS}{CSS}</style>"
            f'</head><body class="{cls}">{body}{island("trajectories", docs)}'
            f"<script>{trajectory_assets.JS}{DRAW}</script></body></html>\n").encode()


def _doc(p: Picked) -> str | None:
    """The trial's trajectory document at the largest size a page takes."""
    rec = trajectory.recorded([p.trial], p.run.dir)
    return trajectory.embedded([p.trial], rec, trajectory.SHARE_MAX)[0] if rec[0] else None


def _label(t: Mapping[str, Any]) -> str:
    """`claude-code · mock/x [injected] · replica 1`: what sets a trial apart in its task."""
    extra = [x for x in (t.get("help_mode"), data.params_text(t.get("params"))) if x]
    return (data.row_label(t) + (f" [{', '.join(extra)}]" if extra else "")
            + f" · replica {int(t.get('replica') or 0)}")


def _badge(t: Mapping[str, Any]) -> str:
    s = data.status_of(t)
    return f'<span class="badge {s}">{s}</span>'


def _facts(t: Mapping[str, Any]) -> str:
    tokens = t.get("tokens") or {}
    return (f'<div class="facts">score {float(t.get("composite_score") or 0.0):.2f} · '
            f'{int(t.get("turns") or 0)} turns · tokens {data.count(tokens.get("input"))} in / '
            f'{data.count(tokens.get("output"))} out · {e(data.usd(t.get("cost_usd")))} · '
            f'{data.seconds(float(t.get("duration_s") or 0.0))}</div>')


def _detail(p: Picked, doc: int) -> str:
    t = p.trial
    params = data.params_text(t.get("params")) if t.get("params") else ""
    traced = trajectory.recorded([t], p.run.dir)[0] is not None
    body = trial_detail(t, data.row_label(t), params, traced, data.reason(t),
                        base=f"/runs/{seg(p.row.run_id)}/", page=False)
    return f'<div class="trial" data-doc="{doc}" data-id="{e(p.id)}">{body}</div>'


def _run_links(row: RunRow) -> str:
    suite = (f' · suite <a href="/suites/{seg(row.suite_key)}">{e(row.suite_name)}</a>'
             if row.suite_key else "")
    return (f'<nav class="top"><a href="/">all runs</a> · run <a href="/runs/{seg(row.run_id)}/">'
            f"<code>{e(row.run_id)}</code></a>{suite}</nav>")


def _pager(p: Picked) -> str:
    walk = ordered(p.run.trials)
    at = next(i for i, t in enumerate(walk) if t.get("id") == p.trial.get("id"))

    def link(i: int, rel: str, arrow: str) -> str:
        if not 0 <= i < len(walk):
            return f'<span class="off">{arrow} {"first" if rel == "prev" else "last"}</span>'
        t = walk[i]
        text = f"{e(t.get('id'))} {_badge(t)}"
        inner = f"{arrow} {text}" if rel == "prev" else f"{text} {arrow}"
        return (f'<a rel="{rel}" href="{trial_href(p.row.run_id, t.get("id"))}" '
                f'title="{rel}: {e(t.get("id"))} (keys ← →)">{inner}</a>')

    failing = sum(1 for t in walk if data.status_of(t) != "pass")
    return (f'<nav class="pager">{link(at - 1, "prev", "←")}<span class="pos">trial {at + 1} '
            f"of {len(walk)} · failing first ({failing} not passed)</span>"
            f'{link(at + 1, "next", "→")}</nav>')


def _others(p: Picked, earlier: Sequence[tuple[RunRow, Sequence[TrialRecord]]]) -> str:
    """The trials this one can be set beside: its task's other trials in this run, then in
    earlier runs of the suite (one per agent, model and conditions; failing first)."""
    task = p.trial.get("task_id")
    here = [t for t in ordered(p.run.trials) if t.get("task_id") == task and t is not p.trial]
    out = []
    if here:
        out.append("<h4>This task in this run</h4><ul class=others>" + "".join(
            f'<li><a href="{pair_href(p, p.row.run_id, t.get("id"))}">{e(_label(t))}</a> '
            f"{_badge(t)}</li>" for t in here) + "</ul>")
    for row, trials in earlier:
        seen: set[tuple[Any, ...]] = set()
        picks = []
        for t in ordered(trials):
            key = data.condition(t)
            if t.get("task_id") == task and key not in seen:
                seen.add(key)
                picks.append(t)
        if picks:
            out.append(f"<h4>In run <code>{e(row.run_id)}</code> <span class=muted>"
                       f"({e(row.started_at.replace('T', ' ')[:16])})</span></h4><ul class=others>"
                       + "".join(f'<li><a href="{pair_href(p, row.run_id, t.get("id"))}">'
                                 f"{e(_label(t))}</a> {_badge(t)}</li>" for t in picks)
                       + "</ul>")
    if not out:
        return ""
    return ('<section id="beside"><h2>Side by side with <span class="muted">(another trial of '
            f"task {e(task)})</span></h2>{''.join(out)}</section>")


def trial_page(p: Picked, earlier: Sequence[tuple[RunRow, Sequence[TrialRecord]]] = ()
               ) -> bytes:
    """A trial on its own page: where it is, previous / next, its verdict and detail, and
    the trials it can be compared with."""
    t = p.trial
    body = (f"{_run_links(p.row)}{_pager(p)}<h1>trial <code>{e(p.id)}</code> {_badge(t)}</h1>"
            f"<p>{e(data.task_label(t))} · <b>{e(data.row_label(t))}</b></p>{_facts(t)}"
            f"{_detail(p, 0)}{_others(p, earlier)}")
    return _shell(f"{p.id} · proctor run {p.row.run_id}", body, [_doc(p)])


def _verdicts(a: Picked, b: Picked) -> str:
    """Each check by name, A's result beside B's: where the two trials part."""
    ca = {str(c.get("name")): c for c in a.trial.get("checks") or []}
    cb = {str(c.get("name")): c for c in b.trial.get("checks") or []}
    names = [*ca, *(n for n in cb if n not in ca)]
    if not names:
        return ""

    def cell(c: Mapping[str, Any] | None) -> str:
        if c is None:
            return '<td class="muted">–</td><td></td>'
        ok = bool(c.get("passed"))
        msg = "" if ok else e(data.one_line(c.get("message") or "failed", 160))
        return (f'<td><span class="badge {"pass" if ok else "fail"}">{"pass" if ok else "fail"}'
                f'</span></td><td class="msg">{msg}</td>')

    rows = "".join(f"<tr><td><code>{e(n)}</code></td>{cell(ca.get(n))}{cell(cb.get(n))}</tr>"
                   for n in names)
    return ('<h2>Checks, side by side</h2><div class="scroll"><table class="verdicts grid-table">'
            "<thead><tr><th>check</th><th colspan=2>A</th><th colspan=2>B</th></tr></thead>"
            f"<tbody>{rows}</tbody></table></div>")


def _column(p: Picked, side: str, doc: int) -> str:
    t = p.trial
    return (f'<div class="col" id="side-{side.lower()}"><h2>{side}: {e(data.row_label(t))} '
            f'{_badge(t)}</h2><div class="facts">run <a href="/runs/{seg(p.row.run_id)}/">'
            f'<code>{e(p.row.run_id)}</code></a> · trial <a href="{trial_href(p.row.run_id, p.id)}">'
            f"<code>{e(p.id)}</code></a></div>{_facts(t)}{_detail(p, doc)}</div>")


def compared_pairs(res: Any, row_a: RunRow, row_b: RunRow, trials_a: Sequence[TrialRecord],
                   trials_b: Sequence[TrialRecord]) -> dict[int, str]:
    """For `/compare/A/B`'s task rows: each row's first trial in A beside its first in B
    (failing first), as a link; {index in res.tasks: href}."""
    who_a, who_b = res.cross_model or (None, None)

    def first(trials: Sequence[TrialRecord], c: Any, who: str | None) -> TrialRecord | None:
        for t in ordered(trials):
            if (t.get("task_id") == c.task_id and data.who(t) == (who or c.label)
                    and (who is not None or t.get("help_mode") == c.help_mode)
                    and dict(t.get("params") or {}) == c.params):
                return t
        return None

    out = {}
    for i, c in enumerate(res.tasks):
        ta, tb = first(trials_a, c, who_a), first(trials_b, c, who_b)
        if ta is not None and tb is not None:
            out[i] = (f"{trial_href(row_a.run_id, ta.get('id'))}vs/{seg(row_b.run_id)}/"
                      f"{seg(tb.get('id'))}")
    return out


def pair_page(a: Picked, b: Picked) -> bytes:
    """Two trials side by side: each one's verdict, checks and trajectory in a column."""
    ta, tb = a.trial.get("task_id"), b.trial.get("task_id")
    same = ta == tb
    title = f"task {e(ta)}" if same else f"tasks {e(ta)} and {e(tb)}"
    warn = "" if same else ('<div class="banner">These trials are of two different tasks: '
                            "their checks need not match.</div>")
    swap = pair_href(b, a.row.run_id, a.id)
    body = (f'<nav class="top"><a href="/">all runs</a> · <a href="{swap}">swap sides</a></nav>'
            f"<h1>Side by side <span class=muted>{title}</span></h1>{warn}{_verdicts(a, b)}"
            f'<div class="pair">{_column(a, "A", 0)}{_column(b, "B", 1)}</div>')
    return _shell(f"{a.id} vs {b.id}", body, [_doc(a), _doc(b)], cls="wide")
