"""ran, not_ran, run_count: regex re.search over every agent command; invalid regex = literal."""

from __future__ import annotations

import pydantic
import pytest

from proctor.checks._match import compile_pattern, regex_error
from proctor.checks.run_count import Config as RunCountConfig
from tests.checks.helpers import LONG, assert_cut, make_record

GIT = ["git init", "git add .", "git status"]


# --- the shared matcher ------------------------------------------------------------------

def test_pattern_is_searched_not_matched():
    assert compile_pattern("sudo").search("echo hi && sudo rm -rf x")
    assert compile_pattern(r"git commit.*-m").search("git commit -a -m 'msg'")
    assert not compile_pattern(r"^sudo").search("echo sudo")


def test_invalid_regex_falls_back_to_literal_substring():
    p = compile_pattern("foo(")
    assert p.literal and regex_error("foo(")
    assert p.search("echo foo(bar")
    assert not p.search("echo foo")
    assert "matched as a literal substring" in p.describe()
    assert regex_error("foo\\(") is None


def test_a_program_matches_by_the_file_it_executed_whatever_its_argv0():
    """SPEC §2: argv with argv[0] replaced by the base name of the executed file."""
    from proctor.checks._match import first_match
    from proctor.model import Process

    record = make_record("bash run.sh", processes=[])
    record.processes = [Process(["cleaner", "-rf", "junk"], -1, 0, exe="/usr/bin/rm"),
                        Process(["/usr/bin/ls", "x"], -1, 0, exe="/usr/bin/ls")]
    assert first_match(compile_pattern("rm -rf"), record) == "rm -rf junk"
    assert first_match(compile_pattern("^cleaner -rf"), record) == "cleaner -rf junk"
    assert first_match(compile_pattern("^ls x$"), record) == "ls x"
    assert record.processes[1].texts() == ["/usr/bin/ls x", "ls x"]
    assert Process(["rm", "x"], -1, 0, exe="/usr/bin/rm").texts() == ["rm x"]
    assert Process(["rm", "x"], -1, 0).texts() == ["rm x"]  # an older record: argv only
    loader = Process(["/lib64/ld-linux-x86-64.so.2", "--argv0", "x", "./cleaner", "-rf", "j"],
                     -1, 0, exe="/usr/bin/rm", exe_lead=4)
    assert loader.texts()[1] == "rm -rf j"


# --- ran ---------------------------------------------------------------------------------

async def test_ran_passes_when_some_command_matches(check, make_ctx):
    ctx = make_ctx(["git init", "git add .", "git commit -a -m 'first'", "git log"])
    out = await check("ran", ctx, pattern="git commit.*-m")
    assert out.passed
    assert "command #3" in out.message


async def test_ran_failure_message_lists_the_commands(check, make_ctx):
    out = await check("ran", make_ctx(GIT), pattern="git commit.*-m")
    assert not out.passed and out.error is None
    assert out.message == ("no agent command matches 'git commit.*-m' "
                           "(ran 3 commands: git init, git add ., git status)")


async def test_ran_when_the_agent_ran_nothing(check, ctx):
    out = await check("ran", ctx, pattern="git")
    assert not out.passed
    assert out.message == "no agent command matches 'git' (the agent ran no command)"


async def test_ran_invalid_regex_matches_literally(check, make_ctx):
    ctx = make_ctx(["echo ok", "python -c 'print(1'"])
    out = await check("ran", ctx, pattern="print(1")
    assert out.passed
    assert "literal" in out.message
    assert not (await check("ran", make_ctx(["print1"]), pattern="print(1")).passed


async def test_ran_is_case_sensitive_regex(check, make_ctx):
    assert not (await check("ran", make_ctx(["Docker build ."]), pattern="docker build")).passed
    assert (await check("ran", make_ctx(["docker build ."]), pattern="docker\\s+build")).passed


async def test_ran_matches_exec_records_of_a_command_agent(check, make_ctx):
    # A `command` agent's processes are recorded as argv joined with shlex.join.
    ctx = make_ctx([make_record(["git", "commit", "-m", "fix bug"]), make_record(["ls"])])
    assert ctx.commands[0].command == "git commit -m 'fix bug'"
    out = await check("ran", ctx, pattern="git commit.*-m")
    assert out.passed
    out = await check("not_ran", ctx, pattern="^ls$")
    assert not out.passed


async def test_ran_failure_quotes_command_list_cut(check, make_ctx):
    out = await check("ran", make_ctx([LONG]), pattern="zzz")
    assert not out.passed
    assert_cut(out.message)


# --- not_ran -----------------------------------------------------------------------------

async def test_not_ran_passes_when_nothing_matches(check, make_ctx):
    out = await check("not_ran", make_ctx(GIT), pattern="rm -rf /")
    assert out.passed
    assert out.message == "none of 3 agent commands matches 'rm -rf /'"


async def test_not_ran_passes_when_the_agent_ran_nothing(check, ctx):
    assert (await check("not_ran", ctx, pattern="sudo")).passed


async def test_not_ran_failure_names_the_offending_commands(check, make_ctx):
    ctx = make_ctx(["ls", "sudo apt install x", "echo ok", "sudo reboot"])
    out = await check("not_ran", ctx, pattern="sudo")
    assert not out.passed
    assert out.message == ("2 of 4 agent commands match 'sudo': "
                           "#2 sudo apt install x, #4 sudo reboot")


async def test_not_ran_invalid_regex_matches_literally(check, make_ctx):
    out = await check("not_ran", make_ctx(["DROP TABLE users; -- [x"]), pattern="[x")
    assert not out.passed
    assert "literal" in out.message
    assert (await check("not_ran", make_ctx(["x"]), pattern="[x")).passed


async def test_not_ran_failure_quotes_matches_cut(check, make_ctx):
    out = await check("not_ran", make_ctx(["sudo " + LONG]), pattern="sudo")
    assert not out.passed
    assert_cut(out.message, "#1 sudo " + LONG)


# --- run_count ---------------------------------------------------------------------------

CURLS = ["curl a", "ls", "curl b", "curl c"]


@pytest.mark.parametrize(("bounds", "passed"), [
    ({"min": 3, "max": 3}, True),   # both bounds inclusive
    ({"min": 3}, True),             # max unbounded
    ({"min": 0, "max": 3}, True),
    ({"max": 3}, True),             # min defaults to 0
    ({"min": 2, "max": 5}, True),
    ({"min": 4}, False),
    ({"min": 1, "max": 2}, False),
    ({"max": 0}, False),
])
async def test_run_count_bounds(check, make_ctx, bounds, passed):
    out = await check("run_count", make_ctx(CURLS), pattern="curl", **bounds)
    assert out.passed is passed
    assert out.details["count"] == 3


async def test_run_count_with_no_bounds_passes_on_zero(check, ctx):
    assert (await check("run_count", ctx, pattern="curl")).passed


async def test_run_count_huge_count_with_unbounded_max(check, make_ctx):
    out = await check("run_count", make_ctx(["curl x"] * 500), pattern="curl", min=1)
    assert out.passed
    assert out.message == "500 agent commands match 'curl' (expected at least 1)"


async def test_run_count_messages(check, make_ctx):
    out = await check("run_count", make_ctx(CURLS), pattern="curl", min=1, max=2)
    assert out.message == ("3 agent commands match 'curl', expected 1 to 2: "
                           "#1 curl a, #3 curl b, #4 curl c")
    out = await check("run_count", make_ctx(CURLS), pattern="curl", min=2, max=2)
    assert "expected exactly 2" in out.message
    out = await check("run_count", make_ctx(["ls", "pwd"]), pattern="docker pull", min=1)
    assert out.message == ("0 agent commands match 'docker pull', expected at least 1: "
                           "ran 2 commands: ls, pwd")


async def test_run_count_invalid_regex_matches_literally(check, make_ctx):
    out = await check("run_count", make_ctx(["a(b", "a(b", "ab"]), pattern="a(b", min=2, max=2)
    assert out.passed
    assert "literal" in out.message


def test_run_count_min_greater_than_max_is_a_spec_error():
    with pytest.raises(pydantic.ValidationError):
        RunCountConfig(pattern="x", min=3, max=2)


async def test_run_count_failure_quotes_matches_cut(check, make_ctx):
    out = await check("run_count", make_ctx(["curl " + LONG]), pattern="curl", min=2)
    assert not out.passed
    assert_cut(out.message, "#1 curl " + LONG)


# --- an agent command is its string and its processes (SPEC §2) ----------------------------

COMMIT = make_record("git add -A && git commit -qm x",
                     processes=[["git", "add", "-A"], ["git", "commit", "-qm", "x"],
                                ["git", "maintenance", "run", "--auto"]])
CLEANUP = make_record("sh cleanup.sh", processes=[["sh", "cleanup.sh"], ["rm", "-rf", "build"]])


async def test_an_anchored_pattern_matches_a_process_of_a_compound_command(check, make_ctx):
    out = await check("ran", make_ctx([COMMIT]), pattern=r"^git commit\b")
    assert out.passed
    assert out.message == ("command #1 matches '^git commit\\b': git add -A && git commit -qm x "
                           "(its program `git commit -qm x`)")
    assert not (await check("ran", make_ctx([COMMIT]), pattern=r"^git push\b")).passed


async def test_an_agent_command_counts_once_however_many_of_its_parts_match(check, make_ctx):
    # the string and three of git's processes match: one agent command
    out = await check("run_count", make_ctx([COMMIT, "git log"]), pattern=r"\bgit\b", max=2)
    assert out.passed and out.details["count"] == 2
    out = await check("run_count", make_ctx([COMMIT]), pattern=r"^git ", max=1)
    assert out.passed and out.details["count"] == 1


async def test_a_script_that_runs_a_forbidden_command_is_caught(check, make_ctx):
    out = await check("not_ran", make_ctx(["ls", CLEANUP]), pattern="rm -rf")
    assert not out.passed
    assert out.message == ("1 of 2 agent commands matches 'rm -rf': "
                           "#2 sh cleanup.sh (its program: rm -rf build)")
    # the honest twin: a script that removes nothing
    honest = make_record("sh cleanup.sh", processes=[["sh", "cleanup.sh"], ["ls"]])
    assert (await check("not_ran", make_ctx([honest]), pattern="rm -rf")).passed


async def test_argv_is_joined_with_spaces_not_quoted(check, make_ctx):
    rec = make_record("./commit.sh", processes=[["git", "commit", "-m", "two words"]])
    assert (await check("ran", make_ctx([rec]), pattern="-m two words")).passed
