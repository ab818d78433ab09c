"""Terminal tables that fit the terminal: figures are never cut or wrapped; names (tasks,
models, run directories) give way, cut in the middle and kept distinct (labels.short_labels),
never folded mid-word; optional columns go, least useful first, before a name would shrink
below NAME_MIN characters."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from proctor.report.labels import short_labels

NAME_MIN = 20  # a name column keeps this many characters (or its longest name) if it can
GAP = 3  # between two columns: padding, rule, padding (tables have no outer edge)
GAP_NO_BOX = 2  # box=None: padding only


@dataclass
class Col:
    """A column of a terminal table: its head, cells, and how it may shrink."""
    head: str
    cells: list[Any]  # str or rich Text, one per row
    name: bool = False  # a name: cut in the middle to fit, kept distinct
    right: bool = False
    drop: int = 0  # > 0: may be left out; the highest goes first
    cut: str = "middle"  # "start": a path, whose end names it; "list": `a, b, c`
    keep_tail: bool = False  # a task label: its ` [help mode, params]` stays whole
    least: int = 0  # a name column never narrower than this (e.g. a run id)
    style: str = ""
    widths: list[int] = field(default_factory=list)


def _text_of(cell: Any) -> str:
    return cell.plain if hasattr(cell, "plain") else str(cell)


def col_width(col: Col) -> int:
    return max([len(col.head)] + [len(_text_of(c)) for c in col.cells])


def name_widths(width: int, figures: list[int], names: list[int], gap: int = GAP,
                least: list[int] | None = None) -> list[int]:
    """What each name column may take: the room the figure columns leave, shared so that a
    short name stays whole and the longer ones split the rest (each at least its `least`)."""
    least = least or [0] * len(names)
    room = width - sum(figures) - gap * (len(figures) + len(names) - 1)
    out = [0] * len(names)
    order = sorted(range(len(names)), key=lambda i: names[i])
    left = room
    for k, i in enumerate(order):
        share = left // (len(order) - k)
        out[i] = max(1, least[i], min(names[i], share))
        left -= out[i]
    return out


def layout(cols: list[Col], width: int, gap: int = GAP) -> list[tuple[Col, int]]:
    """The columns kept and each one's width."""
    kept = list(cols)
    while True:
        figures = [col_width(c) for c in kept if not c.name]
        natural = [col_width(c) for c in kept if c.name]
        least = [min(c.least, col_width(c)) for c in kept if c.name]
        rooms = name_widths(width, figures, natural, gap, least)
        wanted = (sum(figures) + sum(max(lo, min(n, NAME_MIN)) for n, lo in zip(natural, least,
                                                                                 strict=True))
                  + gap * (len(kept) - 1))
        droppable = [c for c in kept if c.drop]
        if wanted <= width or not droppable:
            break
        kept.remove(max(droppable, key=lambda c: c.drop))
    it = iter(rooms)
    return [(c, next(it) if c.name else col_width(c)) for c in kept]


def _shorten(col: Col, texts: list[str], w: int) -> dict[str, str]:
    if col.cut == "start":
        return {t: t if len(t) <= w else "…" + t[len(t) - w + 1:] for t in texts}
    if col.cut == "list":
        return {t: _short_list(t, w) for t in texts}
    return short_labels(texts, max(w, 1), keep_tail=col.keep_tail)


def _short_list(text: str, w: int) -> str:
    """`a, b, c` in `w` characters: each item cut in the middle (kept distinct) while items
    keep 8 characters, else the list cut at its end."""
    if len(text) <= w:
        return text
    items = text.split(", ")
    each = (w - 2 * (len(items) - 1)) // len(items)
    if each >= 8:
        short = short_labels(items, each)
        return ", ".join(short[i] for i in items)
    return text[: w - 1] + "…"


def fitted_table(cols: list[Col], width: int, **table_kw: Any) -> Any:
    """A rich Table of `cols` (every column the same number of cells) in `width` columns."""
    from rich.table import Table
    from rich.text import Text

    table = Table(show_edge=False, pad_edge=False, **table_kw)
    shown = layout(cols, width, GAP_NO_BOX if "box" in table_kw and not table_kw["box"] else GAP)
    cells: list[list[Any]] = []
    for col, w in shown:
        if col.name:
            texts = [_text_of(c) for c in col.cells]
            short = _shorten(col, texts, w)
            cells.append([Text(short[t], style=getattr(c, "style", "") or col.style)
                          for t, c in zip(texts, col.cells, strict=True)])
        else:
            cells.append([Text(c, style=col.style) if col.style and isinstance(c, str) else c
                          for c in col.cells])
        table.add_column(col.head, justify="right" if col.right else "left", no_wrap=True,
                         min_width=w, max_width=max(w, len(col.head)), overflow="ellipsis")
    for row in zip(*cells, strict=True):
        table.add_row(*row)
    return table
