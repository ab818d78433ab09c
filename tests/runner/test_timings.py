"""Each trial says where its time went: `trials/ID/timings.json` beside its trace (provision,
agent, verify, teardown), wall seconds that add up to no more than the trial's duration; a
fault before the agent leaves the later phases out. results.json does not carry them (every
report reads it whole)."""

from __future__ import annotations

import json

from tests.helpers.cli import results

SUITE = """
cli: sh
tasks:
  - id: slow-setup
    intent: write hello into out.txt
    setup: ["sleep 0.3"]
    solution: ["sleep 0.2; echo hello > out.txt"]
    assert:
      - file_contains: {path: out.txt, text: hello}
  - id: broken-setup
    intent: never reached
    setup: ["exit 3"]
    solution: ["true"]
    assert:
      - exit_code: 0
"""


def test_timings_per_phase(cli, spec, tmp_path):
    spec(SUITE)
    out = cli("run", "spec.yaml", "--agent", "oracle", "-q", "--output-dir", "run")
    assert out.returncode == 1, out.stdout + out.stderr  # broken-setup errors
    trials = {t["task_id"]: t for t in results(tmp_path / "run")["trials"]}
    assert not any("timings" in t for t in trials.values())

    def timings(task_id: str) -> dict[str, float]:
        path = tmp_path / "run" / "trials" / trials[task_id]["id"] / "timings.json"
        return json.loads(path.read_text())

    ran = timings("slow-setup")
    assert list(ran) == ["provision", "agent", "verify", "teardown"]
    assert ran["provision"] >= 0.3 and ran["agent"] >= 0.2 and ran["verify"] >= 0
    assert sum(ran.values()) <= trials["slow-setup"]["duration_s"] + 0.01
    assert trials["broken-setup"]["status"] == "error"
    assert list(timings("broken-setup")) == ["teardown"]
