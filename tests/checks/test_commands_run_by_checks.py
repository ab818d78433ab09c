"""verify (suite) and command_exit (scenario): `sh -c` in the workdir through the sandbox."""

from __future__ import annotations

from tests.checks.helpers import LONG, assert_cut

# --- verify ------------------------------------------------------------------------------

async def test_verify_exit_zero_passes(check, ctx):
    out = await check("verify", ctx, run="true")
    assert out.passed
    assert out.message == "verify command `true` exited with 0"


async def test_verify_runs_in_the_workdir_with_the_sandbox_env(check, make_ctx):
    ctx = make_ctx()
    (ctx.workdir / "marker").write_text("hello\n")
    out = await check("verify", ctx, run='test "$(pwd)" = "$PROCTOR_WORKDIR" && cat marker',
                      output_equals="hello")
    assert out.passed, out.message


async def test_verify_sees_the_agents_files_after_it_finished(check, ctx):
    await ctx.sandbox.exec("printf 'a,b\\n1,2\\n' > result.csv", timeout=5)
    out = await check("verify", ctx, run="wc -l < result.csv", output_equals="2")
    assert out.passed, out.message


async def test_verify_nonzero_exit_fails_and_skips_output_checks(check, ctx):
    out = await check("verify", ctx, run="echo expected data; echo oops >&2; exit 3",
                      output_contains="expected data")
    assert not out.passed and out.error is None
    assert "exited with 3, expected 0 (output checks skipped)" in out.message
    assert "stdout:\nexpected data" in out.message
    assert "stderr:\noops" in out.message


async def test_verify_output_contains(check, ctx):
    assert (await check("verify", ctx, run="echo 'expected data here'",
                        output_contains="expected data")).passed
    out = await check("verify", ctx, run="echo other", output_contains="expected data")
    assert not out.passed
    assert "exited with 0 but its stdout does not contain 'expected data'" in out.message
    assert "stdout:\nother" in out.message


async def test_verify_output_equals_is_stripped(check, ctx):
    assert (await check("verify", ctx, run="printf '  100 \\n\\n'", output_equals="100\n")).passed
    out = await check("verify", ctx, run="echo 101", output_equals="100")
    assert not out.passed
    assert "its stdout (stripped) is not '100' but '101'" in out.message


async def test_verify_both_output_checks_must_hold(check, ctx):
    out = await check("verify", ctx, run="echo abc", output_contains="b", output_equals="abc")
    assert out.passed
    assert "output_contains and output_equals hold" in out.message
    out = await check("verify", ctx, run="echo abc", output_contains="z", output_equals="x")
    assert "does not contain 'z'" in out.message and "is not 'x'" in out.message


async def test_verify_renders_workdir_placeholder(check, ctx):
    out = await check("verify", ctx, run="test -d {{workdir}} && echo {{workdir}}",
                      output_equals=str(ctx.workdir))
    assert out.passed, out.message


async def test_verify_timeout_fails_clearly(check, ctx):
    # Far longer than any test: had the check waited for it, the run would hang.
    out = await check("verify", ctx, run="echo started; sleep 3000", timeout=0.3)
    assert not out.passed and out.error is None
    assert "timed out after 0.3s" in out.message
    assert "started" in out.message


async def test_verify_default_timeout_is_60s(check):
    from proctor.checks.verify import Config
    assert Config(run="x").timeout == 60


async def test_verify_failure_quotes_output_cut(check, ctx):
    (ctx.workdir / "long.txt").write_text(LONG)
    out = await check("verify", ctx, run="cat long.txt", output_equals="short")
    assert not out.passed
    assert_cut(out.message)


# --- command_exit ------------------------------------------------------------------------

async def test_command_exit_default_zero(check, ctx):
    out = await check("command_exit", ctx, command="test -d .")
    assert out.passed
    assert out.message == "`test -d .` exited with 0"


async def test_command_exit_expected_nonzero(check, ctx):
    assert (await check("command_exit", ctx, command="exit 3", exit_code=3)).passed
    out = await check("command_exit", ctx, command="exit 0", exit_code=3)
    assert not out.passed
    assert "exited with 0, expected exit code 3" in out.message


async def test_command_exit_failure_shows_stdout_and_stderr(check, ctx):
    out = await check("command_exit", ctx,
                      command="echo '2 tests failed'; echo 'AssertionError' >&2; exit 1")
    assert not out.passed and out.error is None
    assert "`echo '2 tests failed'; echo 'AssertionError' >&2; exit 1` exited with 1" in out.message
    assert "stdout:\n2 tests failed" in out.message
    assert "stderr:\nAssertionError" in out.message
    assert out.details["stdout"] == "2 tests failed\n"


async def test_command_exit_runs_in_the_workspace(check, ctx):
    (ctx.workdir / "package.json").write_text("{}")
    assert (await check("command_exit", ctx, command="test -f package.json")).passed


async def test_command_exit_renders_params(check, make_ctx):
    ctx = make_ctx(params={"n": 7})
    assert (await check("command_exit", ctx, command="exit {{ params.n }}", exit_code=7)).passed


async def test_command_exit_timeout_fails(check, ctx):
    out = await check("command_exit", ctx, command="sleep 3000", timeout=0.3)
    assert not out.passed and out.error is None
    assert "timed out after 0.3s" in out.message


async def test_command_exit_timeout_never_matches_an_exit_code(check, ctx):
    # A killed command has no exit code, whatever exit_code the spec expects.
    out = await check("command_exit", ctx, command="sleep 30", timeout=0.3, exit_code=137)
    assert not out.passed


async def test_command_exit_failure_quotes_output_cut(check, ctx):
    (ctx.workdir / "long.txt").write_text(LONG)
    out = await check("command_exit", ctx, command="cat long.txt; exit 1")
    assert not out.passed
    assert_cut(out.message)
