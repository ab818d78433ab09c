"""One trivial isolated trial at a time: what it asks of its box, and how long each answer
takes.

    .venv/bin/python bench/trial_requests.py [--trials 200] [--src OTHER_TREE/src]

Runs `proctor run` of `bench/workloads.py`'s suite (one `echo` command and one
`file_contains` per trial, `--agent oracle`) with `--concurrency 1`, in this process, with
the box spawner's requests and replies timed where proctor sends and receives them
(sandbox/spawn.py), and the traced commands proctor gives the trial's tracers (ORDER, its
answer the tracer's Z, or X when the command left something running). Prints, per request
kind, how many per trial and the median time to its answer, and the time per trial from
the first request to the last (and with start-up). One trial at a time, so every wait is on the trial's own path: the figure the
isolated-throughput benchmark hides behind concurrency. With `--src`, another tree's
proctor (e.g. an older commit's worktree) is measured the same way, for an A/B. Put
TMPDIR on a tmpfs for steady figures (docs/benchmarks.md says why).
"""

from __future__ import annotations

import argparse
import collections
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from workloads import run_in_process  # noqa: E402

OPS = {1: "RUN", 2: "KILL", 3: "LISTEN", 4: "NEWTRIAL", 5: "PING", 6: "KILLALL", 7: "OPEN",
       8: "TRACER", "order": "ORDER"}


def timed(spawn):
    """Wrap the Spawner's sending (to the spawner, and a traced command's order to a
    tracer, sandbox/tracers.py) and delivery; the events, as (time, sent?, op or reply kind,
    request id, spawner)."""
    events: list[tuple[float, bool, object, int, int]] = []
    Spawner, Tracers = spawn.Spawner, spawn.Tracers
    init, send, deliver, order = (Spawner.__init__, Spawner._send_message, Spawner._deliver,
                                  Tracers.order)
    owners: dict[int, int] = {}  # a spawner's tracers' id -> the spawner's

    def __init__(self, *args, **kwargs):
        init(self, *args, **kwargs)
        owners[id(self._tracers)] = id(self)

    def _send_message(self, op, job, message, fds):
        events.append((time.perf_counter(), True, op, job, id(self)))
        return send(self, op, job, message, fds)

    def _order(self, tracer, job, message, fds):
        events.append((time.perf_counter(), True, "order", job, owners[id(self)]))
        return order(self, tracer, job, message, fds)

    def _deliver(self, kind, job, value, err, fd):
        events.append((time.perf_counter(), False, kind, job, id(self)))
        return deliver(self, kind, job, value, err, fd)

    Spawner.__init__, Spawner._send_message, Spawner._deliver = __init__, _send_message, _deliver
    Tracers.order = _order
    return events


def report(events, trials: int, wall: float) -> None:
    sent: dict[tuple[int, int], tuple[float, str]] = {}
    waits: dict[str, list[float]] = collections.defaultdict(list)
    for t, is_send, what, job, who in events:
        if is_send:
            sent[(who, job)] = (t, OPS.get(what, str(what)))
        elif (who, job) in sent:
            t0, op = sent[(who, job)]
            waits[f"{op} -> {what}"].append((t - t0) * 1e3)
    span = events[-1][0] - events[0][0] if events else 0.0
    print(f"{trials} trials one at a time: {span / trials * 1e3:.2f} ms per trial from the "
          f"first request to the last ({wall / trials * 1e3:.2f} ms with start-up and reports)")
    for name, ms in sorted(waits.items()):
        print(f"  {name:<16} {len(ms) / trials:5.2f} per trial   median {statistics.median(ms):6.3f} ms")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--trials", type=int, default=200)
    p.add_argument("--src", type=Path, help="another tree's src/ to measure instead")
    args = p.parse_args()
    if args.src:
        sys.path.insert(0, str(args.src.resolve()))
    from proctor.sandbox import spawn

    events = timed(spawn)
    wall = run_in_process(args.trials, 1)
    report(events, args.trials, wall)


if __name__ == "__main__":
    main()
