"""`custom` — a script reads the context JSON on stdin and prints {passed, score, reason, details}."""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import os
import shlex
import signal
import sys
import time
import uuid
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from proctor.checks._common import block, outputs, render_text
from proctor.checks.base import CheckConfig, CheckContext, CheckType, cut
from proctor.model import CheckOutcome
from proctor.sandbox.base import ExecResult
from proctor.sandbox.local import LocalSandbox


class Config(CheckConfig):
    script: str = Field(description="Script path; relative to the spec file's directory. Run directly if executable, else with the interpreter its suffix implies.")
    runs_in: Literal["host", "sandbox"] = Field("host", description="host: run by proctor with read access to the workspace; sandbox: run inside the trial's sandbox.")
    timeout: float = Field(60, gt=0, description="Seconds before the script is killed (the check errors).")


# After the script exits, how long to wait for background children still holding its pipes.
_PIPE_GRACE_S = 0.2


async def evaluate(cfg: Config, ctx: CheckContext) -> CheckOutcome:
    script = Path(render_text(ctx, cfg.script)).expanduser()
    if not script.is_absolute():
        script = Path(ctx.task.base_dir) / script
    name = cfg.script
    if not script.is_file():
        return _error(f"custom script not found: {name} (looked for {script})")
    in_sandbox = cfg.runs_in == "sandbox"
    argv = _argv(script, python="python3" if in_sandbox else sys.executable)
    if argv is None:
        return _error(
            f"custom script {name} is not executable and its suffix does not say how to run it "
            "(make it executable with a #! line, or name it *.py or *.sh)"
        )
    payload = json.dumps(_context(ctx), default=str).encode()
    # The script reads the trace and audit log: every event so far must be on disk.
    _prepare_logs(ctx)
    if in_sandbox:
        res = await _run_in_sandbox(ctx, script, argv, payload, cfg.timeout)
    else:
        res = await _run_on_host(argv, payload, cwd=ctx.workdir, env=_host_env(ctx),
                                 timeout=cfg.timeout)
    if res.timed_out:
        return _error(f"custom script {name} timed out after {cfg.timeout:g}s\n"
                      + outputs(res.stdout, res.stderr))
    if res.exit_code != 0:
        status = "could not run" if res.exit_code is None else f"exited with {res.exit_code}"
        return _error(f"custom script {name} {status}\n" + outputs(res.stdout, res.stderr))
    return _outcome(name, res.stdout)


def _error(message: str) -> CheckOutcome:
    return CheckOutcome(passed=False, message=message, error=message)


def _argv(script: Path, *, python: str) -> list[str] | None:
    """Run it directly if executable, else with the interpreter its suffix implies."""
    if os.access(script, os.X_OK):
        return [str(script)]
    suffix = script.suffix.lower()
    if suffix == ".py":
        return [python, str(script)]
    if suffix == ".sh":
        return ["sh", str(script)]
    return None


def _context(ctx: CheckContext) -> dict[str, Any]:
    """The stdin of the script, exactly the keys of SPEC §3."""
    from proctor.spec.templating import render  # see _common.render_text

    return {
        "sandbox_id": ctx.trial.id,
        "workspace_path": str(ctx.workdir),
        "services": {name: handle.context() for name, handle in ctx.services.items()},
        "audit_log_path": str(ctx.recorder.audit_path),
        "trace_path": str(ctx.recorder.trace_path),
        "task": {"prompt": render(ctx.task.prompt, params=ctx.trial.params, secrets=ctx.secrets)},
        "scenario_params": dict(ctx.trial.params),
    }


def _prepare_logs(ctx: CheckContext) -> None:
    ctx.recorder.flush()
    # A trial with no events yet has no files; give the script empty ones rather than ENOENT.
    for path in (ctx.recorder.trace_path, ctx.recorder.audit_path):
        with contextlib.suppress(OSError):
            path.parent.mkdir(parents=True, exist_ok=True)
            path.touch(exist_ok=True)


def _host_env(ctx: CheckContext) -> dict[str, str]:
    """proctor's own environment, plus what the services inject (DATABASE_URL, NAME_URL...)."""
    env = dict(os.environ)
    for handle in ctx.services.values():
        env.update(handle.env)
    env["PROCTOR_WORKDIR"] = str(ctx.workdir)
    return env


async def _run_on_host(argv: list[str], stdin: bytes, *, cwd: Path, env: dict[str, str],
                       timeout: float) -> ExecResult:
    """Run in its own process group; at the timeout (or on cancellation) the whole group is
    killed. Output read so far is kept either way."""
    started, t0 = time.time(), time.monotonic()
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv, cwd=cwd, env=env, start_new_session=True,
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
    except OSError as e:
        return ExecResult(None, "", f"proctor: could not start {argv[0]}: {e}",
                          time.monotonic() - t0, started)
    out, err = bytearray(), bytearray()
    assert proc.stdout is not None and proc.stderr is not None and proc.stdin is not None
    readers = [asyncio.create_task(_drain(proc.stdout, out)),
               asyncio.create_task(_drain(proc.stderr, err))]

    async def feed_and_wait() -> None:
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # it need not read stdin
            proc.stdin.write(stdin)
            await proc.stdin.drain()
        proc.stdin.close()
        await proc.wait()
        await asyncio.wait(readers, timeout=_PIPE_GRACE_S)

    timed_out = False
    try:
        await asyncio.wait_for(feed_and_wait(), timeout)
    except TimeoutError:
        timed_out = True
    finally:
        _kill_group(proc.pid)  # also whatever it left running in the background
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
        await asyncio.shield(proc.wait())
        await asyncio.wait(readers, timeout=_PIPE_GRACE_S)
        for r in readers:
            r.cancel()
    return ExecResult(
        exit_code=None if timed_out else proc.returncode,
        stdout=out.decode("utf-8", errors="replace"),
        stderr=err.decode("utf-8", errors="replace"),
        duration_s=time.monotonic() - t0,
        started_at=started,
        timed_out=timed_out,
    )


async def _drain(stream: asyncio.StreamReader, buf: bytearray) -> None:
    while chunk := await stream.read(65536):
        buf += chunk


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


async def _run_in_sandbox(ctx: CheckContext, script: Path, argv: list[str], stdin: bytes,
                          timeout: float) -> ExecResult:
    """The local sandbox shares this machine's files, so the script runs where it is; any other
    backend gets a copy in the sandbox's $TMPDIR (else /tmp) first."""
    if not isinstance(ctx.sandbox, LocalSandbox):
        tmp = ctx.sandbox.env.get("TMPDIR") or "/tmp"
        dest = f"{tmp.rstrip('/')}/proctor-check-{uuid.uuid4().hex[:8]}-{script.name}"
        await ctx.sandbox.write_file(dest, script.read_bytes())
        if argv == [str(script)]:  # run directly: keep it executable inside the sandbox
            argv = [dest]
            prep = f"chmod +x {shlex.quote(dest)} && "
        else:
            argv = [*argv[:-1], dest]
            prep = ""
        return await ctx.sandbox.exec(prep + "exec " + shlex.join(argv), timeout=timeout,
                                      stdin=stdin)
    return await ctx.sandbox.exec("exec " + shlex.join(argv), timeout=timeout, stdin=stdin)


def _outcome(name: str, stdout: str) -> CheckOutcome:
    result = _parse(stdout)
    if result is None:
        return _error(f"custom script {name} printed no JSON object on stdout (the last line "
                      "that parses as a JSON object is the result)\n"
                      + block("stdout", stdout, from_end=True))
    passed = result.get("passed")
    if not isinstance(passed, bool):
        return _error(f"custom script {name}: `passed` must be true or false, got "
                      f"{cut(json.dumps(passed), 200)}")
    score = result.get("score")
    if score is not None:
        if isinstance(score, bool) or not isinstance(score, int | float) or not math.isfinite(score):
            return _error(f"custom script {name}: `score` must be a number, got "
                          f"{cut(json.dumps(score), 200)}")
        score = min(1.0, max(0.0, float(score)))
    reason = result.get("reason")
    if reason is None:
        message = f"custom script {name} {'passed' if passed else 'failed'}"
    else:
        message = cut(reason if isinstance(reason, str) else json.dumps(reason, default=str))
    details = result.get("details")
    if details is not None and not isinstance(details, dict):
        details = {"details": details}
    return CheckOutcome(passed=passed, score=score, message=message, details=details)


def _parse(stdout: str) -> dict[str, Any] | None:
    """The whole stdout if it is one JSON object (pretty-printed is fine), else the last
    non-empty line that parses as a JSON object, so scripts may log before (or after) it."""
    with contextlib.suppress(ValueError):
        whole = json.loads(stdout)
        if isinstance(whole, dict):
            return whole
    for line in reversed(stdout.splitlines()):
        line = line.strip()
        if not line.startswith("{"):
            continue
        with contextlib.suppress(ValueError):
            obj = json.loads(line)
            if isinstance(obj, dict):
                return obj
    return None


CHECK = CheckType(
    name="custom",
    summary="the script prints JSON with passed: true (exit != 0 means the check errored)",
    config=Config,
    evaluate=evaluate,
    invariant=True,
)
