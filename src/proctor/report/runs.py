"""`proctor runs`: the run index, newest first, readable at 80 columns.

The run id comes first and is never cut: every command that takes a run takes it (or a
unique prefix of it). The directory is never cut either: a column of its own when the
terminal holds it whole, else a line of its own under its run, so it can be pasted. Status,
counts and the start time are never cut or dropped; narrow terminals drop the specs first;
long agent lists (`agent · model` each) end in an ellipsis."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from proctor.report.tables import GAP_NO_BOX, NAME_MIN, Col, col_width, fitted_table
from proctor.store import agents_of, list_runs, proctor_home, shown


def runs_main(limit: int = 20) -> int:
    from rich.console import Console
    from rich.text import Text

    rows = list_runs(limit)
    console = Console(highlight=False)
    if not rows:
        console.print(f"no runs yet under {shown(proctor_home())}")
        return 0
    gone = [not Path(r["dir"]).exists() for r in rows]
    dirs = [shown(r["dir"]) for r in rows]
    cols = [
        Col("run", [Text(r["run_id"], style="dim" if g else "")
                    for r, g in zip(rows, gone, strict=True)]),
        Col("started", [(r["started_at"] or "").replace("T", " ")[:16] for r in rows]),
        Col("status", [r["status"] or "" for r in rows]),
        Col("passed", [_passed(r) for r in rows], right=True),
        Col("agents", [", ".join(agents_of(r)) or "–" for r in rows], name=True,
            cut="list"),
    ]
    # A directory no longer there says so (and is dim), wherever it is shown.
    dirs = [d + (" (deleted)" if g else "") for d, g in zip(dirs, gone, strict=True)]
    beside = Col("directory", [Text(d, style="dim" if g else "")
                               for d, g in zip(dirs, gone, strict=True)])
    agents = min(col_width(cols[-1]), NAME_MIN)
    room = sum(col_width(c) + GAP_NO_BOX for c in [*cols[:-1], beside]) + agents
    specs = Col("specs", [", ".join(Path(s).name or s for s in json.loads(r["specs"] or "[]"))
                          or "–" for r in rows], name=True, cut="list", drop=1)
    if room <= console.width:
        console.print(fitted_table([*cols, beside, specs], console.width, box=None,
                                   header_style="bold"))
        return 0
    # Too narrow for the directory beside its run: a line of its own, whole, under it.
    table = fitted_table([*cols, specs], console.width, box=None, header_style="bold")
    with console.capture() as captured:
        console.print(table)
    lines = captured.get().rstrip("\n").split("\n")
    console.file.write(lines[0] + "\n")
    for line, d, g in zip(lines[1:], dirs, gone, strict=True):
        console.file.write(line + "\n")
        console.print(Text("  " + d, style="dim" if g else ""), overflow="ignore", crop=False,
                      no_wrap=True, soft_wrap=True)
    return 0


def _passed(r: Mapping[str, Any]) -> str:
    if r["trials"] is None:
        return ""
    rate = "" if r["pass_rate"] is None else f" {r['pass_rate']:.0%}"
    return f"{r['passed'] or 0}/{r['trials']}{rate}"
