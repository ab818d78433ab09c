"""summary.md: a run summary for a CI job page (GitHub's $GITHUB_STEP_SUMMARY, GitLab notes).

Everything from a trial is untrusted: table cells are escaped so a `|` or `<script>` in agent
output stays text, and quoted output goes into fenced blocks whose fence is longer than any
backtick run inside. Long lists are capped: GitHub rejects a step summary over 1 MiB."""

from __future__ import annotations

import html
import re
from collections.abc import Mapping
from typing import Any

from proctor.report import data
from proctor.report.labels import gist
from proctor.results import RunResults

MAX_FAILURES = 50  # failing checks listed; the rest are counted
MAX_ERRORS = 30
MESSAGE_LIMIT = 500
ICON = {"pass": "✅ pass", "fail": "❌ fail", "flaky": "⚠️ flaky", "error": "💥 error"}

_INLINE_SPECIAL = re.compile(r"([\\`*_\[\]|~])")


def cell(text: Any, limit: int = 120) -> str:
    """Text safe inside a GFM table cell: one line, HTML and markdown punctuation escaped."""
    s = html.escape(data.one_line(text, limit), quote=False)
    return _INLINE_SPECIAL.sub(r"\\\1", s)


def code(text: Any, limit: int = 120) -> str:
    """An inline code span (not for table cells): no escapes work inside one, so the fence is
    longer than any backtick run in the text."""
    s = data.one_line(text, limit)
    longest = max((len(m) for m in re.findall(r"`+", s)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if s.startswith("`") or s.endswith("`") else ""
    return f"{fence}{pad}{s}{pad}{fence}"


def html_text(text: Any, limit: int = 150) -> str:
    """Text inside raw HTML (<summary>), where markdown escapes would show literally."""
    return html.escape(data.one_line(text, limit))


def code_block(text: Any, limit: int = MESSAGE_LIMIT) -> str:
    body = data.cut(text, limit)
    longest = max((len(m) for m in re.findall(r"`+", body)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}text\n{body}\n{fence}"


def _table(header: list[str], rows: list[list[str]], align: list[str]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join(align) + "|"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return out


def render_markdown(results: RunResults, run: Mapping[str, Any] | None = None,
                    run_dir: Any = None) -> str:
    """The whole summary as GitHub-flavoured markdown."""
    h = data.headline(results)
    run_id = results.get("run_id") or (run or {}).get("run_id") or "run"
    verdict = "✅" if h["trials"] and h["passed"] == h["trials"] else "❌"
    if h["incomplete"]:  # what finished may all have passed: the run did not
        verdict = "⏸️" if h["passed"] == h["trials"] else "❌"
    lines = [
        f"## {verdict} proctor run {code(run_id, 80)}"
        + (" (incomplete)" if h["incomplete"] else ""),
        "",
        f"**{h['passed']}/{h['trials']} trials passed** · {h['failed']} failed · "
        f"{h['errored']} errored · pass rate **{data.pct(h['pass_rate'])}** "
        f"(95% CI {data.ci_text(h['ci95'])})",
    ]
    for a in data.about(run or {})[:5]:
        cat = f" ({cell(a['category'], 60)})" if a["category"] else ""
        links = " · ".join(f"<{u}>" for u in a["links"])
        lines += ["", f"**{cell(a['name'], 80)}**{cat}" + (f" · {links}" if links else "")]
    budget, not_run = data.budget(results)
    if budget:
        lines += ["", f"**Budget**: ${float(budget.get('cost_usd') or 0):.4f} spent of "
                      f"${float(budget.get('max_cost_usd') or 0):g}"
                      + (f" · {not_run} trial(s) not run (resume with a larger `--max-cost`)"
                         if not_run else "")]
    if h["incomplete"]:
        lines += ["", "> ⚠️ **Incomplete run**: it was interrupted or trials are missing; "
                      "only finished trials are counted."]
    if h["not_isolated"]:
        lines += ["", f"> ⚠️ **Not isolated**: {h['not_isolated']}."]
    missed = [r for r in data.model_rows(results) if r.get("met") is False]
    if missed:
        names = ", ".join(code(r["label"], 60) for r in missed)
        lines += ["", f"**Threshold missed:** {names}"]

    lines += _models(results)
    lines += _help_modes(results)
    lines += [f"\n> note: {cell(n, 300)}" for n in results.get("notes") or []]
    lines += _tasks(results)
    lines += _failures(results) + _errors(results) + _reasons(results)
    return "\n".join(lines) + "\n"


def _models(results: RunResults) -> list[str]:
    """The models table: one row per agent and model."""
    lines = ["", "### Models", ""]
    rows = []
    mrows = data.model_rows(results)
    for r in mrows:
        th = r.get("threshold")
        met = "–" if th is None else f"{th:g}% {'✅' if r.get('met') else '❌'}"
        turns = r.get("avg_turns")
        rows.append([
            cell(r["label"]), f"{r['passed']}/{r['trials']}", data.pct(r.get("pass_rate")),
            data.ci_text(r.get("ci95")), met, "–" if turns is None else f"{turns:.1f}",
            data.count(r["tokens"]["input"]), data.count(r["tokens"]["output"]),
            data.usd(r.get("cost_usd")), data.usd(r.get("cost_per_success")),
        ] + ([data.pass_k_text(r)] if data.shows_pass_k(mrows) else []))
    pass_k = ["pass@k / pass^k"] if data.shows_pass_k(mrows) else []
    lines += _table(
        ["agent · model", "passed", "pass rate", "95% CI", "threshold", "avg turns", "tokens in",
         "tokens out", "$ total", "$ / success"] + pass_k,
        rows, [":--"] + ["--:"] * (9 + len(pass_k)),
    )
    return lines


def _tasks(results: RunResults) -> list[str]:
    """The tasks table: one row per task and agent · model."""
    lines = ["", "### Tasks", ""]
    task_rows = data.task_rows(results)
    verdicts = data.shows_verdicts(task_rows)
    with_pass_k = data.shows_pass_k(task_rows)
    rows = []
    for r in task_rows:
        row = [cell(r["task_label"]), cell(r["label"]), ICON.get(r.get("status") or "", "–")]
        if verdicts:
            row.append(cell(data.verdict_text(r)))
        rows.append(row + [f"{r['passed']}/{r['trials']}", data.pct(r.get("pass_rate"))]
                    + ([data.pass_k_text(r)] if with_pass_k else [])
                    + [data.seconds(r.get("avg_duration_s"))])
    header = ["task", "agent · model", "status"] + (["verdict"] if verdicts else [])
    numbers = (["passed", "pass rate"] + (["pass@k / pass^k"] if with_pass_k else [])
               + ["avg duration"])
    lines += _table(header + numbers, rows, [":--"] * len(header) + ["--:"] * len(numbers))
    return lines


def _reasons(results: RunResults) -> list[str]:
    """Why each trial that did not pass did not, one line each (results.json `reason`)."""
    bad = [t for t in results.get("trials") or [] if t.get("status") in ("fail", "error")]
    if not bad:
        return []
    out = ["", f"### Why trials did not pass ({len(bad)})", ""]
    for t in bad[:MAX_FAILURES]:
        why = t.get("reason") or t.get("error") or "(no reason recorded)"
        out.append(f"- {code(t.get('id'), 100)} ({t.get('status')}): {cell(why, 300)}")
    if len(bad) > MAX_FAILURES:
        out.append(f"- … and {len(bad) - MAX_FAILURES} more (see results.json)")
    return out


def _help_modes(results: RunResults) -> list[str]:
    """Does injecting `--help` help? Each mode against the baseline (the first), per model."""
    effects = results.get("help_modes") or []
    if not effects:
        return []
    names = data.agent_names(results)
    rows = [[cell(names.get(e["agent"], e["agent"])), cell(e["mode_a"]), f"{e['passed_a']}/{e['trials_a']}",
             cell(e["mode_b"]), f"{e['passed_b']}/{e['trials_b']}", data.diff_text(e),
             "<0.001" if e["p_value"] < 0.001 else f"{e['p_value']:.3f}"] for e in effects]
    return ["", "### Help modes (does `--help` help?)", ""] + _table(
        ["agent · model", "baseline", "passed", "mode", "passed", "Δ mode − baseline (95% CI)",
         "p (Fisher)"], rows, [":--", ":--", "--:", ":--", "--:", "--:", "--:"]) + [
        "", "Δ in percentage points over the tasks both modes ran; an interval crossing 0 "
        "means this run cannot tell."]


def _failures(results: RunResults) -> list[str]:
    """Failing checks grouped by task, model and check (data.failure_groups)."""
    trials = results.get("trials") or []
    groups = data.failure_groups(results)
    rules = [(t, f) for t in trials for f in data.violated_rules(t)]
    if not groups and not rules:
        return []
    out = ["", f"### Failing checks ({sum(g['failed'] for g in groups)})", ""]
    for g in groups[:MAX_FAILURES]:
        t, c, total = g["trial"], g["check"], g["trials"]
        where = f"**{cell(g['task_label'], 120)}**"
        where += f" · {cell(g['label'], 80)}"
        gate = ", gate" if c.get("gate") else ""
        out.append(f"- {where} · {code(c.get('name'), 80)} ({cell(c.get('type'), 40)}{gate}) "
                   f"failed in {g['failed']} of {total} trial{'s' if total != 1 else ''}: "
                   f"{cell(gist(c.get('message') or 'failed', 300), 300)} "
                   f"(e.g. {code(t.get('id'), 100)})")
    if len(groups) > MAX_FAILURES:
        out.append(f"- … and {len(groups) - MAX_FAILURES} more (see report.html or results.json)")
    if rules:
        out += ["", f"### Forbidden rules violated ({len(rules)})", ""]
        for t, f in rules[:MAX_FAILURES]:
            out.append(f"- {code(t.get('id'), 100)} · **{cell(f.get('rule'), 80)}**: "
                       f"{cell(f.get('details') or 'violated', 200)}")
        if len(rules) > MAX_FAILURES:
            out.append(f"- … and {len(rules) - MAX_FAILURES} more")
    return out


def _errors(results: RunResults) -> list[str]:
    """Errored trials grouped by error kind and cause (as report.html's errors section), each with where it
    happened, an example trial and its whole error in a collapsible block."""
    groups = data.error_groups(results)
    if not groups:
        return []
    n = sum(len(g["trials"]) for g in groups)
    out = ["", f"### Errors ({n})", ""]
    for g in groups[:MAX_ERRORS]:
        first = g["trials"][0]
        tasks = sorted(str(x) for x in g["tasks"])
        where = (tasks[0] if len(tasks) == 1 else f"{len(tasks)} tasks") + " · " + ", ".join(
            sorted(g["models"])[:3]) + ("…" if len(g["models"]) > 3 else "")
        count = f"{len(g['trials'])} trial{'s' if len(g['trials']) > 1 else ''}"
        kind = f"<code>{html_text(g['kind'], 20)}</code> " if g.get("kind") else ""
        out += [f"<details><summary>{kind}<b>{count}</b>: {html_text(g['cause'])} ({html_text(where)}; "
                f"e.g. <code>{html_text(first.get('id'), 100)}</code>)</summary>", "",
                code_block(first.get("error") or g["cause"] or "(no message)"), "",
                "</details>"]
    if len(groups) > MAX_ERRORS:
        out.append(f"\n… and {len(groups) - MAX_ERRORS} more causes")
    return out
