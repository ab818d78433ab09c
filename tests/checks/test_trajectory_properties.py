"""Property tests of the trajectory checks' edge cases: ran_in_order against the rule as SPEC
§2 words it (distinct commands in order, others between), budget at its boundaries."""

from __future__ import annotations

import asyncio
import itertools
from fractions import Fraction
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from proctor.checks import registry
from proctor.checks._match import compile_pattern
from proctor.checks.base import CheckContext, Spent
from proctor.model import AgentDef, CheckOutcome, TaskDef, Trial
from proctor.providers.base import ToolCall
from tests.checks.helpers import make_record


def context(commands: list[Any] = (), spent: Spent | None = None,
            tool_calls: list[ToolCall] = ()) -> CheckContext:
    """A context for checks that read only the record (no sandbox, no files)."""
    task = TaskDef(id="t", dialect="suite", source="s.yaml", base_dir=".", prompt="p",
                   agent=AgentDef(), checks=[])
    trial = Trial(id="t.r0", task_id="t", agent="llm", model=None, help_mode=None, replica=0)
    return CheckContext(task=task, trial=trial, sandbox=None, recorder=None,  # type: ignore[arg-type]
                        commands=[make_record(c) if isinstance(c, str) else c for c in commands],
                        agent_output="", spent=spent or Spent(), tool_calls=list(tool_calls))


def check(name: str, ctx: CheckContext, **config: Any) -> CheckOutcome:
    ct = registry()[name]
    return asyncio.run(ct.evaluate(ct.config(**config), ctx))


# -- ran_in_order --------------------------------------------------------------------------

words = st.sampled_from(["git init", "git add .", "git commit -m x", "ls", "git init && ls",
                         "make", "rm -rf build"])
patterns_ = st.sampled_from(["^git init", "git", "ls", "^make$", "commit", "rm -rf", "x",
                             "add|commit", "nothing", "init("])


def spec_in_order(patterns: list[str], commands: list[str]) -> bool:
    """SPEC §2: there are distinct agent commands c1, c2, … in this order with each ci
    matching Ri as `ran` does — every way of choosing them, tried."""
    ps = [compile_pattern(p) for p in patterns]
    return any(all(ps[j].search(commands[i]) for j, i in enumerate(chosen))
               for chosen in itertools.combinations(range(len(commands)), len(ps)))


@settings(max_examples=300, deadline=None)
@given(st.lists(patterns_, min_size=1, max_size=4), st.lists(words, max_size=7))
def test_ran_in_order_is_the_spec_rule(patterns, commands):
    out = check("ran_in_order", context(commands), patterns=patterns)
    assert out.passed == spec_in_order(patterns, commands), out.message
    positions = out.details["positions"]
    assert positions == sorted(set(positions))  # distinct, increasing
    if not out.passed:
        missing = patterns[len(positions)]
        assert f"'{missing}'" in out.message


@settings(max_examples=100, deadline=None)
@given(st.lists(patterns_, min_size=1, max_size=3), st.lists(words, max_size=6),
       st.lists(words, max_size=3))
def test_commands_added_between_or_after_never_break_an_order(patterns, commands, more):
    """Others may come between: a passing order stays passing whatever is inserted."""
    if not check("ran_in_order", context(commands), patterns=patterns).passed:
        return
    for at in range(len(commands) + 1):
        longer = commands[:at] + more + commands[at:]
        assert check("ran_in_order", context(longer), patterns=patterns).passed


# -- budget --------------------------------------------------------------------------------

counts = st.integers(0, 10**9)


@given(counts, counts, counts, st.integers(0, 50))
def test_integer_maximums_are_inclusive(tokens_in, tokens_out, turns, ncommands):
    spent = Spent(turns=turns, tokens_in=tokens_in, tokens_out=tokens_out, cost_usd=0.0)
    ctx = context(["ls"] * ncommands, spent)
    total = tokens_in + tokens_out
    assert check("budget", ctx, turns=turns, tokens=total, commands=ncommands).passed
    for key, value in (("turns", turns), ("tokens", total), ("commands", ncommands)):
        assert check("budget", ctx, **{key: value + 1}).passed
        if value > 0:
            out = check("budget", ctx, **{key: value - 1})
            assert not out.passed and f"{key} {value} > {value - 1}" in out.message


prices = st.lists(st.floats(0, 5, allow_nan=False).map(lambda f: round(f, 6)), min_size=1,
                  max_size=30)


@given(prices)
def test_a_cost_exactly_at_the_budget_is_within_it_whatever_the_float_sum(costs):
    """The trial's cost is a float sum: a budget equal to the exact cost (summed in any order)
    is met; a budget a millionth of a dollar below it is not."""
    spent = Spent(turns=len(costs), tokens_in=1, tokens_out=1, cost_usd=sum(costs))
    ctx = context([], spent)
    exact = float(sum(Fraction(c) for c in costs))
    for limit in (exact, sum(reversed(costs)), sum(sorted(costs))):
        assert check("budget", ctx, cost_usd=limit).passed
    if exact >= 1e-6:
        assert not check("budget", ctx, cost_usd=exact - 1e-6).passed


@given(st.floats(0, 10**6, allow_nan=False), st.floats(0, 10**6, allow_nan=False))
def test_duration_is_within_iff_at_most_the_maximum(took, limit):
    ctx = context([], Spent(duration_s=took, cost_usd=0.0))
    assert check("budget", ctx, duration_s=limit).passed == (took <= limit)
