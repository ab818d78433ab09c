"""custom: a script gets the context JSON on stdin and prints {passed, score, reason, details}."""

from __future__ import annotations

import posixpath
import stat
import sys
import time
from pathlib import Path

import pytest

from proctor.services.base import ServiceHandle
from tests.checks.helpers import LONG, assert_cut

# A script that echoes the context it received into details.
ECHO_CONTEXT = """\
import json, os, sys
ctx = json.load(sys.stdin)
audit = open(ctx["audit_log_path"]).read()
trace = open(ctx["trace_path"]).read()
print(json.dumps({"passed": True, "reason": "echo", "details": {
    "context": ctx, "audit": audit, "trace": trace, "cwd": os.getcwd(),
    "python": sys.executable, "home": os.environ.get("HOME"),
    "db_url": os.environ.get("DATABASE_URL")}}))
"""


def script(directory: Path, name: str, body: str, *, executable: bool = False) -> Path:
    p = directory / name
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(body)
    if executable:
        p.chmod(p.stat().st_mode | stat.S_IXUSR)
    return p


def result_script(result: object, logs: str = "") -> str:
    return f"import sys, json\nsys.stdout.write({logs!r})\nprint(json.dumps({result!r}))\n"


async def test_pass(check, ctx, spec_dir):
    script(spec_dir, "ok.py", result_script({"passed": True, "score": 1.0,
                                             "reason": "All numbers match",
                                             "details": {"matched": 5, "total": 5}}))
    out = await check("custom", ctx, script="ok.py")
    assert out.passed and out.error is None
    assert out.final_score() == 1.0
    assert out.message == "All numbers match"
    assert out.details == {"matched": 5, "total": 5}


async def test_fail_with_a_partial_score(check, ctx, spec_dir):
    script(spec_dir, "partial.py", result_script({"passed": False, "score": 0.4,
                                                  "reason": "2/5 responses valid"}))
    out = await check("custom", ctx, script="partial.py")
    assert out.passed is False and out.error is None
    assert out.score == 0.4 and out.final_score() == 0.4
    assert out.message == "2/5 responses valid"


@pytest.mark.parametrize(("result", "score"), [
    ({"passed": True}, None),            # default: 1.0 if passed ...
    ({"passed": False}, None),           # ... else 0.0
    ({"passed": True, "score": 1.7}, 1.0),
    ({"passed": False, "score": -2}, 0.0),
    ({"passed": True, "score": 1}, 1.0),
])
async def test_score_default_and_clamp(check, ctx, spec_dir, result, score):
    script(spec_dir, "s.py", result_script(result))
    out = await check("custom", ctx, script="s.py")
    assert out.error is None
    assert out.score == score
    assert out.final_score() == (score if score is not None else float(result["passed"]))
    if "reason" not in result:
        assert out.message == f"custom script s.py {'passed' if result['passed'] else 'failed'}"


@pytest.mark.parametrize(("result", "complaint"), [
    ({"score": 1.0}, "`passed` must be true or false, got null"),
    ({"passed": "yes"}, "`passed` must be true or false, got \"yes\""),
    ({"passed": 1}, "`passed` must be true or false, got 1"),
    ({"passed": True, "score": "high"}, "`score` must be a number, got \"high\""),
    ({"passed": True, "score": True}, "`score` must be a number, got true"),
])
async def test_malformed_result_errors(check, ctx, spec_dir, result, complaint):
    script(spec_dir, "bad.py", result_script(result))
    out = await check("custom", ctx, script="bad.py")
    assert out.passed is False
    assert out.error and complaint in out.error


async def test_details_that_are_not_an_object_are_wrapped(check, ctx, spec_dir):
    script(spec_dir, "d.py", result_script({"passed": True, "details": [1, 2]}))
    assert (await check("custom", ctx, script="d.py")).details == {"details": [1, 2]}


async def test_crash_is_an_error_with_the_stderr_tail(check, ctx, spec_dir):
    script(spec_dir, "crash.py", "import sys\nprint('x' * 5000, file=sys.stderr)\n"
                                 "raise KeyError('audit_log_path_typo')\n")
    out = await check("custom", ctx, script="crash.py")
    assert out.passed is False
    assert out.error is not None
    assert "custom script crash.py exited with 1" in out.error
    assert "KeyError: 'audit_log_path_typo'" in out.error  # the tail, not the head
    assert len(out.error) < 2500


async def test_nonzero_exit_is_an_error_even_with_a_passing_json(check, ctx, spec_dir):
    script(spec_dir, "x.sh", 'echo \'{"passed": true}\'; exit 2\n')
    out = await check("custom", ctx, script="x.sh")
    assert out.error and "exited with 2" in out.error


async def test_garbage_output_is_an_error_quoting_the_output(check, ctx, spec_dir):
    script(spec_dir, "garbage.py", "print('looks good to me!')\nprint('[1, 2]')\n")
    out = await check("custom", ctx, script="garbage.py")
    assert out.passed is False
    assert out.error and "printed no JSON object on stdout" in out.error
    assert "looks good to me!" in out.error


async def test_no_output_is_an_error(check, ctx, spec_dir):
    script(spec_dir, "silent.sh", "true\n")
    out = await check("custom", ctx, script="silent.sh")
    assert out.error and "stdout: (empty)" in out.error


async def test_logs_before_the_json_line(check, ctx, spec_dir):
    logs = 'checking 5 rows...\n{"not": "the result"}\n\nrow 5 ok\n'
    script(spec_dir, "logs.py", result_script({"passed": True, "reason": "fine"}, logs) +
           "print()\nprint('done.')\n")
    out = await check("custom", ctx, script="logs.py")
    assert out.error is None, out.error
    assert out.passed and out.message == "fine"


async def test_pretty_printed_json_is_accepted(check, ctx, spec_dir):
    script(spec_dir, "pretty.py", "import json\n"
           "print(json.dumps({'passed': False, 'reason': 'nope'}, indent=2))\n")
    out = await check("custom", ctx, script="pretty.py")
    assert out.error is None and out.passed is False and out.message == "nope"


async def test_context_json_is_exactly_as_specified(check, make_ctx, spec_dir):
    db = ServiceHandle(name="db", kind="postgres", host="127.0.0.1", port=5432,
                       url="postgresql://u@127.0.0.1:5432/t", env={"DATABASE_URL": "postgresql://x"},
                       credentials={"user": "u", "database": "t"})
    ctx = make_ctx(params={"model": "claude-sonnet-4-5"}, services={"db": db},
                   prompt="Reconcile with {{ params.model }}")
    ctx.recorder.audit("http_call", {"service": "smtp", "path": "/api/messages"})
    ctx.recorder.trace({"type": "command", "command": "ls"})  # left unflushed by the recorder
    script(spec_dir, "echo.py", ECHO_CONTEXT)
    out = await check("custom", ctx, script="echo.py")
    assert out.error is None, out.error
    got = out.details["context"]
    assert set(got) == {"sandbox_id", "workspace_path", "services", "audit_log_path",
                        "trace_path", "task", "scenario_params", "trial"}
    assert got["sandbox_id"] == "task.r0"
    assert got["workspace_path"] == str(ctx.workdir)
    assert got["services"] == {"db": {"host": "127.0.0.1", "port": 5432, "kind": "postgres",
                                      "url": "postgresql://u@127.0.0.1:5432/t",
                                      "user": "u", "database": "t"}}
    # The script reads copies of the trial's logs, never the run directory.
    assert got["audit_log_path"] == ctx.sandbox.grader_path("audit.jsonl")
    assert got["trace_path"] == ctx.sandbox.grader_path("trace.jsonl")
    assert got["task"] == {"prompt": "Reconcile with claude-sonnet-4-5"}
    assert got["scenario_params"] == {"model": "claude-sonnet-4-5"}
    assert got["trial"] == {"id": "task.r0", "replica": 0, "params": {"model": "claude-sonnet-4-5"}}
    # The recorder was flushed first: the script saw every event so far.
    assert '"/api/messages"' in out.details["audit"]
    assert '"command": "ls"' in out.details["trace"]
    # runs_in host: cwd is the workspace, the interpreter is proctor's, services' env is set.
    assert out.details["cwd"] == str(ctx.workdir)
    assert out.details["python"] == sys.executable
    assert out.details["db_url"] == "postgresql://x"


async def test_logs_exist_even_when_nothing_was_recorded(check, ctx, spec_dir):
    script(spec_dir, "echo.py", ECHO_CONTEXT)
    out = await check("custom", ctx, script="echo.py")
    assert out.error is None, out.error
    assert out.details["audit"] == "" and out.details["trace"] == ""


async def test_relative_script_resolves_against_the_spec_directory(check, ctx, spec_dir):
    script(spec_dir, "checks/verify_summary.py", result_script({"passed": True}))
    out = await check("custom", ctx, script="checks/verify_summary.py")
    assert out.passed and out.error is None


async def test_absolute_script_path(check, ctx, tmp_path):
    p = script(tmp_path / "elsewhere", "abs.py", result_script({"passed": True}))
    assert (await check("custom", ctx, script=str(p))).passed


async def test_executable_script_runs_directly(check, ctx, spec_dir):
    # No .py suffix: only its #! line says how to run it.
    script(spec_dir, "check-it", "#!/bin/sh\necho '{\"passed\": true, \"reason\": \"direct\"}'\n",
           executable=True)
    out = await check("custom", ctx, script="check-it")
    assert out.error is None and out.message == "direct"


async def test_non_executable_sh_runs_with_sh(check, ctx, spec_dir):
    script(spec_dir, "c.sh", 'read -r line; case "$line" in *sandbox_id*) '
           'echo \'{"passed": true}\';; esac\n')
    out = await check("custom", ctx, script="c.sh")
    assert out.passed and out.error is None


async def test_non_executable_unknown_suffix_errors_clearly(check, ctx, spec_dir):
    script(spec_dir, "check.rb", "puts 1\n")
    out = await check("custom", ctx, script="check.rb")
    assert out.passed is False
    assert out.error and "not executable" in out.error and "*.py or *.sh" in out.error


async def test_missing_script_errors(check, ctx):
    out = await check("custom", ctx, script="checks/nope.py")
    assert out.passed is False
    assert out.error and "custom script not found: checks/nope.py" in out.error


async def test_timeout_is_an_error_and_kills_the_process_group(check, ctx, spec_dir, tmp_path):
    pidfile = tmp_path / "child.pid"
    # Sleeps far longer than any test: had the check waited for them, the run would hang.
    script(spec_dir, "slow.sh", f"sleep 3000 & echo $! > {pidfile}\necho working\nsleep 3000\n")
    out = await check("custom", ctx, script="slow.sh", timeout=0.5)
    assert out.passed is False
    assert out.error and "timed out after 0.5s" in out.error
    assert "working" in out.error
    assert not _alive(int(pidfile.read_text()))  # its background child was killed too


def _alive(pid: int) -> bool:
    """Running (a killed orphan may linger as a zombie when PID 1 does not reap it)."""
    for _ in range(50):
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return False
        if state in ("Z", "X"):
            return False
        time.sleep(0.01)
    return True


async def test_script_that_ignores_stdin(check, ctx, spec_dir):
    script(spec_dir, "nostdin.sh", "exec 0<&-\necho '{\"passed\": true}'\n")
    assert (await check("custom", ctx, script="nostdin.sh")).passed


async def test_runs_in_sandbox(check, ctx, spec_dir):
    script(spec_dir, "echo.py", ECHO_CONTEXT)
    out = await check("custom", ctx, script="echo.py", runs_in="sandbox")
    assert out.error is None, out.error
    assert out.details["cwd"] == str(ctx.workdir)
    # The sandbox's environment (its own $HOME), and the sandbox's python3, not proctor's.
    assert out.details["home"] == str(ctx.sandbox.root / "home")
    assert out.details["context"]["workspace_path"] == str(ctx.workdir)


async def test_runs_in_sandbox_timeout_and_crash(check, ctx, spec_dir):
    script(spec_dir, "slow.sh", "sleep 30\n")
    out = await check("custom", ctx, script="slow.sh", runs_in="sandbox", timeout=0.3)
    assert out.error and "timed out after 0.3s" in out.error
    script(spec_dir, "crash.sh", "echo broken >&2; exit 4\n")
    out = await check("custom", ctx, script="crash.sh", runs_in="sandbox")
    assert out.error and "exited with 4" in out.error and "broken" in out.error


@pytest.mark.parametrize("executable", [False, True])
async def test_runs_in_sandbox_runs_a_copy_of_the_script(check, ctx, spec_dir, executable):
    body = ("#!/bin/sh\n" if executable else "") + \
        'echo "{\\"passed\\": true, \\"reason\\": \\"$(dirname "$0") $0\\"}"\n'
    original = script(spec_dir, "where.sh", body, executable=executable)
    out = await check("custom", ctx, script="where.sh", runs_in="sandbox")
    assert out.error is None, out.error
    # It ran the grader's copy, not the original; what it prints names the script.
    copies = posixpath.dirname(ctx.sandbox.grader_path("x"))
    assert out.message == f"{copies} where.sh"
    assert str(original.parent) not in out.message


async def test_reason_is_cut_in_the_message(check, ctx, spec_dir):
    script(spec_dir, "long.py", result_script({"passed": False, "reason": LONG}))
    out = await check("custom", ctx, script="long.py")
    assert out.error is None and not out.passed
    assert_cut(out.message)


async def test_result_json_is_parsed_from_large_output(check, ctx, spec_dir):
    logs = "log line\n" * 20000
    script(spec_dir, "big.py", result_script({"passed": True, "details": {"n": 1}}, logs))
    out = await check("custom", ctx, script="big.py")
    assert out.passed and out.details == {"n": 1}


async def test_the_example_script_in_the_docs_works(check, ctx, spec_dir, repo):
    text = (repo / "docs" / "checks.md").read_text()
    start = text.index("```python\n", text.index("### `custom`")) + len("```python\n")
    script(spec_dir, "checks/validate_api_responses.py", text[start:text.index("```", start)])
    for body in ('{"id": 1, "status": "sent"}', "not json"):
        ctx.recorder.audit("http_call", {"service": "api", "method": "GET", "path": "/x",
                                         "response_body": body})
    ctx.recorder.audit("command", {"command": "curl api/x"})
    out = await check("custom", ctx, script="checks/validate_api_responses.py")
    assert (out.passed, out.score, out.message) == (False, 0.5, "1/2 responses valid")
    assert out.details == {"valid": 1, "total": 2}
