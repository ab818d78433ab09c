"""`--executor ray --backend docker`, 1 node then 2 nodes, each node with a Docker engine of
its own: the throughput of a container dataset, and what shipping its image costs a node.

    .venv/bin/python bench/ray_docker_scaling.py [--trials 16] [--sleep 5]

Starts a Ray head without CPUs (this machine's engine builds the image) and two worker nodes
of 4 logical CPUs, each with its own `dockerd` (tests/helpers/dockerd.py: own data root,
`--bridge=none`, its own network namespace); everything is stopped and removed at the end.
The dataset: N trials of `sleep S` in proctor's base image (they use no CPU, so two cores
show the scaling), concurrency 8, 1 CPU each. Each node's first run includes shipping the
image to its engine (cold); the warm runs repeat with the image there.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
BIN = Path(sys.executable).parent
SPEC = """\
version: 1
id: nap
task: {{prompt: x}}
agent: {{type: oracle}}
solution: ["sleep {s}", "echo done > f"]
invariants:
  done: {{description: it ran, check: {{type: file_content, path: f, contains: done}}}}
parallelism: {{replicas: {n}}}
"""


def run(work: Path, spec: Path, address: str) -> tuple[float, dict, str]:
    out = work / f"run-{time.monotonic_ns()}"
    t0 = time.perf_counter()
    from tests.helpers.ray import ENV

    done = subprocess.run([str(BIN / "proctor"), "run", str(spec), "--agent", "oracle",
                           "--backend", "docker", "--executor", "ray", "--ray-address", address,
                           "--concurrency", "8", "--output-dir", str(out)], cwd=work, env=ENV,
                          capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if done.returncode != 0:
        raise SystemExit(f"proctor run failed:\n{done.stdout}\n{done.stderr}")
    shipped = "; ".join(ln.removeprefix("proctor: ") for ln in done.stderr.splitlines()
                        if " shipped to Ray node " in ln)
    return wall, json.loads((out / "results.json").read_text()), shipped


def main() -> None:
    from tests.helpers.dockerd import second_engine
    from tests.helpers.ray import _wait_nodes, start_cluster

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=16)
    ap.add_argument("--sleep", type=float, default=5.0)
    args = ap.parse_args()
    n = args.trials
    work = Path(tempfile.mkdtemp(prefix="ray-docker-bench-"))
    spec = work / "nap.yaml"
    spec.write_text(SPEC.format(s=f"{args.sleep:g}", n=n))
    with contextlib.ExitStack() as stack:
        stack.callback(shutil.rmtree, work, True)
        one_engine = stack.enter_context(second_engine())
        two_engine = stack.enter_context(second_engine())
        cluster = start_cluster(head_cpus=0, spec_dir=work)
        stack.callback(cluster.stop)
        cluster.add_node(cpus=4, env={"DOCKER_HOST": one_engine.host})
        _wait_nodes(cluster, 2)
        cold1, r, shipped1 = run(work, spec, cluster.address)
        warm1, r1, _ = run(work, spec, cluster.address)
        cluster.add_node(cpus=4, env={"DOCKER_HOST": two_engine.host})
        _wait_nodes(cluster, 3)
        cold2, r, shipped2 = run(work, spec, cluster.address)
        warm2, r2, _ = run(work, spec, cluster.address)
        nodes = len({t["node"] for t in r2["trials"]})
        print(f"{n} x `sleep {args.sleep:g}` in containers, concurrency 8, 4 CPUs a node, "
              f"each node its own engine (load average {os.getloadavg()[0]:.1f}):")
        print(f"  1 node: {warm1:.1f} s ({n / warm1:.2f} trials/s); its first run {cold1:.1f} s "
              f"({shipped1})")
        print(f"  2 nodes: {warm2:.1f} s ({n / warm2:.2f} trials/s, on {nodes} nodes); the run "
              f"that shipped the image to the second node {cold2:.1f} s ({shipped2})")
        print(f"  scaling x{warm1 / warm2:.2f}")


if __name__ == "__main__":
    main()
