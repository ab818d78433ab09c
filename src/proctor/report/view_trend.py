"""Pass rate over time as an SVG, for `proctor view`: a suite's page (one line per agent and
model) and the index of runs (one line per suite × agent × model).

Runs sit in evenly spaced slots, oldest left: runs minutes apart and runs weeks apart are
both readable (on a time-proportional axis a burst of runs is one smudge and their dates
print over each other). A date goes under a run only where it has room, counted back from
the newest, so no two dates overlap whatever the number of runs."""

from __future__ import annotations

import html
import math
from dataclasses import dataclass, field
from urllib.parse import quote

from proctor.report import data
from proctor.report.charts import e
from proctor.report.view_runs import Line, RunRow

COLORS = ("#4f6bed", "#dc2626", "#16a34a", "#d97706", "#9333ea", "#0891b2", "#db2777",
          "#65a30d", "#7c3aed", "#ea580c")
LABEL_W = 78  # px (of the viewBox) one date needs: "03-01 10:05" at 11px, and a gap
PLOT_W = 740


@dataclass
class Series:
    """One line: an agent on a model (in one suite), a point per run it ran in."""

    title: str
    points: list[tuple[RunRow, Line]] = field(default_factory=list)


def stamp(r: RunRow) -> float:
    """When a run started, comparable across time zones (and a run without a time, first)."""
    return r.when.timestamp() if r.when is not None else 0.0


def date_slots(n: int, plot_w: float = PLOT_W) -> list[int]:
    """Which of n run slots get a date under them: the newest, and every step-th before it,
    step chosen so that neighbouring dates never touch."""
    if n <= 0:
        return []
    step = max(1, math.ceil(LABEL_W / (plot_w / n)))
    return sorted(range(n - 1, -1, -step))


def trend_svg(runs: list[RunRow], series: list[Series], *, aria: str, changes: bool = True,
              plot_h: int = 240) -> str:
    """`runs`: the x axis (those without a start time are left out), `series`: the lines;
    each point is a link to its run with its figures in a tooltip. A line breaks where its
    suite changed (its files or the task selection); with `changes`, a dashed rule marks
    where (a suite's page: one suite)."""
    ordered = sorted((r for r in runs if r.when is not None), key=stamp)
    slot = {id(r): i for i, r in enumerate(ordered)}
    left, right, top = 46, 20, 16
    width, height = left + PLOT_W + right, top + plot_h + 40
    n = len(ordered)

    def x(i: int) -> float:
        return left + PLOT_W * (i + 0.5) / max(1, n)

    def y(rate: float) -> float:
        return top + plot_h * (1 - rate)

    out = [f'<svg class="trend" viewBox="0 0 {width} {height}" role="img" '
           f'aria-label="{e(aria)}">']
    for p in (0, 25, 50, 75, 100):
        out.append(f'<line x1="{left}" x2="{left + PLOT_W}" y1="{y(p / 100):.1f}" '
                   f'y2="{y(p / 100):.1f}" class="grid"/><text x="{left - 6}" '
                   f'y="{y(p / 100) + 4:.1f}" text-anchor="end" class="axis">{p}%</text>')
    for i in date_slots(n):
        when = ordered[i].when
        assert when is not None
        out.append(f'<text x="{x(i):.1f}" y="{top + plot_h + 18}" text-anchor="middle" '
                   f'class="axis date">{e(when.strftime("%m-%d %H:%M"))}</text>')
    if changes:
        for i, (r, before) in enumerate(zip(ordered[1:], ordered, strict=False), start=1):
            if r.suite_version != before.suite_version:
                at = x(i) - PLOT_W / max(1, n) / 2
                out.append(f'<line x1="{at:.1f}" x2="{at:.1f}" y1="{top}" y2="{top + plot_h}" '
                           'class="change"><title>the suite changed here</title></line>')
    for k, s in enumerate(series):
        color = COLORS[k % len(COLORS)]
        points = sorted(((slot[id(r)], r, line) for r, line in s.points if id(r) in slot),
                        key=lambda p: p[0])
        segments: list[list[str]] = []
        for j, (i, r, line) in enumerate(points):  # a new segment where the suite changed
            if j == 0 or r.suite_version != points[j - 1][1].suite_version:
                segments.append([])
            segments[-1].append(f"{x(i):.1f},{y(line.rate):.1f}")
        out += [f'<polyline points="{" ".join(seg)}" fill="none" stroke="{color}" '
                'stroke-width="2"/>' for seg in segments if len(seg) > 1]
        for i, r, line in points:
            errored = f", {line.errored} errored" if line.errored else ""
            started = r.when.isoformat(timespec="minutes") if r.when else ""
            out.append(f'<a href="/runs/{_q(r.run_id)}/"><circle cx="{x(i):.1f}" '
                       f'cy="{y(line.rate):.1f}" r="4" fill="{color}"><title>{e(s.title)}: '
                       f"{line.passed}/{line.trials} ({data.pct(line.rate)}){errored} · run "
                       f"{e(r.run_id)} · {e(started)}</title></circle></a>")
    out.append("</svg>")
    legend = "".join(f'<span><i style="background:{COLORS[k % len(COLORS)]}"></i>{e(s.title)}'
                     "</span>" for k, s in enumerate(series))
    return "".join(out) + f'<p class="legend">{legend}</p>'


def _q(run_id: str) -> str:
    """A run id as one path segment of a link."""
    return html.escape(quote(run_id, safe=""), quote=True)
