"""Workload 4: one trial whose agent ran 10,000 commands, judged by 50 ran / not_ran /
run_count assertions. Measures the evaluation time of the checks alone, in-process.

    .venv/bin/python bench/checks_at_scale.py [--commands 10000] [--assertions 50] [--runs 5]

The task is a real suite loaded by `proctor.spec.load` (so the check configs are the validated
models a run uses); the context holds 10,000 `CommandRecord`s with a line of stdout each. Each
run evaluates every check once, in order, as `proctor.trial` does. The first run is what a
trial sees (the patterns get compiled) and is reported on its own; later runs (patterns
cached) give the median. Prints JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from workloads import agent_commands, checks_suite  # noqa: E402

from proctor.checks import registry  # noqa: E402
from proctor.checks.base import CheckContext  # noqa: E402
from proctor.model import CommandRecord, Trial  # noqa: E402
from proctor.record.recorder import Recorder  # noqa: E402
from proctor.redact import Redactor  # noqa: E402
from proctor.sandbox.local.backend import LocalSandbox  # noqa: E402
from proctor.spec.load import load_specs  # noqa: E402


async def evaluate_all(checks: list, ctx: CheckContext) -> tuple[float, int]:
    types = registry()
    t0 = time.perf_counter()
    passed = 0
    for check in checks:
        out = await types[check.type].evaluate(check.config, ctx)
        passed += out.passed
    return time.perf_counter() - t0, passed


async def measure(n_commands: int, n_assertions: int, runs: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="proctor-bench-checks-") as tmp:
        root = Path(tmp)
        task = load_specs([str(checks_suite(root / "spec", n_assertions))]).tasks[0]
        sandbox = LocalSandbox(root / "sandbox", {})
        now = time.time()
        commands = [CommandRecord(command=c, argv=["sh", "-c", c], cwd=str(sandbox.workdir),
                                  exit_code=0, stdout=f"output of {c}\n", stderr="",
                                  started_at=now + i, duration_s=0.01)
                    for i, c in enumerate(agent_commands(n_commands))]
        trial = Trial(id="many.r0", task_id="many", agent="oracle", model=None, help_mode=None,
                      replica=0)
        ctx = CheckContext(task=task, trial=trial, sandbox=sandbox, commands=commands,
                           agent_output="", recorder=Recorder(root / "trial", Redactor({})))
        times, passed = [], 0
        for _ in range(runs + 1):
            elapsed, passed = await evaluate_all(task.checks, ctx)
            times.append(elapsed)
        await sandbox.close()
    return {"commands": n_commands, "assertions": len(task.checks), "passed": passed,
            "first_s": round(times[0], 4), "median_s": round(statistics.median(times[1:]), 4),
            "runs": runs}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--commands", type=int, default=10_000)
    ap.add_argument("--assertions", type=int, default=50)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    print(json.dumps(asyncio.run(measure(args.commands, args.assertions, args.runs))))


if __name__ == "__main__":
    main()
