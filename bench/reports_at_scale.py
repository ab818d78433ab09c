"""Reports at scale: every format for a run of 10,000 tasks (one trial each), timed.

    .venv/bin/python bench/reports_at_scale.py [--tasks 10000]

The results come from the real scorer; each renderer (json, junit, md, html, the terminal
table) is timed alone. Every report must be linear in trials + tasks (target: each format
under 1 s at 10,000 tasks).
"""

from __future__ import annotations

import argparse
import io
import time

from proctor.model import AgentDef, CheckResult, TaskDef, TrialResult
from proctor.report import render
from proctor.report.terminal import print_summary
from proctor.scoring import summarize


def results_for(n: int) -> dict:
    tasks = [TaskDef(id=f"task-{i:05d}", dialect="suite", source="s.yaml", base_dir=".",
                     prompt="", agent=AgentDef(), checks=[]) for i in range(n)]
    trials = [TrialResult(id=f"task-{i:05d}.m.r0", task_id=f"task-{i:05d}", model="mock/m",
                          help_mode="injected", replica=0, params={},
                          status="pass" if i % 3 else "fail", composite_score=float(i % 3 > 0),
                          checks=[CheckResult("exit_code#0", "exit_code", i % 3 > 0, 1.0, 1.0,
                                              False, "" if i % 3 else "exited with 1")],
                          turns=2, duration_s=1.5, agent="llm")
              for i in range(n)]
    t0 = time.perf_counter()
    scored = summarize(trials, tasks)
    print(f"scoring: {time.perf_counter() - t0:.3f} s")
    return {"run_id": "bench", "started_at": "2026-01-01T00:00:00+00:00", "complete": True,
            "trials": [t.to_dict() for t in trials], **scored}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", type=int, default=10_000)
    args = ap.parse_args()
    results = results_for(args.tasks)
    for fmt in ("json", "junit", "md", "html"):
        t0 = time.perf_counter()
        text = render(fmt, results, {})
        print(f"{fmt}: {time.perf_counter() - t0:.3f} s ({len(text) / 1e6:.1f} MB)")
    from rich.console import Console

    t0 = time.perf_counter()
    print_summary(results, Console(file=io.StringIO(), width=120))
    print(f"terminal table: {time.perf_counter() - t0:.3f} s")


if __name__ == "__main__":
    main()
