"""What the isolation boundary costs: per agent command, and per trial.

    .venv/bin/python bench/isolation.py [--commands 300] [--trials 50]

* command: `sh -c true` in an isolated LocalSandbox (started by the box's spawner) against
  the same command in an unisolated one (a plain `sh -c` with its cgroup wrapper); COMMANDS
  of each, interleaved; the difference of medians is the boundary's cost per command
  (target: ≤ 10 ms).
* traced: the same with `trace=True` (in the box: the spawner's own tracer, forked beside
  the command outside the trial's PID namespace; plain: exectrace around `sh -c`), per
  command.
* trial: creating and closing a sandbox, TRIALS times, isolated against unisolated: a new
  box each time (bubblewrap, spawner, cgroup, egress-proxy socket), and a box reused from a
  run's pool (what every trial but the first few of a run pays: limits, hosts file, new
  network and IPC namespaces, the trial's PID namespace killed, the wipe). The trial's PID
  namespace itself is made at its first command: `--first-command` also times a reused box
  with one command against a plain directory tree with one. Trials have their
  default disk limit (2 GiB): as root a new box is a file system of that size
  (sandbox/disk.py).
* check: a check's command (`sh -c true`) in the trial's grader box (sandbox/grader.py), in a
  box reused from the pool, against the same command run as an agent command; and what the
  grader box costs the first time a box's trials need one.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

from proctor.proc import use_fast_child_watcher
from proctor.sandbox import create_sandbox
from proctor.sandbox.base import Resources, SandboxSpec


def spec(root: Path, isolation: str) -> SandboxSpec:
    return SandboxSpec(trial_id=root.name, root=root, env={}, isolation=isolation,
                       resources=Resources(memory_bytes=1 << 30, pids=1024,
                                           disk_bytes=2 << 30))


async def per_command(root: Path, n: int, trace: bool) -> tuple[float, float]:
    boxed = await create_sandbox("local", spec(root / "boxed", "auto"))
    plain = await create_sandbox("local", spec(root / "plain", "none"))
    times: dict[bool, list[float]] = {True: [], False: []}
    try:
        for _ in range(n):
            for sb in (boxed, plain):
                t0 = time.perf_counter()
                res = await sb.exec("true", timeout=10, trace=trace)
                times[sb.isolated].append(time.perf_counter() - t0)
                assert res.exit_code == 0, res
    finally:
        await boxed.close()
        await plain.close()
    return statistics.median(times[True]) * 1000, statistics.median(times[False]) * 1000


async def per_trial(root: Path, n: int) -> tuple[float, float]:
    times: dict[str, list[float]] = {"auto": [], "none": []}
    for i in range(n):
        for isolation in ("auto", "none"):
            t0 = time.perf_counter()
            sb = await create_sandbox("local", spec(root / f"{isolation}{i}", isolation))
            await sb.close()
            times[isolation].append(time.perf_counter() - t0)
    return statistics.median(times["auto"]) * 1000, statistics.median(times["none"]) * 1000


async def per_trial_reused(root: Path, n: int, command: bool = False) -> float:
    from proctor.sandbox.local.backend import LocalBackend

    backend = LocalBackend.for_run(root, 1)
    times = []
    try:
        for i in range(n + 1):
            t0 = time.perf_counter()
            sb = await backend.create(spec(root / f"pooled{i}", "auto"))
            if command:
                await sb.exec("true", timeout=10)
            await sb.close()
            if i:  # the first builds the box
                times.append(time.perf_counter() - t0)
    finally:
        await backend.close()
    return statistics.median(times) * 1000


async def per_trial_plain_command(root: Path, n: int) -> float:
    times = []
    for i in range(n):
        t0 = time.perf_counter()
        sb = await create_sandbox("local", spec(root / f"plain{i}", "none"))
        await sb.exec("true", timeout=10)
        await sb.close()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1000


async def per_check(root: Path, n: int) -> tuple[float, float, float]:
    """(a check's command in the grader box, the same as an agent command, the grader
    box's first build), ms; the box reused from a pool as in a run."""
    from proctor.sandbox.local.backend import LocalBackend

    backend = LocalBackend.for_run(root, 1)
    graded, agent, first = [], [], 0.0
    try:
        for i in range(n + 1):
            sb = await backend.create(spec(root / f"c{i}", "auto"))
            try:
                t0 = time.perf_counter()
                res = await sb.grade(["/bin/sh", "-c", "true"], timeout=10)
                took = time.perf_counter() - t0
                assert res.exit_code == 0, res
                t0 = time.perf_counter()
                await sb.exec("true", timeout=10)
                agent.append(time.perf_counter() - t0)
                if i:
                    graded.append(took)
                else:
                    first = took
            finally:
                await sb.close()
    finally:
        await backend.close()
    return (statistics.median(graded) * 1000, statistics.median(agent) * 1000, first * 1000)


async def main(args: argparse.Namespace) -> None:
    use_fast_child_watcher()
    from proctor.sandbox.local.backend import LocalBackend

    LocalBackend().preflight()
    with tempfile.TemporaryDirectory(prefix="proctor-bench-iso-") as d:
        root = Path(d)
        boxed, plain = await per_command(root / "c", args.commands, trace=False)
        print(f"command: isolated {boxed:.2f} ms, plain {plain:.2f} ms median "
              f"-> {boxed - plain:.2f} ms per command ({args.commands} each)")
        boxed_t, plain_t = await per_command(root / "t", args.commands // 3, trace=True)
        print(f"traced command: isolated {boxed_t:.2f} ms, plain {plain_t:.2f} ms median "
              f"-> {boxed_t - plain_t:.2f} ms per command")
        box, dirs = await per_trial(root / "s", args.trials)
        print(f"sandbox create+close: isolated {box:.2f} ms, plain {dirs:.2f} ms median "
              f"-> {box - dirs:.2f} ms per trial ({args.trials} each)")
        reused = await per_trial_reused(root / "p", args.trials)
        print(f"sandbox create+close, box reused from the run's pool: {reused:.2f} ms median "
              f"-> {reused - dirs:+.2f} ms per trial against plain")
        if args.first_command:
            boxed = await per_trial_reused(root / "q", args.trials, command=True)
            plain = await per_trial_plain_command(root / "r", args.trials)
            print(f"... with one command: box reused {boxed:.2f} ms, plain {plain:.2f} ms "
                  f"median -> {boxed - plain:+.2f} ms per trial")
        check, agent, first = await per_check(root / "g", args.trials)
        print(f"check command in the grader box: {check:.2f} ms median, as an agent command "
              f"{agent:.2f} ms -> {check - agent:+.2f} ms per check; the grader box's first "
              f"build {first:.1f} ms (once per box of the pool)")


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--commands", type=int, default=300)
    p.add_argument("--trials", type=int, default=50)
    p.add_argument("--first-command", action="store_true",
                   help="also time a trial with one command (a reused box against plain)")
    asyncio.run(main(p.parse_args()))
    sys.exit(0)
