"""`proctor run`: load → plan (prepare.py) → execute trials concurrently → score → store →
report (execute.py), then the outcome on the terminal.

Finished trials are on disk the moment they finish; `--resume RUN_DIR` runs the rest.
"""

from __future__ import annotations

import os
import sys
import time

from proctor.model import RunOptions
from proctor.results import RunResults
from proctor.run.execute import run_planned
from proctor.run.prepare import Planned, prepare
from proctor.startup import keep_to_exit
from proctor.store import shown


def run_main(paths: list[str], options: RunOptions) -> int:
    planned = prepare(paths, options)
    keep_to_exit(planned)  # freed with the process, not object by object (startup.py)
    try:
        results = run_planned(planned)
        keep_to_exit(results)
    except KeyboardInterrupt:
        print(f"proctor: interrupted; finished trials are kept. Finish the run with:\n"
              f"  proctor run --resume {shown(planned.store.dir)}", file=sys.stderr)
        raise SystemExit(130) from None
    _print_outcome(planned, results)
    return results["exit_code"]


def _print_outcome(planned: Planned, results: RunResults) -> None:
    s = results["summary"]
    if not planned.options.quiet:
        try:
            from rich.console import Console

            from proctor.report.terminal import print_summary

            # Logs (CI) have no width: 120 columns keeps turns, tokens and cost in the
            # tables, unless COLUMNS says how wide the reader's window is.
            wide = sys.stdout.isatty() or os.environ.get("COLUMNS", "").isdigit()
            print_summary(results, Console(width=None if wide else 120))
        except ImportError:
            pass
    else:  # the tables end with this headline; quiet, it is the only line
        print(f"{s['passed']}/{s['trials']} passed, {s['failed']} failed, {s['errored']} "
              f"errored ({time.strftime('%H:%M:%S')})")
    print(f"run: {planned.store.dir}")
    for path in results.get("reports", []):
        print(f"report: {path}")
    for line in outcome_notes(results, shown(planned.store.dir)):
        print(line)
    if s["passed"] < s["trials"]:
        print(f"what went wrong: proctor show {shown(planned.store.dir)} --failed")


def outcome_notes(results: RunResults, run_dir: str) -> list[str]:
    """What to do next, one line each: the budget spent and how to run what it left out;
    errors that were all the infrastructure's, and how to run them again."""
    s, lines = results["summary"], []
    budget, not_run = s.get("budget"), s.get("not_run") or []
    if budget:
        lines.append(f"budget: ${budget['cost_usd']:.4f} spent of ${budget['max_cost_usd']:g}"
                     + (f"; {len(not_run)} trial(s) not run: proctor run --resume {run_dir} "
                        "--max-cost USD (a larger budget) runs them" if not_run else ""))
    kinds = [t.get("error_kind") for t in results["trials"] if t["status"] == "error"]
    if kinds and all(k == "infra" for k in kinds):
        lines.append(f"all {len(kinds)} error(s) were infrastructure failures, not the agent's: "
                     f"proctor run --resume {run_dir} --retry-errors infra runs them again")
    return lines
