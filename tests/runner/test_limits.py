"""Limits that stop the agent (SPEC §2 "Limits"), through the real CLI with the built-in
`llm` agent on scripted mock models: the response that reaches a limit is the last (its tool
calls are not run), what the agent did until then is judged, and `limit_hit` says which."""

from __future__ import annotations

import json

from tests.helpers.cli import results

# Each response asks for three commands at once and costs 500 tokens (400 in, 100 out).
SPIN = """
turns:
  - run: ["echo a1 >> log", "echo a2 >> log", "echo a3 >> log"]
    usage: {input: 400, output: 100}
  - run: ["echo b1 >> log", "echo b2 >> log", "echo b3 >> log"]
    usage: {input: 400, output: 100}
  - run: ["echo c1 >> log", "echo c2 >> log", "echo c3 >> log"]
    usage: {input: 400, output: 100}
  - say: done
    usage: {input: 400, output: 100}
"""

SUITE = """
cli: sh
providers: [mock/spin.yaml]
limits: {tokens: 1000, turns: 10}
tasks:
  - id: tokens
    intent: spin
    assert:
      - ran: "echo a3"
      - not_ran: "echo b"
  - id: turns
    intent: spin
    limits: {turns: 1}
    assert:
      - not_ran: "echo"
  - id: lifted
    intent: spin
    limits: {tokens: null}
    assert:
      - ran: "echo c3"
  - id: cost
    intent: spin
    limits: {tokens: null, cost_usd: 0.0015}
    assert:
      - ran: "echo c3"
"""

# $1 per million tokens: 500 tokens cost $0.0005 a response.
PRICES = '[prices."mock/*"]\ninput = 1\noutput = 1\n'


def _trials(run_dir):
    return {t["task_id"]: t for t in results(run_dir)["trials"]}


def test_the_response_that_reaches_a_limit_is_the_last_and_its_calls_never_run(cli, spec, tmp_path):
    spec(SPIN, "spin.yaml")
    spec(SUITE)
    (tmp_path / "proctor.toml").write_text(PRICES)
    out = cli("run", "spec.yaml", "--output-dir", "run", "-q")
    trials = _trials(tmp_path / "run")
    # tokens: 1000 reached by the 2nd response (a task's keys override the suite's key by key)
    t = trials["tokens"]
    assert (t["status"], t["limit_hit"], t["turns"]) == ("pass", "tokens", 2), out.stdout
    assert t["tokens"] == {"input": 800, "output": 200} and t["error_kind"] is None
    # turns: 1 -> the first response is the last: nothing ran
    t = trials["turns"]
    assert (t["status"], t["limit_hit"], t["turns"]) == ("pass", "turns", 1)
    # tokens: null lifts the suite's token limit; its turn limit (10) is never reached
    t = trials["lifted"]
    assert (t["status"], t["limit_hit"], t["turns"]) == ("pass", None, 4)
    # cost: the 3rd response reaches $0.0015: its commands never ran, so `ran: echo c3` fails,
    # and the reason says the limit first
    t = trials["cost"]
    assert (t["status"], t["limit_hit"], t["turns"]) == ("fail", "cost_usd", 3)
    assert t["cost_usd"] == 0.0015
    assert t["reason"].startswith("the agent's cost limit ($0.0015) was reached; failed: ran#0")
    assert out.returncode == 1
    trace = [json.loads(x) for x in (tmp_path / "run" / "trials" / t["id"] / "trace.jsonl")
             .read_text().splitlines()]
    [limit] = [e for e in trace if e["type"] == "limit"]
    assert limit["limit"] == "cost_usd" and limit["tool_calls_not_run"] == 3
    ran = [e["command"] for e in trace if e["type"] == "command"]
    assert ran == [f"echo {x}{i} >> log" for x in "ab" for i in (1, 2, 3)]


def test_a_scenario_limits_its_agent_and_show_says_so(cli, spec, tmp_path):
    spec(SPIN, "spin.yaml")
    spec("""
    version: 1
    id: spin
    task: {prompt: spin}
    agent: {type: llm, model: mock/spin.yaml, limits: {turns: 2}}
    invariants:
      first_round: {description: a, check: {type: file_content, path: log, contains: a3}}
      no_second: {description: b, check: {type: file_content, path: log, not_contains: b1}}
    """)
    out = cli("run", "spec.yaml", "--output-dir", "run", "-q")
    assert out.returncode == 0, out.stdout + out.stderr
    [t] = results(tmp_path / "run")["trials"]
    assert (t["limit_hit"], t["turns"]) == ("turns", 2)
    shown = cli("show", "run", t["id"])
    assert "stopped by limit: turns" in shown.stdout


def test_a_timeout_records_limit_hit_timeout(cli, spec, tmp_path):
    spec("turns:\n  - run: sleep 30\n  - say: done\n", "slow.yaml")
    spec("""
    cli: sh
    providers: [mock/slow.yaml]
    tasks:
      - id: slow
        intent: sleep
        timeout: 1
        assert: [{ran: sleep}]
    """)
    cli("run", "spec.yaml", "--output-dir", "run", "-q")
    [t] = results(tmp_path / "run")["trials"]
    assert (t["status"], t["timed_out"], t["limit_hit"]) == ("pass", True, "timeout")


def test_limits_are_validated_where_they_are_written(cli, spec):
    spec("""
    cli: sh
    limits: {tokens: 0, turn: 3}
    tasks:
      - id: t
        intent: x
        limits: {cost_usd: -1}
        assert: [{file_exists: x}]
    """)
    out = cli("validate", "spec.yaml")
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "spec.yaml:3:18: limits.tokens: must be at least 1" in out.stderr
    assert "limits.turn: unknown key 'turn'; did you mean 'turns'?" in out.stderr
    assert "spec.yaml:7:24: tasks[0].limits.cost_usd: must be more than 0" in out.stderr


def test_the_json_schema_knows_limits(cli):
    schema = json.loads(cli("schema").stdout)
    text = json.dumps(schema)
    assert '"turns"' in text and '"cost_usd"' in text and "Limits" in text


def test_validate_warns_that_limits_do_not_apply_to_a_command_agent(cli, spec):
    spec("""
    version: 1
    id: c
    task: {prompt: x}
    agent: {type: command, command: "true", limits: {turns: 3}}
    invariants:
      ok: {description: ok, check: {type: file_absent, path: x}}
    """)
    out = cli("validate", "spec.yaml")
    assert out.returncode == 0
    assert "warning: agent.limits: limits stop model-driven agents" in out.stderr
