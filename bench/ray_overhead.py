"""`--executor ray` against local: per-trial overhead, 1 vs 2 node throughput, and the
reconciliation example (PostgreSQL + an HTTP mock per trial).

    .venv/bin/python bench/ray_overhead.py [--trials 40] [--sleep 2] [--repeat 8]

Starts its own Ray cluster (a head and a second node, 4 logical CPUs each, in private temp
dirs; stopped at the end, by killing the processes of those dirs only) and runs
`proctor run --agent oracle` on generated suites:

* overhead: N trials of `true`, concurrency 4, local vs ray (1 node): wall time per trial;
* scaling: N trials of `sleep S` (they use no CPU, so 2 cores show the scaling), concurrency
  16, on 1 node then on 2 nodes;
* reconciliation: examples/reconciliation --repeat R, local vs ray (2 nodes).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BIN = Path(sys.executable).parent
REPO = Path(__file__).resolve().parent.parent
ENV = {**os.environ, "RAY_AUTH_MODE": "disabled", "RAY_ADDRESS": ""}

SUITE = """
cli: sh
tasks:
  - id: t
    intent: x
    repeat: {n}
    solution: ["{cmd}"]
    assert: [{{exit_code: 0}}]
"""


class Cluster:
    def __init__(self) -> None:
        self.dirs: list[Path] = []
        head = self._dir()
        subprocess.run([str(BIN / "ray"), "start", "--head", "--port", "0", "--num-cpus", "4",
                        "--temp-dir", str(head), "--include-dashboard", "false",
                        "--disable-usage-stats"], env=ENV, check=True, capture_output=True)
        self.address = (head / "ray_current_cluster").read_text().strip()

    def _dir(self) -> Path:
        d = Path(tempfile.mkdtemp(prefix="rb-", dir="/tmp"))
        self.dirs.append(d)
        return d

    def add_node(self) -> None:
        subprocess.run([str(BIN / "ray"), "start", "--address", self.address, "--num-cpus", "4",
                        "--temp-dir", str(self._dir()), "--disable-usage-stats"], env=ENV,
                       check=True, capture_output=True)
        time.sleep(2)

    def stop(self) -> None:
        markers = [str(d).encode() for d in self.dirs]
        raylets = set()
        for pid in _pids():
            try:
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:
                continue
            if any(m in cmd for m in markers):
                raylets.add(pid)
        workers = {p for p in _pids() if _ppid(p) in raylets}
        for pid in raylets | workers:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        for d in self.dirs:
            shutil.rmtree(d, ignore_errors=True)


def _pids() -> list[int]:
    return [int(p) for p in os.listdir("/proc") if p.isdigit()]


def _ppid(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return 0


PEAK: list[int] = []  # the last run's peak private RSS (RssAnon, bytes) of `proctor run`


def run(work: Path, specs: str, *extra: str) -> tuple[float, dict]:
    out = work / f"run-{time.monotonic_ns()}"
    t0 = time.perf_counter()
    p = subprocess.Popen([str(BIN / "proctor"), "run", specs, "--agent", "oracle", "-q",
                          "--output-dir", str(out), *extra], cwd=work, env=ENV,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    peak = 0
    while p.poll() is None:
        peak = max(peak, _rss(p.pid))
        time.sleep(0.02)
    stdout, stderr = p.communicate()
    wall = time.perf_counter() - t0
    PEAK[:] = [peak]
    if p.returncode not in (0, 1):
        raise SystemExit(f"proctor run failed:\n{stdout}\n{stderr}")
    r = json.loads((out / "results.json").read_text())
    return wall, r


def _rss(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("RssAnon:"):  # private memory; plasma pages are shared
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=40)
    ap.add_argument("--sleep", type=float, default=2.0)
    ap.add_argument("--repeat", type=int, default=8)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="ray-bench-"))
    (work / "nop.yaml").write_text(SUITE.format(n=args.trials, cmd="true"))
    three = SUITE.format(n=args.trials, cmd="true")
    three += "".join(three.split("tasks:")[1].replace("id: t", f"id: t{i}") for i in (2, 3))
    (work / "nop3.yaml").write_text(three)  # 3 tasks: `repeat` is at most 100
    (work / "big.yaml").write_text(SUITE.replace("id: t", "id: big").format(
        n=8, cmd="head -c 30000000 /dev/zero | tr '\\\\0' a"))
    (work / "sleep").mkdir()
    (work / "sleep" / "s.yaml").write_text(SUITE.format(n=args.trials, cmd=f"sleep {args.sleep:g}"))
    cluster = Cluster()
    ray = ("--executor", "ray", "--ray-address", cluster.address)
    try:
        n = args.trials
        local, _ = run(work, "nop.yaml", "--concurrency", "4")
        local3, _ = run(work, "nop3.yaml", "--concurrency", "4")
        on_ray, r = run(work, "nop.yaml", "--concurrency", "4", *ray)
        on_ray3, _ = run(work, "nop3.yaml", "--concurrency", "4", *ray)
        baseline = PEAK[0]
        print(f"overhead (`true`, concurrency 4): {n} trials local {local:.2f} s, ray 1 node "
              f"{on_ray:.2f} s; {3 * n} trials local {local3:.2f} s, ray {on_ray3:.2f} s; "
              f"per extra trial local {(local3 - local) / (2 * n) * 1000:.1f} ms, ray "
              f"{(on_ray3 - on_ray) / (2 * n) * 1000:.1f} ms; fixed ray start "
              f"{on_ray - n * (on_ray3 - on_ray) / (2 * n):.2f} s; passed "
              f"{r['summary']['passed']}/{n}")
        _, big = run(work, "big.yaml", "--concurrency", "8", "--output-limit", "40000000", *ray)
        size = sum(p.stat().st_size for p in Path(work).glob("run-*/trials/big.*/trace.jsonl"))
        print(f"head memory: 8 trials with 30 MB of output each ({size / 1e6:.0f} MB of traces "
              f"pulled home): peak private RSS of `proctor run` {PEAK[0] / 2**20:.0f} MiB (with tiny traces: "
              f"{baseline / 2**20:.0f} MiB)")
        one, r1 = run(work, "sleep", "--concurrency", "16", *ray)
        cluster.add_node()
        two, r2 = run(work, "sleep", "--concurrency", "16", *ray)
        nodes = len({t["node"] for t in r2["trials"]})
        print(f"scaling ({n} x `sleep {args.sleep:g}`, concurrency 16, 4 CPUs a node): "
              f"1 node {one:.2f} s ({n / one:.1f} trials/s), 2 nodes {two:.2f} s "
              f"({n / two:.1f} trials/s, on {nodes} nodes): x{one / two:.2f}")
        rec = str(REPO / "examples" / "reconciliation")
        rl, a = run(work, rec, "--repeat", str(args.repeat))
        rr, b = run(work, rec, "--repeat", str(args.repeat), *ray)
        print(f"reconciliation (--repeat {args.repeat}): local {rl:.2f} s "
              f"({a['summary']['passed']} passed), ray 2 nodes {rr:.2f} s "
              f"({b['summary']['passed']} passed): x{rr / rl:.2f}")
    finally:
        cluster.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
