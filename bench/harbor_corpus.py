"""A large public Harbor corpus through proctor (issue 26); figures in docs/benchmarks.md.

    python bench/harbor_corpus.py CORPUS_DIR [SAMPLE [SEED]]

CORPUS_DIR is a Harbor dataset kept outside the repository (e.g. terminal-bench-env's
`environments_harbor/`, 3,566 tasks). It measures:

* load: every task of the corpus through `load_specs` (wall time, tasks loaded, problems);
* for SAMPLE tasks (default 40, a seeded sample): the image build through proctor (the image
  map resolving the FROM no registry serves), then one trial with the do-nothing agent
  (`proctor run --agent nop`: container, verifier, reward), against the bare engine doing the
  same by hand: `docker run` of the built image, `docker cp` of tests/, `docker exec bash
  /tests/test.sh`, reading the reward, `docker rm -f`. The corpus has no solutions, so the
  verifier is exercised with `nop`: a reward of 0 is the expected verdict, 1 a hackable task,
  no reward an error.

Each sampled image is removed after it is measured (the corpus's images are large).
"""

from __future__ import annotations

import contextlib
import json
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PROCTOR = str(Path(sys.executable).parent / "proctor")


def main() -> None:
    corpus = Path(sys.argv[1]).resolve()
    sample = int(sys.argv[2]) if len(sys.argv) > 2 else 40
    seed = int(sys.argv[3]) if len(sys.argv) > 3 else 1
    from proctor.errors import SpecError
    from proctor.spec.load import load_specs

    t0 = time.perf_counter()
    try:
        loaded = load_specs([str(corpus)])
        tasks, problems = loaded.tasks, [str(w) for w in loaded.warnings]
    except SpecError as e:
        tasks, problems = [], [str(i) for i in e.issues]
    load_s = time.perf_counter() - t0
    print(json.dumps({"load": {"tasks": len(tasks), "seconds": round(load_s, 2),
                               "problems": len(problems), "first": problems[:5]}}), flush=True)
    chosen = random.Random(seed).sample(sorted(tasks, key=lambda t: t.id), min(sample, len(tasks)))
    rows = [measure(t) for t in chosen]
    summary(rows)


def measure(task) -> dict:
    from proctor.errors import SetupError
    from proctor.sandbox.docker import images as dockerimages

    row: dict = {"task": task.id}
    t0 = time.perf_counter()
    try:
        image = dockerimages.from_dockerfile(task.dockerfile, config=None,
                                             timeout=float(task.resources["build_timeout"]))
        row["build_s"] = round(time.perf_counter() - t0, 2)
        t1 = time.perf_counter()
        dockerimages.from_dockerfile(task.dockerfile, config=None)  # built: proctor's own share
        row["build_overhead_s"] = round(time.perf_counter() - t1, 3)
    except SetupError as e:
        row.update(build_s=round(time.perf_counter() - t0, 2), built=False,
                   why=str(e).splitlines()[-1][:200])
        print(json.dumps(row), flush=True)
        return row
    row["built"] = True
    try:
        row.update(_proctor_trial(task))
        row.update(_bare_trial(task, image))
    finally:
        subprocess.run(["docker", "rmi", "-f", image], capture_output=True)
        dockerimages.ready.discard(image)
    print(json.dumps(row), flush=True)
    return row


def _proctor_trial(task) -> dict:
    out = Path(tempfile.mkdtemp(prefix="proctor-bench-harbor-"))
    try:
        t0 = time.perf_counter()
        done = subprocess.run([PROCTOR, "run", task.base_dir, "--agent", "nop", "-q",
                               "--output-dir", str(out / "run")], capture_output=True, text=True,
                              timeout=3600)
        wall = time.perf_counter() - t0
        try:
            (trial,) = json.loads((out / "run" / "results.json").read_text())["trials"]
        except (OSError, ValueError):
            return {"proctor_s": round(wall, 2), "status": "no-run",
                    "why": (done.stderr.strip().splitlines() or [""])[-1][:200]}
        verifier = [c for c in trial["checks"] if c["name"] == "reward"]
        return {"proctor_s": round(wall, 2), "trial_s": trial["duration_s"],
                "status": trial["status"],
                "reward": verifier[0]["score"] if verifier else None,
                "why": (trial.get("error") or "")[:200]}
    finally:
        shutil.rmtree(out, ignore_errors=True)


def _bare_trial(task, image: str) -> dict:
    """What the engine alone takes for the same trial (network on the default bridge)."""
    timeout = float(task.checks[0].config.timeout)
    t0 = time.perf_counter()
    cid = subprocess.run(["docker", "run", "-d", image, "sleep", "infinity"],
                         capture_output=True, text=True).stdout.strip()
    try:
        subprocess.run(["docker", "exec", cid, "mkdir", "-p", "/tests", "/logs/verifier"],
                       capture_output=True)
        subprocess.run(["docker", "cp", f"{task.base_dir}/tests/.", f"{cid}:/tests"],
                       capture_output=True)
        with contextlib.suppress(subprocess.TimeoutExpired):
            subprocess.run(["docker", "exec", cid, "bash", "/tests/test.sh"],
                           capture_output=True, timeout=timeout)
        reward = subprocess.run(["docker", "exec", cid, "cat", "/logs/verifier/reward.txt"],
                                capture_output=True, text=True).stdout.strip()
    finally:
        subprocess.run(["docker", "rm", "-f", cid], capture_output=True)
    return {"bare_s": round(time.perf_counter() - t0, 2), "bare_reward": reward}


def summary(rows: list[dict]) -> None:
    built = [r for r in rows if r.get("built")]
    ran = [r for r in built if "trial_s" in r]
    both = [r for r in ran if "bare_s" in r]
    med = lambda xs: round(statistics.median(xs), 2) if xs else None  # noqa: E731
    print(json.dumps({"summary": {
        "sampled": len(rows), "built": len(built),
        "build_failures": [(r["task"], r.get("why")) for r in rows if not r.get("built")],
        "median_build_s": med([r["build_s"] for r in built]),
        "median_build_overhead_s": med([r["build_overhead_s"] for r in built]),
        "verified": {s: sum(r.get("status") == s for r in ran) for s in ("fail", "pass", "error")},
        "errors": [(r["task"], r.get("why")) for r in ran if r.get("status") == "error"],
        "hackable": [r["task"] for r in ran if r.get("status") == "pass"],
        "median_trial_s": med([r["trial_s"] for r in ran]),
        "median_proctor_run_s": med([r["proctor_s"] for r in ran]),
        "median_bare_s": med([r["bare_s"] for r in both]),
        "median_overhead_s": med([r["proctor_s"] - r["bare_s"] for r in both]),
        "same_verdict": sum((r.get("reward") == 1.0) == (r.get("bare_reward") == "1")
                            for r in both),
    }}, indent=1), flush=True)


if __name__ == "__main__":
    main()
