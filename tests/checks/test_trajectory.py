"""ran_in_order, tool_used, budget (SPEC §2 "Beyond cli-bench"): checks over the record —
the agent commands, the model's tool calls, what the trial spent. Their meaning under every
agent is in tests/agents/test_conformance.py; here, each rule and message on a real context."""

from __future__ import annotations

import pydantic
import pytest

from proctor.checks.base import Spent
from proctor.checks.budget import Config as BudgetConfig
from proctor.checks.tool_used import Config as ToolUsedConfig
from proctor.providers.base import ToolCall
from tests.checks.helpers import LONG, assert_cut, make_record

GIT = ["git init", "git add .", "git commit -m first", "git log"]


# --- ran_in_order -------------------------------------------------------------------------

async def test_in_order_with_commands_between(check, make_ctx):
    out = await check("ran_in_order", make_ctx(GIT), patterns=["^git init", "^git commit"])
    assert out.passed, out.message
    assert out.message == ("in order: '^git init' by #1 git init; then '^git commit' by "
                           "#3 git commit -m first")
    assert out.details == {"positions": [1, 3]}


async def test_out_of_order_fails_saying_where_the_order_broke(check, make_ctx):
    out = await check("ran_in_order", make_ctx(GIT), patterns=["^git commit", "^git add"])
    assert not out.passed and out.error is None
    assert out.message == (
        "matched '^git commit' by #3 git commit -m first; but no agent command after #3 "
        "matches '^git add'; it matches #2, too early (ran 4 commands: git init, git add ., "
        "git commit -m first, git log)")


async def test_each_pattern_needs_its_own_command(check, make_ctx):
    """Distinct commands: one command matching both patterns does not make an order."""
    ctx = make_ctx(["git init && git commit -m x"])
    out = await check("ran_in_order", ctx, patterns=["git init", "git commit"])
    assert not out.passed
    ctx = make_ctx(["git init && git commit -m x", "git commit -m y"])
    assert (await check("ran_in_order", ctx, patterns=["git init", "git commit"])).passed
    # the same pattern twice: two commands
    out = await check("ran_in_order", make_ctx(["ls"]), patterns=["ls", "ls"])
    assert not out.passed and "no agent command after #1 matches 'ls'" in out.message


async def test_a_pattern_matches_a_process_of_the_command(check, make_ctx):
    """As `ran`: the command string or any program it started (`sh cleanup.sh` → rm)."""
    cleanup = make_record("sh cleanup.sh", processes=[["rm", "-rf", "build"]])
    ctx = make_ctx(["make", cleanup])
    out = await check("ran_in_order", ctx, patterns=["^make$", "^rm -rf"])
    assert out.passed and "(its program `rm -rf build`)" in out.message


async def test_no_command_at_all(check, ctx):
    out = await check("ran_in_order", ctx, patterns=["ls"])
    assert not out.passed
    assert out.message == "no agent command matches 'ls' (the agent ran no command)"


async def test_an_invalid_regex_matches_literally(check, make_ctx):
    ctx = make_ctx(["echo foo(", "echo bar"])
    out = await check("ran_in_order", ctx, patterns=["foo(", "bar"])
    assert out.passed
    out = await check("ran_in_order", ctx, patterns=["bar", "foo("])
    assert not out.passed and "matched as a literal substring" in out.message


async def test_ran_in_order_quotes_what_was_seen_cut(check, make_ctx):
    out = await check("ran_in_order", make_ctx([LONG]), patterns=["nothing"])
    assert_cut(out.message)


def test_ran_in_order_needs_a_pattern():
    from proctor.checks.ran_in_order import Config

    with pytest.raises(pydantic.ValidationError):
        Config(patterns=[])


# --- tool_used ----------------------------------------------------------------------------

def calls(*spec: tuple[str, dict]) -> list[ToolCall]:
    return [ToolCall(f"c{i}", name, args) for i, (name, args) in enumerate(spec)]


CALLS = calls(("Bash", {"command": "git status", "description": "look"}),
              ("Edit", {"file_path": "/w/a.py", "old_string": "x", "new_string": "y"}),
              ("Write", {"file_path": "/w/b.py", "content": "print(1)"}),
              ("mcp__github__create_issue", {"title": "bug", "labels": ["p1", "ui"]}),
              ("Bash", {"command": "git commit -m x"}))


async def test_tool_used_counts_by_whole_name(check, ctx):
    ctx.tool_calls = CALLS
    assert (await check("tool_used", ctx, name="Edit|Write", min=2, max=2)).passed
    out = await check("tool_used", ctx, name="Edi")  # a whole-name match: not `Edit`
    assert not out.passed
    assert out.message.startswith("0 tool calls of the model match name 'Edi', expected at "
                                  "least 1; the model made 5 tool calls: #1 Bash ")
    assert (await check("tool_used", ctx, name="mcp__github__.*")).passed


async def test_tool_used_arguments_are_searched(check, ctx):
    ctx.tool_calls = CALLS
    out = await check("tool_used", ctx, name="Bash", args={"command": "^git commit"})
    assert out.passed and out.details["count"] == 1
    # a non-string argument is matched as its JSON text
    assert (await check("tool_used", ctx, name=".*", args={"labels": '"p1"'})).passed
    # every given argument must match; a call without the argument does not
    assert not (await check("tool_used", ctx, name="Bash",
                            args={"command": "git", "description": "nothing"})).passed
    assert not (await check("tool_used", ctx, name=".*", args={"path": "a.py"})).passed


async def test_tool_used_max_0_says_a_tool_was_never_used(check, ctx):
    ctx.tool_calls = CALLS
    assert (await check("tool_used", ctx, name="Read", max=0, min=0)).passed
    out = await check("tool_used", ctx, name="Write", min=0, max=0)
    assert not out.passed
    assert out.message == ('1 tool call of the model matches name \'Write\', expected exactly '
                           '0; matching: #3 Write {"content": "print(1)", "file_path": "/w/b.py"}')


async def test_tool_used_when_the_model_made_no_call(check, ctx):
    out = await check("tool_used", ctx, name="Bash")
    assert not out.passed and out.message.endswith("; the model made no tool call")
    assert (await check("tool_used", ctx, name="Bash", min=0, max=0)).passed


async def test_tool_used_invalid_regexes_match_literally(check, ctx):
    ctx.tool_calls = calls(("run[", {"command": "a(b"}))
    out = await check("tool_used", ctx, name="run[", args={"command": "a("})
    assert out.passed, out.message
    out = await check("tool_used", ctx, name="run", args={"command": "a("})
    assert not out.passed and "matched as the whole text, literally" not in out.message


async def test_tool_used_quotes_what_was_seen_cut(check, ctx):
    ctx.tool_calls = calls(*[("Bash", {"command": LONG})] * 20)
    out = await check("tool_used", ctx, name="Bash", max=1)
    assert not out.passed and "more characters]" in out.message
    quoted = out.message.split("; matching: ", 1)[1]
    assert len(quoted) <= 2000 + len("... [9999 more characters]")


def test_tool_used_min_above_max_is_a_spec_error():
    with pytest.raises(pydantic.ValidationError, match="min .3. is greater than max .1."):
        ToolUsedConfig(name="Bash", min=3, max=1)


# --- budget -------------------------------------------------------------------------------

async def test_budget_within_every_maximum(check, make_ctx):
    ctx = make_ctx(["ls", "ls"])
    ctx.spent = Spent(turns=3, tokens_in=900, tokens_out=100, cost_usd=0.25, duration_s=12.5)
    out = await check("budget", ctx, turns=3, commands=2, tokens=1000, cost_usd=0.25,
                      duration_s="12.5s")
    assert out.passed, out.message
    assert out.message == ("within budget: turns 3 <= 3, commands 2 <= 2, tokens 1000 <= 1000, "
                           "cost_usd $0.25 <= $0.25, duration_s 12.5 s <= 12.5 s")


async def test_budget_over_names_each_figure(check, make_ctx):
    ctx = make_ctx(["ls", "ls", "ls"])
    ctx.spent = Spent(turns=4, tokens_in=900, tokens_out=101, cost_usd=0.3, duration_s=61)
    out = await check("budget", ctx, turns=3, commands=3, tokens=1000, duration_s="1m")
    assert not out.passed
    assert out.message == ("over budget: turns 4 > 3; tokens 1001 > 1000; duration_s 61 s > 60 s"
                           " (within: commands 3 <= 3)")
    assert out.details["observed"]["tokens"] == 1001


async def test_an_unknown_cost_fails_cost_usd(check, ctx):
    ctx.spent = Spent(turns=2, tokens_in=10, tokens_out=5, cost_usd=None)
    out = await check("budget", ctx, cost_usd=100)
    assert not out.passed and out.message.startswith("over budget: cost unknown")
    assert (await check("budget", ctx, turns=2)).passed  # other figures are known


async def test_no_model_call_costs_nothing(check, ctx):
    """oracle and nop call no model: results.json says cost null, budget knows it is 0."""
    ctx.spent = Spent(turns=0, tokens_in=0, tokens_out=0, cost_usd=None)
    assert (await check("budget", ctx, cost_usd=0)).passed


async def test_an_agent_whose_model_proctor_cannot_see(check, make_ctx):
    """The command agent: tokens unknown, so are its turns and cost; its commands are not."""
    ctx = make_ctx([["./agent.sh", "task"]])
    ctx.spent = Spent(turns=1, tokens_in=None, tokens_out=None, cost_usd=None, duration_s=2)
    for key, what in (("turns", "turns"), ("tokens", "tokens"), ("cost_usd", "cost")):
        out = await check("budget", ctx, **{key: 10**6})
        assert not out.passed and out.message.startswith(f"over budget: {what} unknown"), key
    assert (await check("budget", ctx, commands=1, duration_s=2)).passed


def test_budget_needs_a_maximum():
    with pytest.raises(pydantic.ValidationError, match="give at least one maximum"):
        BudgetConfig()
    with pytest.raises(pydantic.ValidationError):
        BudgetConfig(tokens=-1)
