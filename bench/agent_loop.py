"""Harness overhead of the LLM agent loop per turn, beyond the model's own latency.

    .venv/bin/python bench/agent_loop.py [--trials 50] [--turns 20] [--output 4000]

Runs the real `LLMAgent` with the in-process mock model (zero latency, so every
microsecond measured is proctor's) for TRIALS trials of TURNS tool rounds each, every
command printing OUTPUT bytes, with a redactor holding secrets and the trace written to
disk. Two sandboxes:

  instant  a sandbox whose exec returns at once: the loop, the retry wrapper, the mock,
           message building, output cutting, command recording, redaction and the trace —
           the harness overhead itself (target < 5 ms per turn)
  local    the real LocalSandbox running each command as a process, for scale: what one
           `sh -c` costs on this machine

Prints the median and p95 milliseconds per turn over the trials.
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

from proctor.agents.base import AgentEnv
from proctor.agents.llm import LLMAgent
from proctor.model import AgentDef, RunOptions, TaskDef, Trial
from proctor.record.recorder import Recorder
from proctor.redact import Redactor
from proctor.sandbox.base import ExecResult
from proctor.sandbox.local.backend import LocalSandbox


class InstantSandbox:
    """Answers every command at once with a fixed output: no process, no waiting."""

    def __init__(self, workdir: Path, output: int):
        self.workdir = workdir
        self.env: dict[str, str] = {}
        self._stdout = ("x" * 79 + "\n") * (output // 80)

    async def exec(self, command: str, *, timeout: float, **kw: object) -> ExecResult:
        return ExecResult(0, self._stdout, "", 0.0, time.time())

    async def close(self) -> None:
        pass


async def one_trial(root: Path, n: int, turns: int, output: int, sandbox_kind: str) -> float:
    script = root / f"script{n}.json"
    cmd = f"head -c {output} /dev/zero | tr '\\0' x"
    script.write_text(json.dumps({"turns": [{"run": cmd}] * turns, "end": "done"}))
    task = TaskDef(id="bench", dialect="suite", source=str(root / "s.yaml"), base_dir=str(root),
                   prompt="Benchmark the loop. token=bench-secret-value-1234",
                   agent=AgentDef(max_turns=turns + 1), checks=[], cli="true",
                   help_modes=["injected"])
    trial = Trial(id=f"bench.r{n}", task_id="bench", agent="llm", model=f"mock/{script.name}",
                  help_mode="injected", replica=n)
    sandbox = (InstantSandbox(root, output) if sandbox_kind == "instant"
               else LocalSandbox(root / f"sb{n}", env={}))
    recorder = Recorder(root / f"trial{n}", Redactor({"TOKEN": "bench-secret-value-1234",
                                                     "KEY": "another-secret-5678"}))
    env = AgentEnv(task=task, trial=trial, prompt=task.prompt, sandbox=sandbox,  # type: ignore[arg-type]
                   recorder=recorder, options=RunOptions(), shared={"llm.help:true": "help"})
    t0 = time.perf_counter()
    result = await LLMAgent().run(env)
    elapsed = time.perf_counter() - t0
    recorder.close()
    await sandbox.close()
    assert result.error is None and result.turns == turns + 1, result
    return elapsed / result.turns


async def main_async(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(prefix="proctor-bench-") as tmp:
        root = Path(tmp)
        await one_trial(root, 10_000, 2, args.output, "instant")  # warm-up: imports, caches
        for kind in ("instant", "local"):
            per_turn = [await one_trial(root, n, args.turns, args.output, kind)
                        for n in range(args.trials)]
            ms = sorted(x * 1000 for x in per_turn)
            p95 = ms[min(len(ms) - 1, int(len(ms) * 0.95))]
            print(f"{kind:8s} {statistics.median(ms):7.3f} ms/turn median  {p95:7.3f} ms p95  "
                  f"({args.trials} trials x {args.turns + 1} turns, {args.output} B output)")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=50)
    ap.add_argument("--turns", type=int, default=20, help="tool rounds per trial")
    ap.add_argument("--output", type=int, default=4000, help="bytes each command prints")
    args = ap.parse_args()
    print(f"python {sys.version.split()[0]}")
    asyncio.run(main_async(args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
