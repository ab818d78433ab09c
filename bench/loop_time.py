"""Where the isolated-throughput run's wall time goes: proctor's event loop running, or
runnable but waiting for a CPU.

    .venv/bin/python bench/loop_time.py [--trials 1000] [--concurrency 4] [--src OTHER/src]

Runs `proctor run` of `bench/workloads.py`'s suite (`--agent oracle`), in this process, and
prints the wall time, then from the kernel's scheduler statistics of the loop's thread
(/proc/self/task/TID/schedstat) its time on a CPU and its *run delay* (runnable, but another
process had the CPU), and the CPU of proctor's process and of the boxes it started
(`getrusage`). The loop is the run's bottleneck: when the boxes' processes take the CPU it
needs, the run delay shows it. With `--src`, another tree's proctor is measured the same way,
for an A/B. Put TMPDIR on a tmpfs for steady figures (docs/benchmarks.md says why).
"""

from __future__ import annotations

import argparse
import resource
import sys
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from workloads import run_in_process  # noqa: E402


def schedstat() -> tuple[float, float]:
    """(seconds on a CPU, seconds runnable but waiting for one) of this (the loop's) thread."""
    tid = threading.get_native_id()
    on_cpu, delay, _ = Path(f"/proc/self/task/{tid}/schedstat").read_text().split()
    return int(on_cpu) / 1e9, int(delay) / 1e9


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--trials", type=int, default=1000)
    p.add_argument("--concurrency", type=int, default=4)
    p.add_argument("--src", type=Path, help="another tree's src/ to measure instead")
    args = p.parse_args()
    if args.src:
        sys.path.insert(0, str(args.src.resolve()))
    cpu0, delay0 = schedstat()
    wall = run_in_process(args.trials, args.concurrency)
    cpu, delay = (a - b for a, b in zip(schedstat(), (cpu0, delay0), strict=True))
    own, boxes = (resource.getrusage(who) for who in
                  (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    print(f"{args.trials} trials, concurrency {args.concurrency}: wall {wall:.2f} s")
    print(f"  the loop's thread: on a CPU {cpu:.2f} s, waiting for one {delay:.2f} s")
    print(f"  CPU: proctor's process {own.ru_utime + own.ru_stime:.2f} s, "
          f"the boxes {boxes.ru_utime + boxes.ru_stime:.2f} s")


if __name__ == "__main__":
    main()
