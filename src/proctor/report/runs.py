"""`proctor runs`: the run index, newest first, readable at 80 columns.

The directory (what `proctor show` takes; relative to here when inside) comes first and is
never wrapped: a path too long loses its start, not the run id at its end. Status and counts
are never cut; narrow terminals drop the specs, then the start time; long model lists end
in an ellipsis."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from proctor.report.tables import Col, fitted_table
from proctor.store import list_runs, models_of, proctor_home, shown


def runs_main(limit: int = 20) -> int:
    from rich.console import Console
    from rich.text import Text

    rows = list_runs(limit)
    console = Console(highlight=False)
    if not rows:
        console.print(f"no runs yet under {shown(proctor_home())}")
        return 0
    gone = [not Path(r["dir"]).exists() for r in rows]
    run_id = max(len(Path(r["dir"]).name) for r in rows) + 2  # `…/` + the run id, always
    cols = [
        Col("run directory", [Text(shown(r["dir"]), style="dim" if g else "")
                              for r, g in zip(rows, gone, strict=True)], name=True, cut="start",
            least=run_id),
        Col("started", [(r["started_at"] or "").replace("T", " ")[:16] for r in rows], drop=2),
        Col("status", [(r["status"] or "") + (" (deleted)" if g else "")
                       for r, g in zip(rows, gone, strict=True)]),
        Col("passed", [_passed(r) for r in rows], right=True),
        Col("models", [", ".join(models_of(r)) or "–" for r in rows], name=True, cut="list"),
        Col("specs", [", ".join(Path(s).name or s for s in json.loads(r["specs"] or "[]"))
                      or "–" for r in rows], name=True, cut="list", drop=3),
    ]
    console.print(fitted_table(cols, console.width, box=None, header_style="bold"))
    return 0


def _passed(r: Mapping[str, Any]) -> str:
    if r["trials"] is None:
        return ""
    rate = "" if r["pass_rate"] is None else f" {r['pass_rate']:.0%}"
    return f"{r['passed'] or 0}/{r['trials']}{rate}"
