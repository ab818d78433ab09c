"""What checking results.json against its types (proctor.results) costs a reader: a run of
N trials (each with three checks, a forbidden rule, a 2,000-character output), scored by the
real scorer and written as `proctor run` writes it; then the CPU time (best of --runs) of
parsing it unchecked (`json.loads`, what readers did before) and checked
(`store.read_results`: parse and validate in one pass). Prints JSON.

    .venv/bin/python bench/results_loading.py [--trials 10000] [--runs 5]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from proctor.results import TrialRecord, new_check, new_forbidden, new_trial
from proctor.scoring import summarize
from proctor.store import read_results, write_json


def _trial(i: int) -> TrialRecord:
    ok = i % 3 != 0
    checks = [new_check(name=f"ran#{k}", type="ran", passed=bool(ok or k),
                        score=1.0 if ok or k else 0.0, weight=1.0, gate=False,
                        message=f"the agent ran `git commit` (command #{k})") for k in range(3)]
    return new_trial(
        id=f"task-{i % 500}.mock-solver.injected.r{i // 500:02d}", task_id=f"task-{i % 500}",
        model="mock/solver", help_mode="injected", replica=i // 500, params={},
        status="pass" if ok else "fail", composite_score=1.0 if ok else 0.67, checks=checks,
        forbidden=[new_forbidden(rule="no_force_push", violated=False)], turns=6,
        tokens={"input": 5200, "output": 410}, cost_usd=0.0031, duration_s=4.2, agent="llm",
        reason=None if ok else "failed: ran#0: no agent command matched", output="x" * 2000)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trials", type=int, default=10_000)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    trials = [_trial(i) for i in range(args.trials)]
    scored = summarize(trials, [])
    results = {"schema_version": 1, "run_id": "bench", "started_at": "2026-11-26T00:00:00Z",
               "finished_at": "2026-11-26T01:00:00Z", "complete": True, "interrupted": False,
               "summary": scored["summary"], "trials": trials,
               "tasks": scored["tasks"], "models": scored["models"],
               "help_modes": scored["help_modes"], "exit_code": scored["exit_code"]}
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "results.json"
        write_json(path, results)

        def best(read) -> float:
            times = []
            for _ in range(args.runs):
                t0 = time.process_time()
                read()
                times.append(time.process_time() - t0)
            return min(times)

        unchecked = best(lambda: json.loads(path.read_text(encoding="utf-8")))
        checked = best(lambda: read_results(path))
        print(json.dumps({"trials": args.trials, "bytes": path.stat().st_size,
                          "json_loads_cpu_s": round(unchecked, 4),
                          "read_results_cpu_s": round(checked, 4),
                          "ratio": round(checked / unchecked, 2)}))


if __name__ == "__main__":
    main()
