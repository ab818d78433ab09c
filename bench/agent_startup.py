"""What a trivial trial of each external agent costs, and where the time goes.

    .venv/bin/python bench/agent_startup.py [--trials 5] [--agents claude-code,codex,mini-swe-agent]

For each agent (from the install cache), one `proctor run` of a trivial task — the mock model
asks for one command (`echo hi > out.txt`), then answers — with `--repeat N --concurrency 1`,
so the trials after the first reuse one box, as a run's trials do. Per trial, from
results.json and the trace:

* trial: the trial's wall time (`duration_s`: box, setup, proxy, agent, audit, checks);
* agent: the agent program's own wall time (its launcher record);
* to 1st call: from the agent's start to its first model request (its start-up);
* after last: from the last model answer to the agent's exit (its shut-down).

It prints the median and the fastest of each (on a shared machine the median moves with
the load), then the wall time of a whole one-trial `proctor run` (process start to exit),
and the CPU time (user + system, of proctor and everything it started, the agents included)
a trial adds: (CPU of the N-trial run − CPU of the one-trial run) / (N − 1). CPU time moves
far less with the machine's load than wall time does.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PROCTOR = REPO / ".venv" / "bin" / "proctor"

SUITE = """
cli: echo
providers: [mock/script.yaml]
tasks:
  - id: trivial
    intent: Write hi into out.txt.
    timeout: 120
    assert:
      - file_contains: {path: out.txt, text: hi}
"""
SCRIPT = """
conversations:
  - when: {prompt_contains: out.txt}
    turns:
      - run: "echo hi > out.txt"
      - say: "done"
"""


def _cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def run(spec: Path, agent: str, trials: int, out: Path) -> tuple[list[dict], float, float]:
    """Per-trial figures of one `proctor run`, its wall time and its CPU time."""
    t0, cpu0 = time.monotonic(), _cpu()
    proc = subprocess.run([str(PROCTOR), "run", str(spec), "--agent", agent, "--repeat",
                           str(trials), "--concurrency", "1", "-q", "--output-dir", str(out)],
                          capture_output=True, text=True, timeout=1800)
    wall, cpu = time.monotonic() - t0, _cpu() - cpu0
    if proc.returncode != 0:
        raise SystemExit(f"{agent}: proctor run exited {proc.returncode}:\n"
                         f"{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    figures = []
    for t in json.loads((out / "results.json").read_text())["trials"]:
        events = [json.loads(line) for line in
                  (out / "trials" / t["id"] / "trace.jsonl").read_text().splitlines()]
        [launcher] = [e for e in events if e["type"] == "command" and e.get("source") ==
                      "launcher"]
        calls = [e for e in events if e["type"] == "model_call"]
        start, end = launcher["started_at"], launcher["started_at"] + launcher["duration_s"]
        figures.append({
            "trial": t["duration_s"], "agent": launcher["duration_s"],
            "to 1st call": calls[0]["time"] - calls[0]["latency_s"] - start,
            "after last": end - calls[-1]["time"],
        })
    return figures, wall, cpu


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trials", type=int, default=5)
    ap.add_argument("--agents", default="claude-code,codex,mini-swe-agent")
    args = ap.parse_args()
    os.environ.setdefault("PROCTOR_AGENTS", str(REPO / ".proctor" / "agents"))
    columns = ("trial", "agent", "to 1st call", "after last")
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["PROCTOR_HOME"] = tmp
        spec = Path(tmp) / "spec"
        spec.mkdir()
        (spec / "cli-bench.yaml").write_text(SUITE)
        (spec / "script.yaml").write_text(SCRIPT)
        print(f"{args.trials} trials per agent in one box; seconds, median (fastest)")
        print(f"{'agent':<16}" + "".join(f"{c:>18}" for c in columns)
              + f"{'one-trial run':>15}{'CPU/trial':>11}")
        for agent in args.agents.split(","):
            figures, _, cpu_n = run(spec, agent, args.trials, Path(tmp) / f"{agent}-n")
            _, wall, cpu_1 = run(spec, agent, 1, Path(tmp) / f"{agent}-1")
            cells = []
            for c in columns:
                values = [f[c] for f in figures]
                cells.append(f"{statistics.median(values):.2f} ({min(values):.2f})")
            per_trial = (cpu_n - cpu_1) / (args.trials - 1) if args.trials > 1 else cpu_1
            print(f"{agent:<16}" + "".join(f"{c:>18}" for c in cells)
                  + f"{wall:>14.2f}s{per_trial:>10.2f}s")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
