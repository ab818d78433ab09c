"""`custom` — a script reads the context JSON on stdin and prints {passed, score, reason, details}."""

from __future__ import annotations

import contextlib
import json
import math
import os
import shlex
import sys
import uuid
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from proctor import proc
from proctor.checks._common import block, outputs, render_text
from proctor.checks.base import CheckConfig, CheckContext, CheckType, cut
from proctor.durations import Seconds
from proctor.model import CheckOutcome
from proctor.proc import ExecResult
from proctor.templating import render


class Config(CheckConfig):
    script: str = Field(description="Script path; relative to the spec file's directory. Run directly if executable, else with the interpreter its suffix implies.")
    runs_in: Literal["host", "sandbox"] = Field("host", description="host: run by proctor with read access to the workspace; sandbox: run inside the trial's sandbox.")
    timeout: Seconds = Field(60, gt=0, description="Seconds (or 30s, 5m, 1h) before the script is killed (the check errors).")


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
    workspace = ctx.sandbox.workdir if in_sandbox else str(await ctx.sandbox.export())
    # The script reads the trace and audit log: every event so far must be on disk, and (in
    # the sandbox) at paths valid there.
    _prepare_logs(ctx)
    logs = await _logs_inside(ctx) if in_sandbox else {
        "audit_log_path": str(ctx.recorder.audit_path), "trace_path": str(ctx.recorder.trace_path)}
    payload = json.dumps(_context(ctx, workspace, logs), default=str).encode()
    if in_sandbox:
        res, copy = await _run_in_sandbox(ctx, script, argv, payload, cfg.timeout)
        # Its copy's temp name means nothing to the reader: a traceback names the script.
        res.stdout, res.stderr = (res.stdout.replace(copy, name), res.stderr.replace(copy, name))
    else:
        res = await proc.run(argv, timeout=cfg.timeout, cwd=workspace, stdin=payload,
                             env=_host_env(ctx, Path(workspace)))
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


def _context(ctx: CheckContext, workspace: str, logs: dict[str, str]) -> dict[str, Any]:
    """The stdin of the script, exactly the keys of SPEC §3."""
    return {
        "sandbox_id": ctx.trial.id,
        "workspace_path": workspace,
        "services": {name: handle.context() for name, handle in ctx.services.items()},
        "audit_log_path": logs["audit_log_path"],
        "trace_path": logs["trace_path"],
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


async def _logs_inside(ctx: CheckContext) -> dict[str, str]:
    """Copies of the audit log and trace in the sandbox's $TMPDIR, for a `runs_in: sandbox`
    script (proctor's own copies live on the host, where the script cannot see them)."""
    tmp = (ctx.sandbox.env.get("TMPDIR") or "/tmp").rstrip("/")
    out = {}
    for key, path in (("audit_log_path", ctx.recorder.audit_path),
                      ("trace_path", ctx.recorder.trace_path)):
        dest = f"{tmp}/.proctor-check-{uuid.uuid4().hex[:8]}-{path.name}"
        await ctx.sandbox.write_file(dest, path.read_bytes())
        out[key] = dest
    return out


def _host_env(ctx: CheckContext, workspace: Path) -> dict[str, str]:
    """proctor's own environment, plus what the services inject (DATABASE_URL, NAME_URL...)."""
    env = dict(os.environ)
    for handle in ctx.services.values():
        env.update(handle.env)
    env["PROCTOR_WORKDIR"] = str(workspace)
    # The workspace belongs to the sandbox's user; git must still read it for the check.
    env.update({"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "safe.directory",
                "GIT_CONFIG_VALUE_0": "*"})
    return env


async def _run_in_sandbox(ctx: CheckContext, script: Path, argv: list[str], stdin: bytes,
                          timeout: float) -> tuple[ExecResult, str]:
    """A copy of the script goes into the sandbox's $TMPDIR (else /tmp) and runs there: the
    agent's processes are gone by now, so nothing can change it while it runs."""
    tmp = ctx.sandbox.env.get("TMPDIR") or "/tmp"
    dest = f"{tmp.rstrip('/')}/.proctor-check-{uuid.uuid4().hex[:8]}-{script.name}"
    await ctx.sandbox.write_file(dest, script.read_bytes())
    if argv == [str(script)]:  # run directly: keep it executable inside the sandbox
        argv = [dest]
        prep = f"chmod +x {shlex.quote(dest)} && "
    else:
        argv = [*argv[:-1], dest]
        prep = ""
    res = await ctx.sandbox.exec(prep + "exec " + shlex.join(argv), timeout=timeout, stdin=stdin)
    return res, dest


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
