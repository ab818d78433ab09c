"""An agent cannot outrun its limits (SPEC §2 "Limits") by spinning: not with many tool
calls in one response (the response that reaches a limit is the last, none of its calls
runs), not with many model calls in flight at once through proctor's model proxy (the one
that reaches the limit is withheld, the others are cut, later ones refused: the trial stops
within one model call of the limit). Each hostile agent has an honest twin under a limit it
never reaches. (Claude Code, Codex, mini-swe-agent end to end: tests/agents/test_limits.py.)"""

from __future__ import annotations

import asyncio

import aiohttp

from proctor.model import Limits
from proctor.providers.budget import Budget
from proctor.providers.mock_server import MockServer
from proctor.providers.proxy import ModelProxy
from proctor.providers.script import Script

CALL_TOKENS = 100  # every answer: 80 in, 20 out
SLOW = Script.model_validate({"turns": [{"say": "thinking", "delay": 0.4,
                                         "usage": {"input": 80, "output": 20}}]})


async def _spin(limits: Limits, calls: int = 20) -> tuple[list[int], ModelProxy, Budget, list]:
    """`calls` model calls fired 30 ms apart, each answered 0.4 s after it arrives: many are
    in flight when the limit is reached. Returns each call's HTTP status, in order."""
    events: list[dict] = []
    budget = Budget(limits)
    async with MockServer(SLOW, main_model="mock") as upstream:
        proxy = ModelProxy(upstream.url, main_model="mock", budget=budget,
                           on_call=events.append, cost_of=lambda m, i, o: (i + o) / 1e6)
        async with proxy, aiohttp.ClientSession() as session:
            async def one(i: int) -> int:
                await asyncio.sleep(0.03 * i)
                async with session.post(proxy.url + "/v1/chat/completions", json={
                        "model": "mock", "messages": [{"role": "user", "content": f"go {i}"}]}) as r:
                    await r.read()
                    return r.status
            statuses = await asyncio.gather(*(one(i) for i in range(calls)))
    return list(statuses), proxy, budget, events


async def test_model_calls_in_parallel_stop_within_one_call_of_a_token_limit():
    statuses, proxy, budget, events = await _spin(Limits(tokens=250))
    # The 3rd answer reached 250 tokens: counted, never delivered; the two before it were.
    assert budget.hit == "tokens" and budget.tokens == 3 * CALL_TOKENS
    assert budget.tokens < 250 + CALL_TOKENS  # within one model call of the limit
    assert statuses.count(200) == 2 and statuses.count(400) == 18
    assert (proxy.turns, proxy.tokens_in + proxy.tokens_out) == (3, 300)
    [reached] = [e for e in events if e.get("limit")]
    assert reached["limit"] == "tokens" and reached["usage"] == {"input": 80, "output": 20}
    cut = [e for e in events if str(e.get("error", "")).startswith("cut: the agent's token limit")]
    refused = [e for e in events if str(e.get("error", "")).startswith("refused:")]
    assert cut and refused and len(cut) + len(refused) == 17  # in flight then, or asked after
    assert not proxy.errors  # a limit is not an endpoint failure


async def test_a_turn_limit_withholds_the_answer_that_reaches_it():
    statuses, proxy, budget, _ = await _spin(Limits(turns=1), calls=4)
    assert budget.hit == "turns" and statuses == [400, 400, 400, 400] and proxy.turns == 1


async def test_honest_twin_under_a_limit_it_never_reaches_gets_every_answer():
    statuses, proxy, budget, events = await _spin(Limits(tokens=100_000, turns=50,
                                                         cost_usd=1.0))
    assert statuses == [200] * 20 and budget.hit is None
    assert budget.tokens == 20 * CALL_TOKENS
    assert budget.cost_usd is not None and abs(budget.cost_usd - 20 * CALL_TOKENS / 1e6) < 1e-12
    assert not any(e.get("error") for e in events)


# The built-in agent: each response asks for five commands at once; the 2nd response
# reaches the limit, so none of its five may run.
SPIN = """
turns:
  - run: ["echo a1 >> log", "echo a2 >> log", "echo a3 >> log", "echo a4 >> log", "echo a5 >> log"]
    usage: {input: 900, output: 100}
  - run: ["echo b1 >> log", "echo b2 >> log", "echo b3 >> log", "echo b4 >> log", "echo b5 >> log"]
    usage: {input: 900, output: 100}
  - run: ["echo c1 >> log"]
  - say: done
"""
SUITE = """
cli: sh
providers: [mock/spin.yaml]
tasks:
  - id: t
    intent: spin
    limits: {{tokens: {tokens}}}
    assert:
      - file_contains: {{path: log, text: a5}}
      - not_ran: "echo b"
"""


def test_parallel_tool_calls_in_the_response_that_reaches_a_limit_never_run(run_spec, tmp_path):
    (tmp_path / "spin.yaml").write_text(SPIN)
    r = run_spec(SUITE.format(tokens=1500), "--agent", "llm", expect=0)
    [t] = r["trials"]
    assert (t["status"], t["limit_hit"], t["turns"]) == ("pass", "tokens", 2)
    assert sum(t["tokens"].values()) == 2000  # within one model call of 1500


def test_honest_twin_with_room_runs_every_call(run_spec, tmp_path):
    (tmp_path / "spin.yaml").write_text(SPIN)
    r = run_spec(SUITE.format(tokens=100_000), "--agent", "llm", expect=1)
    [t] = r["trials"]
    assert (t["status"], t["limit_hit"], t["turns"]) == ("fail", None, 4)
    assert "not_ran#1" in t["reason"]
