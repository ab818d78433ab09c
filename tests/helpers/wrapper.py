"""A command agent launched through a wrapper script (tests/runner/test_wrapper_agent.py and
its docker twin): the suite, the script, the trace's command events."""

from __future__ import annotations

import json
from pathlib import Path

SUITE = """
cli: ls
tasks:
  - id: wrapped
    intent: "Count the z lines of data.txt. Never run rm -rf."
    setup: ["printf 'x\\\\ny\\\\nx\\\\n' > data.txt"]
    assert:
      - exit_code: 1
      - output_equals: "0"
      - ran: "^grep -c z data.txt$"
      - run_count: {pattern: ".", min: 1, max: 1}
      - not_ran: "rm -rf"
"""


def script(path: Path, body: str) -> Path:
    path.write_text(body)
    path.chmod(0o755)
    return path


def command_events(run: Path) -> list[dict]:
    """Every `command` event of the run's one trial (the launcher's included, `ignored`)."""
    [trial] = (run / "trials").iterdir()
    events = [json.loads(x) for x in (trial / "trace.jsonl").read_text().splitlines()]
    return [e for e in events if e["type"] == "command"]
