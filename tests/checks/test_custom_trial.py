"""custom: the context's `trial` {id, replica, params} (SPEC §3), end to end: replicas of one
scenario each see their own trial, under every agent proctor drives itself (the real
third-party agents give the same context: it comes from the trial, not the agent)."""

from __future__ import annotations

import json

import pytest

from tests.helpers.cli import results, run_dir_of

WHO = """import json, sys
ctx = json.load(sys.stdin)
print(json.dumps({"passed": True, "reason": json.dumps(ctx["trial"], sort_keys=True)}))
"""


@pytest.mark.parametrize("agent", ["oracle", "nop", "llm"])
def test_each_replica_sees_its_own_trial(cli, spec, tmp_path, agent):
    (tmp_path / "who.py").write_text(WHO)
    spec("""
    version: 1
    id: replicated
    task: {prompt: say hi}
    agent: {type: oracle, model: mock/solver}
    solution: ["echo hi"]
    invariants:
      who:
        description: the script says which trial it judged
        check: {type: custom, script: who.py}
    parallelism: {replicas: 2, matrix: {size: [s]}}
    """, name="replicated.yaml")
    out = cli("run", "replicated.yaml", "--agent", agent, "-q")
    assert out.returncode == 0, out.stdout + out.stderr


    trials = sorted(results(run_dir_of(out))["trials"], key=lambda t: t["replica"])
    seen = [json.loads(t["checks"][0]["message"]) for t in trials]
    assert seen == [{"id": t["id"], "replica": t["replica"], "params": {"size": "s"}}
                    for t in trials]
    assert [s["replica"] for s in seen] == [0, 1] and seen[0]["id"] != seen[1]["id"]
