"""Limits stop the real agents (Claude Code, Codex, mini-swe-agent) as they stop `llm`
(SPEC §2 "Limits"): proctor's model proxy withholds the answer that reaches a limit (its
tool calls never run), refuses every later call and stops the agent as at a timeout; what it
did until then is judged and `limit_hit` says which limit. The same scenario gives the same
verdict, turns and tokens under every agent, `llm` included."""

from __future__ import annotations

import pytest

from tests.helpers.agents import AGENTS, need_agent
from tests.helpers.cli import Cli, results

pytestmark = pytest.mark.slow

# Each response asks for three commands at once and costs 500 tokens.
SPIN = """
turns:
  - run: ["echo a1 >> log", "echo a2 >> log", "echo a3 >> log"]
    usage: {input: 400, output: 100}
  - run: ["echo b1 >> log", "echo b2 >> log", "echo b3 >> log"]
    usage: {input: 400, output: 100}
  - run: ["echo c1 >> log"]
    usage: {input: 400, output: 100}
  - say: done
    usage: {input: 400, output: 100}
"""

SCENARIO = """
version: 1
id: spin
task: {{prompt: spin}}
agent: {{type: {agent}, model: mock/spin.yaml, timeout: 300, limits: {limits}}}
invariants:
  first_round: {{description: ran, check: {{type: file_content, path: log, contains: a3}}}}
  not_second: {{description: never ran, check: {{type: file_content, path: log, not_contains: b}}}}
"""


@pytest.mark.parametrize("agent", ("llm", *AGENTS))
@pytest.mark.parametrize(("limits", "hit"), [("{tokens: 1000}", "tokens"),
                                              ("{turns: 2}", "turns"),
                                              ("{cost_usd: 0.001}", "cost_usd")])
def test_the_response_that_reaches_a_limit_is_withheld_and_the_agent_stopped(
        agent, limits, hit, tmp_path):
    if agent != "llm":
        need_agent(agent)
    (tmp_path / "spin.yaml").write_text(SPIN)
    (tmp_path / "spec.yaml").write_text(SCENARIO.format(agent=agent, limits=limits))
    # $1 per million tokens: each response (500 tokens) costs $0.0005
    (tmp_path / "proctor.toml").write_text('[prices."mock/*"]\ninput = 1\noutput = 1\n')
    proc = Cli(tmp_path)("run", "spec.yaml", "--output-dir", "run", "-q", timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    [t] = results(tmp_path / "run")["trials"]
    assert (t["status"], t["limit_hit"], t["turns"]) == ("pass", hit, 2), t
    assert t["tokens"] == {"input": 800, "output": 200} and t["error"] is None
    assert t["duration_s"] < 120  # stopped, not left to its 300 s
