"""The SVG charts of report.html, drawn here so the page needs nothing from a network and
reads with scripts off: pass rate per model, composite scores, durations."""

from __future__ import annotations

import html
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from proctor.report import data
from proctor.report.labels import short_labels

_PLAIN = re.compile(r"[^\x00-\x1f\x7f-\x9f&<>\"']*")  # nothing to clean or escape


def e(value: Any, limit: int | None = None) -> str:
    """Escaped text (also safe inside a quoted attribute)."""
    if (isinstance(value, str) and (limit is None or len(value) <= limit)
            and _PLAIN.fullmatch(value)):
        return value  # the common case, tens of thousands of times in a large report
    s = data.clean(value) if limit is None else data.cut(value, limit)
    return html.escape(s, quote=True)


def num(x: float) -> str:
    return f"{x:.1f}".rstrip("0").rstrip(".")


def chart_models(rows: Sequence[Mapping[str, Any]]) -> str:
    """Horizontal bars: pass rate per model, whiskers for the 95% CI, a tick for thresholds."""
    left, plot, right, row_h, top = 230, 440, 60, 30, 22
    height = top + row_h * len(rows) + 8
    names = short_labels([data.clean(r["label"]) for r in rows], 34)
    width = left + plot + right
    out = [f'<svg viewBox="0 0 {width} {height}" role="img" aria-label="pass rate per model">']
    for p in (0, 25, 50, 75, 100):
        x = left + plot * p / 100
        out.append(f'<line x1="{num(x)}" y1="{top - 4}" x2="{num(x)}" y2="{height - 6}" '
                   f'class="grid"/><text x="{num(x)}" y="{top - 8}" class="axis" '
                   f'text-anchor="middle">{p}%</text>')
    for i, r in enumerate(rows):
        y = top + i * row_h
        rate = float(r.get("pass_rate") or 0.0)
        lo, hi = (list(r.get("ci95") or (0.0, 1.0)) + [0.0, 1.0])[:2]
        label = data.clean(r["label"])
        cy = y + row_h / 2
        out.append(f'<g><title>{e(label)}: {data.pct(rate)} ({r["passed"]}/{r["trials"]}), '
                   f'95% CI {data.ci_text((lo, hi))}</title>')
        out.append(f'<text x="{left - 8}" y="{num(cy + 4)}" text-anchor="end" '
                   f'class="label">{e(names[label])}</text>')
        out.append(f'<rect x="{left}" y="{num(y + 7)}" width="{num(plot * rate)}" '
                   f'height="{row_h - 14}" rx="3" class="bar"/>')
        x1, x2 = left + plot * lo, left + plot * hi
        out.append(f'<path d="M{num(x1)} {num(cy)}H{num(x2)}M{num(x1)} {num(cy - 6)}'
                   f'V{num(cy + 6)}M{num(x2)} {num(cy - 6)}V{num(cy + 6)}" class="whisker"/>')
        th = r.get("threshold")
        if th is not None:
            tx = left + plot * min(100.0, max(0.0, float(th))) / 100
            cls = "thr met" if r.get("met") else "thr missed"
            out.append(f'<path d="M{num(tx)} {y + 3}V{y + row_h - 3}" class="{cls}"/>')
        out.append(f'<text x="{left + plot + 8}" y="{num(cy + 4)}" class="value">'
                   f'{data.pct(rate)}</text></g>')
    out.append("</svg>")
    return "".join(out)


def _histogram(counts: list[int], edges: list[str], colors: list[str], title: str,
               unit: str = "") -> str:
    """Bars between `edges` (one more label than bars), labelled where bins meet: each
    label marks a value, never a bin that a reader must guess the range of."""
    left, plot_w, plot_h, top, bottom, right = 34, 420, 120, 14, 34, 22
    width, height = left + plot_w + right, top + plot_h + bottom
    peak = max(counts, default=0) or 1
    n = max(1, len(counts))
    bw = plot_w / n
    out = [f'<svg viewBox="0 0 {width} {height}" role="img" aria-label="{e(title)}">']
    # Whole trials on the y axis: 0, about half the peak, the peak (no "219.5").
    for tick in sorted({0, peak // 2, peak} if peak >= 2 else {0, peak}):
        y = top + plot_h * (1 - tick / peak)
        out.append(f'<line x1="{left}" y1="{num(y)}" x2="{left + plot_w}" y2="{num(y)}" '
                   f'class="grid"/><text x="{left - 6}" y="{num(y + 4)}" class="axis" '
                   f'text-anchor="end">{tick}</text>')
    for i, c in enumerate(counts):
        h = plot_h * c / peak
        x = left + i * bw
        out.append(f'<g><title>{e(edges[i])}–{e(edges[i + 1])}{e(unit)}: {c} '
                   f'trial{"s" if c != 1 else ""}</title>'
                   f'<rect x="{num(x + 2)}" y="{num(top + plot_h - h)}" '
                   f'width="{num(max(bw - 4, 1))}" height="{num(h)}" rx="2" '
                   f'style="fill:{colors[i]}"/></g>')
    step = max(1, math.ceil(n / 6))
    for i in range(0, n + 1, step):
        out.append(f'<text x="{num(left + i * bw)}" y="{top + plot_h + 16}" '
                   f'class="axis" text-anchor="middle">{e(edges[i])}{e(unit)}</text>')
    out.append("</svg>")
    return "".join(out)


def chart_scores(trials: Sequence[Mapping[str, Any]]) -> str:
    counts = [0] * 10
    for t in trials:
        s = min(1.0, max(0.0, float(t.get("composite_score") or 0.0)))
        counts[min(9, int(s * 10))] += 1
    edges = ["0"] + [f"{i / 10:.1f}" for i in range(1, 10)] + ["1"]
    colors = [f"hsl({12 * i + 6} 62% 50%)" for i in range(10)]
    return _histogram(counts, edges, colors, "composite score distribution")


def _nice_step(span: float, bins: int = 10) -> float:
    raw = span / bins if span > 0 else 1.0
    mag: float = 10 ** math.floor(math.log10(raw))  # an int from 1 up (labels show it so)
    return next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)


def _axis_seconds(x: float, places: int) -> str:
    if x >= 60:
        return data.seconds(x)  # 16m40s
    text = f"{x:.{places}f}"
    return (text.rstrip("0").rstrip(".") if "." in text else text) + "s"


def chart_durations(trials: Sequence[Mapping[str, Any]]) -> str:
    durations = [float(t.get("duration_s") or 0.0) for t in trials]
    step = _nice_step(max(durations, default=0.0))
    n = max(1, math.floor(max(durations, default=0.0) / step) + 1)
    counts = [0] * n
    for d in durations:
        counts[min(n - 1, int(d // step))] += 1
    # As many decimals as the step needs: 0.025 s bins read 0s 0.025s 0.05s, not 0s 0s 0.1s.
    places = max(0, -math.floor(math.log10(step) + 1e-9)) + (1 if f"{step:g}"[-1] == "5" else 0)
    edges = [_axis_seconds(i * step, places) for i in range(n + 1)]
    return _histogram(counts, edges, ["var(--accent)"] * n, "trial duration distribution")
