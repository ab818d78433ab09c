"""Time `proctor validate` on a directory of 1,000 generated specs (half suites, half scenarios).

    .venv/bin/python bench/validate_specs.py [--count 1000] [--runs 5]

Prints the median and best wall time of the real CLI (process start included) and the time of
`proctor --help`. The target (issue 2): validate < 2 s for 1,000 specs, --help < 300 ms.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PROCTOR = str(Path(sys.executable).parent / "proctor")

SUITE = """\
cli: tool{n}
version_command: tool{n} --version
providers: [openai/gpt-4.1, anthropic/claude-sonnet-4-5]
help_modes: [injected, discoverable]
repeat: 2
thresholds: {{default: 80, tolerance: 5}}
env: {{DATA: "{{{{workdir}}}}/data.json"}}
setup: ["echo '{{}}' > data.json"]
tasks:
  - id: s{n}-create
    intent: Create a project called demo with tool{n}
    difficulty: easy
    assert:
      - exit_code: 0
      - output_contains: "created demo"
      - file_exists: demo/config.yaml
      - file_contains: {{path: demo/config.yaml, text: "name: demo"}}
      - not_ran: "rm -rf"
    solution: ["tool{n} new demo"]
  - id: s{n}-list
    intent: List the projects as JSON
    category: listing
    max_turns: 8
    assert:
      - ran: "tool{n} (ls|list)"
      - run_count: {{pattern: "tool{n}", min: 1, max: 4}}
      - verify: {{run: "tool{n} list --json | jq length", output_equals: "1"}}
  - id: s{n}-fail
    intent: Try to delete a project that does not exist
    assert:
      - exit_code: 1
      - error_contains: "not found"
      - output_equals: ""
"""

SCENARIO = """\
version: 1
id: c{n}
description: Reconcile and report ({n})
secrets:
  - {{name: TOKEN{n}, from: generated}}
services:
  - {{name: db, type: postgres, seed: "CREATE TABLE t (id int, email text);"}}
  - name: smtp
    type: http_mock
    record: true
    routes:
      - {{method: POST, path: /api/messages, status: 202, response: {{ok: true}}}}
task:
  prompt: Fix table t for run {{{{ params.size }}}} and mail finance, token {{{{ secrets.TOKEN{n} }}}}.
agent: {{type: llm, max_turns: 10}}
network: {{egress: deny, allow: [smtp]}}
forbidden: {{secrets_in_logs: deny, db_writes_outside: [t]}}
invariants:
  clean:
    description: No bad rows
    weight: 0.5
    gate: true
    check: {{type: sql, service: db, query: "SELECT count(*) FROM t WHERE email IS NULL", equals: 0}}
  mailed:
    description: One email
    weight: 0.3
    check:
      type: http_mock_assertions
      service: smtp
      assertions:
        - {{field: request_count, filters: {{method: POST}}, equals: 1}}
        - {{field: last_request.body, contains: fixed}}
  report:
    description: Report written
    weight: 0.2
    check: {{type: file_content, path: report.md, contains: fixed, pattern: "^# Report"}}
scoring: {{pass_threshold: 0.8, replica_aggregation: majority}}
parallelism: {{replicas: 2, matrix: {{size: [small, large]}}}}
solution: ["psql \\"$DATABASE_URL\\" -c 'DELETE FROM t WHERE email IS NULL'"]
"""


def generate(root: Path, count: int) -> None:
    for n in range(count):
        text = SUITE.format(n=n) if n % 2 == 0 else SCENARIO.format(n=n)
        (root / f"spec{n:04d}.yaml").write_text(text)


def timed(argv: list[str], runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        proc = subprocess.run(argv, capture_output=True, text=True)
        times.append(time.perf_counter() - start)
        if proc.returncode != 0:
            sys.exit(f"{' '.join(argv)} exited {proc.returncode}:\n{proc.stderr[-2000:]}")
    return times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=1000)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        generate(Path(tmp), args.count)
        timed([PROCTOR, "validate", tmp], 1)  # warm the page cache and .pyc files
        v = timed([PROCTOR, "validate", tmp], args.runs)
    h = timed([PROCTOR, "--help"], args.runs)
    print(f"proctor validate, {args.count} specs ({os.cpu_count()} CPUs): "
          f"median {statistics.median(v):.2f} s, best {min(v):.2f} s over {args.runs} runs")
    print(f"proctor --help: median {statistics.median(h) * 1000:.0f} ms, best {min(h) * 1000:.0f} ms")


if __name__ == "__main__":
    main()
