"""The adaptive limit of model calls in flight against fixed limits tuned by hand.

    .venv/bin/python bench/limiter.py [--limit 4] [--trials 24] [--turns 3] [--delay 0.3]
                                      [--retry-after 1] [--fixed 2,4,8,12] [--repeat 1]

Starts a real `proctor mock-llm` whose script answers every call after `--delay` seconds
and refuses (429, `Retry-After: --retry-after`) any call arriving while `--limit` are in
flight: a provider with a concurrency limit proctor is not told. Then runs `--trials` llm
trials of `--turns` model calls each at `concurrency` 3 × limit, through the real OpenAI SDK:
once with the adaptive limit (`max_concurrency` 16, the default adaptive_concurrency), then
once per `--fixed` value with `adaptive_concurrency = false` and `max_concurrency` that value
(the limit a user would tune by hand; the best is the provider's own limit, if known).
Retries are proctor's defaults (5 attempts, 1 s base delay, Retry-After honoured).

Prints one row per configuration: wall time, successful calls per second (the ideal is
limit / delay), calls refused, trials errored; and the JSON of every row.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

BIN = Path(sys.executable).parent

SCRIPT = """
rate_limit: {{concurrent: {limit}, retry_after: {retry_after}}}
turns:
{turns}
"""

SUITE = """
cli: sh
providers: [openai/mock]
concurrency: {concurrency}
tasks:
  - id: t
    intent: write hi into out
    repeat: {trials}
    max_turns: {max_turns}
    assert: [{{file_contains: {{path: out, text: hi}}}}]
"""


def server(script: Path) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([str(BIN / "proctor"), "mock-llm", "--script", str(script),
                             "--port", "0"], stdout=subprocess.PIPE, text=True,
                            start_new_session=True)
    assert proc.stdout is not None
    banner = proc.stdout.readline()
    return proc, banner.split(" at ", 1)[1].strip()


def load(url: str) -> dict:
    with urllib.request.urlopen(url + "/_proctor/load", timeout=5) as r:
        return json.load(r)


def one(work: Path, args: argparse.Namespace, name: str, provider_conf: str) -> dict:
    d = work / name
    d.mkdir()
    # A command per turn, then the final answer: `--turns` model calls in all.
    turns = "\n".join([f"  - run: echo hi > out\n    delay: {args.delay}"]
                      + [f"  - run: echo step{i} >> log\n    delay: {args.delay}"
                         for i in range(1, args.turns - 1)]
                      + [f"  - say: done\n    delay: {args.delay}"])
    (d / "rl.yaml").write_text(SCRIPT.format(limit=args.limit, retry_after=args.retry_after,
                                             turns=turns))
    (d / "suite.yaml").write_text(SUITE.format(concurrency=3 * args.limit, trials=args.trials,
                                               max_turns=args.turns + 2))
    proc, url = server(d / "rl.yaml")
    try:
        (d / "proctor.toml").write_text(f'[providers.openai]\nbase_url = "{url}/v1"\n'
                                        f'api_key = "k"\n{provider_conf}')
        t0 = time.monotonic()
        subprocess.run([str(BIN / "proctor"), "run", "suite.yaml", "--output-dir", "run", "-q"],
                       cwd=d, capture_output=True, text=True, timeout=1800)
        wall = time.monotonic() - t0
        seen = load(url)
    finally:
        proc.terminate()
        proc.wait(10)
    results = json.loads((d / "run" / "results.json").read_text())
    [rl] = results["summary"].get("rate_limit", {}).values() or [{}]
    return {"config": name, "wall_s": round(wall, 2),
            "ok_calls_per_s": round(seen["served"] / wall, 2),
            "served": seen["served"], "refused": seen["refused"],
            "refused_share": round(seen["refused"] / max(1, seen["served"] + seen["refused"]), 3),
            "errored": results["summary"]["errored"],
            "provider_errors": sum(t.get("error_kind") == "provider" for t in results["trials"]),
            "passed": results["summary"]["passed"], "limiter": rl}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--limit", type=int, default=4, help="the provider's concurrency limit")
    ap.add_argument("--trials", type=int, default=24)
    ap.add_argument("--turns", type=int, default=3, help="model calls per trial (>= 2)")
    ap.add_argument("--delay", type=float, default=0.3, help="seconds per model call")
    ap.add_argument("--retry-after", type=float, default=1.0)
    ap.add_argument("--fixed", default="2,4,8,12", help="fixed max_concurrency values to try")
    ap.add_argument("--repeat", type=int, default=1)
    args = ap.parse_args()
    args.turns = max(2, args.turns)
    configs = [("adaptive", "max_concurrency = 16\n")] + [
        (f"fixed-{n}", f"max_concurrency = {n}\nadaptive_concurrency = false\n")
        for n in (int(x) for x in args.fixed.split(",") if x)]
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-limiter-") as tmp:
        for r in range(args.repeat):
            (Path(tmp) / str(r)).mkdir()
            rows += [one(Path(tmp) / str(r), args, name, conf) for name, conf in configs]
    ideal = args.limit / args.delay
    print(f"provider limit {args.limit}, {args.delay}s per call (ideal {ideal:.1f} calls/s), "
          f"{args.trials} trials x {args.turns} calls, concurrency {3 * args.limit}, "
          f"load {os.getloadavg()[0]:.1f}")
    print(f"{'config':<10} {'wall s':>7} {'ok calls/s':>10} {'refused':>8} {'share':>6} "
          f"{'errored':>7}")
    for row in rows:
        print(f"{row['config']:<10} {row['wall_s']:>7.2f} {row['ok_calls_per_s']:>10.2f} "
              f"{row['refused']:>8} {row['refused_share']:>6.1%} {row['errored']:>7}")
    print(json.dumps(rows))


if __name__ == "__main__":
    main()
