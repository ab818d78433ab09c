"""The trajectory checks over a trial stopped by a limit (SPEC §2): `budget.turns` counts
turns as `limits.turns` does, and `tool_used` counts what the model asked for, including the
calls of the response that reached the limit, which were not run (so they are no agent
command)."""

from __future__ import annotations

from tests.helpers.cli import results

SCRIPT = """
turns:
  - run: "echo one"
  - run: "echo two"
  - run: "echo three"
  - say: done
"""


def test_a_limit_stopped_trial_is_judged_on_what_it_did(cli, spec, tmp_path):
    (tmp_path / "script.yaml").write_text(SCRIPT)
    spec("""
    cli: echo
    providers: [mock/script.yaml]
    tasks:
      - id: stopped
        intent: say three things
        limits: {turns: 2}
        assert:
          - budget: {turns: 2, commands: 1}
          - budget: {turns: 1}
          - tool_used: {name: run_command, min: 2, max: 2}
          - tool_used: {name: run_command, args: {command: "two"}, min: 1, max: 1}
          - not_ran: "two"
    """)
    cli("run", "spec.yaml", "-q", "--output-dir", "run")
    [t] = results(tmp_path / "run")["trials"]
    assert t["limit_hit"] == "turns" and t["turns"] == 2
    assert [(c["name"], c["passed"]) for c in t["checks"]] == [
        ("budget#0", True), ("budget#1", False), ("tool_used#2", True), ("tool_used#3", True),
        ("not_ran#4", True)], t["checks"]
    assert t["checks"][1]["message"] == "over budget: turns 2 > 1"
