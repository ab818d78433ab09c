"""What recording every process costs a real external agent.

    .venv/bin/python bench/agent_tracing.py [--reps 5] [--latency 0]
                                            [--agents claude-code,codex,mini-swe-agent]

Runs each agent (from the install cache) on examples/external-agents through the real
`proctor run` machinery, in-process, alternately with the command trace on (as always) and
off (the sandbox's exec told not to trace), and compares the medians of the agent program's
own wall time (its launcher record's duration_s): the tracing overhead (target ≤ 10 %), of
the medians and of the fastest runs (on a busy machine the median moves with the load).
Traced means as always: every process, and what each writes to its stdout and stderr.
`--latency S` makes the mock model take S seconds per answer, as a real model does (the
mock answers at once, so without it the agent's start-up is nearly the whole run).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

import yaml
from click.testing import CliRunner

import proctor.sandbox.local.backend as local
from proctor.cli import main as proctor_main

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "external-agents"
_traced_exec = local.LocalSandbox.exec


async def _untraced_exec(self, command, *, trace=False, capture=None, **kw):  # noqa: ANN001
    return await _traced_exec(self, command, trace=False, capture=None, **kw)


def example_with_latency(root: Path, latency: float) -> Path:
    """A copy of the example whose mock model waits `latency` seconds per answer."""
    spec = root / "example"
    shutil.copytree(EXAMPLE, spec)
    script = spec / "scripts" / "count.yaml"
    data = yaml.safe_load(script.read_text())
    for conv in data["conversations"]:
        for turn in conv["turns"]:
            turn["delay"] = latency
    script.write_text(yaml.safe_dump(data))
    return spec


def agent_seconds(spec: Path, agent: str, traced: bool, out: Path) -> float:
    local.LocalSandbox.exec = _traced_exec if traced else _untraced_exec
    res = CliRunner().invoke(proctor_main, ["run", str(spec), "--agent", agent, "-q",
                                            "--output-dir", str(out)])
    if res.exit_code not in (0, 1):  # untraced, `ran` has nothing to see: 1 is expected
        raise SystemExit(f"{agent}: proctor run exited {res.exit_code}: {res.output[-500:]}")
    [trace] = out.glob("trials/*/trace.jsonl")
    for line in trace.read_text().splitlines():
        event = json.loads(line)
        if event.get("source") == "launcher":
            return float(event["duration_s"])
    raise SystemExit(f"{agent}: no launcher record in {trace}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--agents", default="claude-code,codex,mini-swe-agent")
    ap.add_argument("--latency", type=float, default=0.0, help="seconds per mock answer")
    args = ap.parse_args()
    os.environ.setdefault("PROCTOR_AGENTS", str(EXAMPLE.parent.parent / ".proctor" / "agents"))
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["PROCTOR_HOME"] = tmp
        spec = example_with_latency(Path(tmp), args.latency)
        print(f"mock model latency: {args.latency:g} s per answer")
        print("agent             untraced (median)   traced (median)   overhead   "
              "overhead of the fastest runs")
        for agent in args.agents.split(","):
            times: dict[bool, list[float]] = {True: [], False: []}
            agent_seconds(spec, agent, True, Path(tmp) / f"{agent}-warm")  # install, warm up
            for i in range(args.reps):
                for traced in (False, True):
                    times[traced].append(agent_seconds(spec, agent, traced,
                                                       Path(tmp) / f"{agent}-{traced}-{i}"))
            off, on = statistics.median(times[False]), statistics.median(times[True])
            # On a shared machine the median moves with the load; the fastest run of each
            # kind is the least disturbed.
            fast_off, fast_on = min(times[False]), min(times[True])
            print(f"{agent:<17} {off:>12.2f} s {on:>15.2f} s {100 * (on - off) / off:>+9.1f} % "
                  f"{100 * (fast_on - fast_off) / fast_off:>+12.1f} % "
                  f"({fast_off:.2f} → {fast_on:.2f} s)")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
