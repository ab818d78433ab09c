"""exit_code, output_contains, output_equals, error_contains: all look at the LAST agent command."""

from __future__ import annotations

import pytest

from tests.checks.helpers import LONG, assert_cut

LAST_COMMAND_CHECKS = [
    ("exit_code", {"code": 0}),
    ("output_contains", {"text": "x"}),
    ("output_equals", {"text": "x"}),
    ("error_contains", {"text": "x"}),
]


@pytest.mark.parametrize(("type_", "config"), LAST_COMMAND_CHECKS)
async def test_no_command_fails_with_the_exact_message(check, ctx, type_, config):
    out = await check(type_, ctx, **config)
    assert out.passed is False
    assert out.error is None
    assert out.message == "the agent ran no command"


# --- exit_code ---------------------------------------------------------------------------

async def test_exit_code_passes_on_the_last_command(check, make_ctx, cmd):
    ctx = make_ctx([cmd("false", 1), cmd("true", 0)])
    out = await check("exit_code", ctx, code=0)
    assert out.passed and out.final_score() == 1.0
    assert out.message == "the last command exited with 0"


async def test_exit_code_expected_failure_code(check, make_ctx, cmd):
    out = await check("exit_code", make_ctx([cmd("grep nope f", 1)]), code=1)
    assert out.passed


async def test_exit_code_only_the_last_command_counts(check, make_ctx, cmd):
    ctx = make_ctx([cmd("git init", 0), cmd("git push", 128, stderr="fatal: no remote\n")])
    out = await check("exit_code", ctx, code=0)
    assert not out.passed and out.final_score() == 0.0
    assert "#2 of 2" in out.message
    assert "`git push`" in out.message
    assert "exited with 128, expected 0" in out.message
    assert "fatal: no remote" in out.message
    assert out.details["exit_code"] == 128


async def test_exit_code_timed_out_command_has_no_exit_code(check, make_ctx, cmd):
    ctx = make_ctx([cmd("sleep 999", None, timed_out=True)])
    out = await check("exit_code", ctx, code=0)
    assert not out.passed
    assert "timed out" in out.message


async def test_exit_code_failure_quotes_long_command_cut(check, make_ctx, cmd):
    out = await check("exit_code", make_ctx([cmd(LONG, 2)]), code=0)
    assert not out.passed
    assert_cut(out.message)


# --- output_contains ---------------------------------------------------------------------

async def test_output_contains_pass(check, make_ctx, cmd):
    ctx = make_ctx([cmd("mycli create", 0, stdout="Successfully created user: alice\n")])
    out = await check("output_contains", ctx, text="user: alice")
    assert out.passed


async def test_output_contains_is_case_sensitive(check, make_ctx, cmd):
    ctx = make_ctx([cmd("mycli create", 0, stdout="Successfully created\n")])
    out = await check("output_contains", ctx, text="successfully created")
    assert not out.passed
    assert "'successfully created' not found in the stdout" in out.message
    assert "Successfully created" in out.message
    assert "`mycli create`" in out.message


async def test_output_contains_ignores_earlier_commands(check, make_ctx, cmd):
    ctx = make_ctx([cmd("a", 0, stdout="needle"), cmd("b", 0, stdout="hay")])
    out = await check("output_contains", ctx, text="needle")
    assert not out.passed
    assert "stdout:\nhay" in out.message


async def test_output_contains_does_not_look_at_stderr(check, make_ctx, cmd):
    ctx = make_ctx([cmd("a", 0, stdout="", stderr="needle")])
    out = await check("output_contains", ctx, text="needle")
    assert not out.passed
    assert "stdout: (empty)" in out.message


async def test_output_contains_failure_quotes_stdout_cut(check, make_ctx, cmd):
    out = await check("output_contains", make_ctx([cmd("a", 0, stdout=LONG)]), text="zzz")
    assert not out.passed
    assert_cut(out.message)


# --- output_equals -----------------------------------------------------------------------

async def test_output_equals_strips_both_sides(check, make_ctx, cmd):
    ctx = make_ctx([cmd("wc -l f", 0, stdout="  \n100\n\n")])
    assert (await check("output_equals", ctx, text="100")).passed
    assert (await check("output_equals", ctx, text="\t100  \n")).passed


async def test_output_equals_inner_whitespace_matters(check, make_ctx, cmd):
    ctx = make_ctx([cmd("echo", 0, stdout="a  b\n")])
    out = await check("output_equals", ctx, text="a b")
    assert not out.passed
    assert "expected: 'a b'" in out.message
    assert "observed: 'a  b'" in out.message


async def test_output_equals_shows_expected_and_observed(check, make_ctx, cmd):
    ctx = make_ctx([cmd("status", 0, stdout="OK!\n")])
    out = await check("output_equals", ctx, text="OK")
    assert not out.passed
    assert "`status`" in out.message
    assert "expected: 'OK'\nobserved: 'OK!'" in out.message


async def test_output_equals_substring_is_not_enough(check, make_ctx, cmd):
    ctx = make_ctx([cmd("status", 0, stdout="OK\nmore\n")])
    assert not (await check("output_equals", ctx, text="OK")).passed


async def test_output_equals_failure_quotes_stdout_cut(check, make_ctx, cmd):
    out = await check("output_equals", make_ctx([cmd("a", 0, stdout=LONG)]), text="zzz")
    assert not out.passed
    assert_cut(out.message)


# --- error_contains ----------------------------------------------------------------------

async def test_error_contains_looks_at_stderr(check, make_ctx, cmd):
    ctx = make_ctx([cmd("mycli old", 0, stdout="done", stderr="warning: deprecated flag\n")])
    assert (await check("error_contains", ctx, text="warning: deprecated")).passed


async def test_error_contains_does_not_look_at_stdout(check, make_ctx, cmd):
    ctx = make_ctx([cmd("mycli old", 1, stdout="file not found", stderr="boom")])
    out = await check("error_contains", ctx, text="file not found")
    assert not out.passed
    assert "'file not found' not found in the stderr" in out.message
    assert "stderr:\nboom" in out.message


async def test_error_contains_only_the_last_command(check, make_ctx, cmd):
    ctx = make_ctx([cmd("a", 1, stderr="file not found"), cmd("b", 0, stderr="")])
    out = await check("error_contains", ctx, text="file not found")
    assert not out.passed
    assert "stderr: (empty)" in out.message


async def test_error_contains_failure_quotes_stderr_cut(check, make_ctx, cmd):
    out = await check("error_contains", make_ctx([cmd("a", 1, stderr=LONG)]), text="zzz")
    assert not out.passed
    assert_cut(out.message)
