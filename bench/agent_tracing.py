"""What recording every process costs a real external agent.

    .venv/bin/python bench/agent_tracing.py [--reps 5] [--agents claude-code,codex,mini-swe-agent]

Runs each agent (from the install cache) on examples/external-agents through the real
`proctor run` machinery, in-process, alternately with the command trace on (as always) and
off (the sandbox's exec told not to trace), and compares the medians of the agent program's
own wall time (its launcher record's duration_s): the tracing overhead (target ≤ 10 %).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

from click.testing import CliRunner

import proctor.sandbox.local as local
from proctor.cli import main as proctor_main

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "external-agents"
_traced_exec = local.LocalSandbox.exec


async def _untraced_exec(self, command, *, trace=False, **kw):  # noqa: ANN001
    return await _traced_exec(self, command, trace=False, **kw)


def agent_seconds(agent: str, traced: bool, out: Path) -> float:
    local.LocalSandbox.exec = _traced_exec if traced else _untraced_exec
    res = CliRunner().invoke(proctor_main, ["run", str(EXAMPLE), "--agent", agent, "-q",
                                            "--output-dir", str(out)])
    if res.exit_code not in (0, 1):  # untraced, `ran` has nothing to see: 1 is expected
        raise SystemExit(f"{agent}: proctor run exited {res.exit_code}: {res.output[-500:]}")
    [trace] = out.glob("trials/*/trace.jsonl")
    for line in trace.read_text().splitlines():
        event = json.loads(line)
        if event.get("source") == "launcher" and not event.get("ignored"):
            return float(event["duration_s"])
    raise SystemExit(f"{agent}: no launcher record in {trace}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--agents", default="claude-code,codex,mini-swe-agent")
    args = ap.parse_args()
    os.environ.setdefault("PROCTOR_AGENTS", str(EXAMPLE.parent.parent / ".proctor" / "agents"))
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["PROCTOR_HOME"] = tmp
        print("agent             untraced (median)   traced (median)   overhead")
        for agent in args.agents.split(","):
            times: dict[bool, list[float]] = {True: [], False: []}
            agent_seconds(agent, True, Path(tmp) / f"{agent}-warm")  # install, warm caches
            for i in range(args.reps):
                for traced in (False, True):
                    times[traced].append(agent_seconds(agent, traced,
                                                       Path(tmp) / f"{agent}-{traced}-{i}"))
            off, on = statistics.median(times[False]), statistics.median(times[True])
            print(f"{agent:<17} {off:>12.2f} s {on:>15.2f} s {100 * (on - off) / off:>+9.1f} %")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
