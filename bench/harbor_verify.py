"""What a Harbor trial's verification costs (issue 35); figures in docs/benchmarks.md.

    python bench/harbor_verify.py [N] [ROUNDS] [SRC_A SRC_B]

N trials (`--repeat N`, concurrency 1) of a Harbor task whose image is proctor's base, whose
solution writes one file and whose verifier writes a reward of 1: the whole `proctor run`
timed, per trial. With two source trees (e.g. a checkout of main and this one), ROUNDS
interleaved runs of each, so both see the same machine; without, this tree alone.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PROCTOR = str(Path(sys.executable).parent / "proctor")


def _task(root: Path, image: str) -> Path:
    d = root / "verify-cost"
    (d / "tests").mkdir(parents=True)
    (d / "solution").mkdir()
    (d / "task.toml").write_text(f'version = "1.0"\n[environment]\ndocker_image = "{image}"\n')
    (d / "instruction.md").write_text("Write done.\n")
    (d / "solution" / "solve.sh").write_text("echo done > /tmp/done\n")
    (d / "tests" / "test.sh").write_text("[ -f /tmp/done ] && echo 1 > /logs/verifier/reward.txt\n")
    return d


def _run(task: Path, n: int, src: str | None, out: Path) -> float:
    env = {**os.environ, **({"PYTHONPATH": src} if src else {})}
    start = time.perf_counter()
    proc = subprocess.run([PROCTOR, "run", str(task), "--agent", "oracle", "--backend", "docker",
                           "--repeat", str(n), "--concurrency", "1", "-q", "--output-dir",
                           str(out)], env=env, capture_output=True, text=True)
    took = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit(f"proctor run failed ({src or 'this tree'}):\n{proc.stdout}{proc.stderr}")
    return took / n


def main() -> None:
    from proctor.sandbox.docker.images import ensure_base

    n = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    trees: list[str | None] = [os.path.abspath(p) for p in sys.argv[3:5]] or [None]
    with tempfile.TemporaryDirectory(prefix="proctor-bench-") as tmp:
        task = _task(Path(tmp), ensure_base())
        times: dict[str | None, list[float]] = {t: [] for t in trees}
        for r in range(rounds):
            for i, tree in enumerate(trees):
                times[tree].append(_run(task, n, tree, Path(tmp) / f"run-{r}-{i}"))
        for tree, values in times.items():
            print(f"{tree or 'this tree'}: median {statistics.median(values) * 1000:.0f} ms per "
                  f"trial (min {min(values) * 1000:.0f}, max {max(values) * 1000:.0f}; "
                  f"{rounds} runs of {n})")


if __name__ == "__main__":
    main()
