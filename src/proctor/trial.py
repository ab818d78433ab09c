"""One trial, start to finish: services, sandbox, setup, agent, audit, checks, score.

Everything a trial starts is released in `finally`, whatever happened (a failure, a timeout,
Ctrl-C). What can go wrong is mapped to a status in one table, `FAULTS`.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets as secrets_mod
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from proctor.agents import make_agent
from proctor.agents.base import AgentEnv, AgentResult
from proctor.checks import registry
from proctor.checks.base import CheckContext
from proctor.errors import ServiceError
from proctor.forbidden import Observed
from proctor.forbidden import evaluate as evaluate_forbidden
from proctor.janitor import RUN_ID_VAR
from proctor.model import CheckDef, CheckResult, RunOptions, TaskDef, Trial, TrialResult
from proctor.record import fsdiff
from proctor.record.recorder import Recorder
from proctor.redact import Redactor
from proctor.sandbox.local import LocalSandbox, host_env
from proctor.scoring import score_trial
from proctor.services.base import Service, ServiceHandle
from proctor.spec.templating import render, render_data

# Trial faults: (what happened, how it reads in results). None of them is the agent's
# failure, so every one makes the trial `error`, never `fail`, and no checks run.
FAULTS = {
    "service": "service {name} unavailable: {detail}",
    "wait_for": "service {name} never became ready: `{detail}`",
    "workspace": "could not prepare the workspace: {detail}",
    "setup": "setup command failed: {detail}",
    "agent": "agent error: {detail}",
}
WAIT_FOR_TIMEOUT_S = 60.0
OUTPUT_IN_RESULTS = 4000  # characters of the agent's output kept in results.json


class TrialFault(Exception):
    def __init__(self, kind: str, **kw: str):
        super().__init__(FAULTS[kind].format(**kw))


@dataclass
class RunContext:
    """What every trial of a run shares."""

    options: RunOptions
    sandbox_root: Path  # per-trial sandboxes go here (a temp dir; RUN_DIR/workdirs with --keep)
    trial_dir: Any  # Callable[[str], Path]: where a trial's trace and audit go
    services: dict[tuple[str, str], Service] = field(default_factory=dict)  # (source, name)
    shared: dict[str, Any] = field(default_factory=dict)  # run-wide caches (help text, ...)
    base_env: dict[str, str] = field(default_factory=host_env)  # what sandboxes inherit
    run_id: str = ""


async def run_trial(trial: Trial, task: TaskDef, run: RunContext) -> TrialResult:
    """One trial, bounded by the scenario's `resources.timeout` when it has one."""
    limit = task.resources.get("timeout")
    if not limit:
        return await _run_trial(trial, task, run)
    t0 = time.monotonic()
    try:
        return await asyncio.wait_for(_run_trial(trial, task, run), limit)
    except TimeoutError:
        return TrialResult(id=trial.id, task_id=trial.task_id, model=trial.model,
                           help_mode=trial.help_mode, replica=trial.replica,
                           params=trial.params, status="error", composite_score=0.0,
                           error=f"the trial took longer than resources.timeout ({limit:g}s)",
                           agent=trial.agent, category=task.category,
                           duration_s=round(time.monotonic() - t0, 4))


async def _run_trial(trial: Trial, task: TaskDef, run: RunContext) -> TrialResult:
    t0 = time.monotonic()
    started = time.time()
    secret_values = {s.name: s.value if not s.generated else secrets_mod.token_hex(32)
                     for s in task.secrets}
    redactor = Redactor(secret_values, task.redact_patterns)
    for name in task.redact_env:
        redactor.add(name, task.env.get(name) or run.options.config.get("env", {}).get(name))
    trial_dir = run.trial_dir(trial.id)
    if trial_dir.exists():  # a trial re-run by --resume starts from a clean slate
        shutil.rmtree(trial_dir, ignore_errors=True)
    recorder = Recorder(trial_dir, redactor)
    result = TrialResult(id=trial.id, task_id=trial.task_id, model=trial.model,
                         help_mode=trial.help_mode, replica=trial.replica, params=trial.params,
                         status="error", composite_score=0.0, agent=trial.agent,
                         category=task.category,
                         started_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)))
    handles: dict[str, ServiceHandle] = {}
    sandbox: LocalSandbox | None = None
    try:
        root = run.sandbox_root / trial.id
        workdir = Path(task.workdir) if task.workdir else root / "work"
        values = {"params": trial.params, "secrets": secret_values, "workdir": str(workdir)}
        for svc in task.services:
            try:
                handles[svc.name] = await run.services[(task.source, svc.name)].provision(trial.id)
            except ServiceError as e:
                raise TrialFault("service", name=svc.name, detail=str(e)) from None
        env = {k: render(v, **values) for k, v in task.env.items()}
        env[RUN_ID_VAR] = run.run_id
        env.update(secret_values)
        for h in handles.values():
            env.update(h.env)
        limits = _limits(task.resources)
        hosts_file = None
        if handles:
            from proctor.services.hosts import write_hosts_file

            hosts_file = write_hosts_file(handles.values(), root)
        sandbox = LocalSandbox(root, env, workdir=workdir if task.workdir else None,
                               output_limit=run.options.output_limit, keep=run.options.keep,
                               limits=limits, base_env=run.base_env, hosts_file=hosts_file)
        await _prepare_workspace(task, sandbox, values)
        await _wait_for_services(task, sandbox, recorder)
        await _run_setup(task, sandbox, values, recorder)
        for h in handles.values():  # readiness probes and setup traffic are not the agent's
            await h.begin_recording()
        before = fsdiff.snapshot(sandbox.workdir)

        env_ = AgentEnv(task=task, trial=trial, prompt=render(task.prompt, **values),
                        sandbox=sandbox, recorder=recorder, options=run.options,
                        solution=[render(c, **values) for c in task.solution], shared=run.shared)
        outcome = await _run_agent(trial, task, env_, recorder)
        result.turns, result.cost_usd = outcome.turns, outcome.cost_usd
        result.tokens = {"input": outcome.tokens_in, "output": outcome.tokens_out}
        result.output = redactor.text(outcome.output[-OUTPUT_IN_RESULTS:])
        if outcome.error:
            raise TrialFault("agent", detail=outcome.error)

        seen = await _audit(sandbox, before, handles, recorder)
        seen.texts += [outcome.output] + [c.stdout + c.stderr + c.command for c in env_.commands]
        ctx = CheckContext(task=task, trial=trial, sandbox=sandbox, commands=env_.commands,
                           agent_output=outcome.output, recorder=recorder,
                           options=run.options, services=handles, secrets=secret_values)
        result.checks = [await _check(c, ctx, values, redactor) for c in task.checks]
        for c in result.checks:
            recorder.trace({"type": "check", "name": c.name, "passed": c.passed,
                            "score": c.score, "message": c.message, "error": c.error})
        result.forbidden = evaluate_forbidden(task.forbidden, seen, secret_values)
        score = score_trial(result.checks, result.forbidden, task.pass_threshold)
        result.status, result.composite_score = score.status, score.composite
        if score.status == "error":
            result.error = score.reason
    except TrialFault as e:
        result.status, result.error = "error", redactor.text(str(e))
    except Exception as e:  # a bug must cost one trial, not the run; the trace keeps it
        import traceback

        recorder.trace({"type": "internal_error", "traceback": traceback.format_exc()})
        result.status, result.error = "error", redactor.text(f"internal error: {e!r}")
    finally:
        await _release(handles, sandbox)
        recorder.close()
    result.duration_s = round(time.monotonic() - t0, 4)
    return result


async def _prepare_workspace(task: TaskDef, sandbox: LocalSandbox, values: dict) -> None:
    try:
        for rel, content in task.files.items():
            await sandbox.write_file(render(rel, **values), render(content, **values).encode())
        if task.scaffold:
            shutil.copytree(task.scaffold, sandbox.workdir, dirs_exist_ok=True, symlinks=True)
    except OSError as e:
        raise TrialFault("workspace", detail=str(e)) from None


async def _run_setup(task: TaskDef, sandbox: LocalSandbox, values: dict, recorder: Recorder) -> None:
    for command in task.setup:
        command = render(command, **values)
        res = await sandbox.exec(command, timeout=task.timeout)
        recorder.trace({"type": "setup", "command": command, "exit_code": res.exit_code,
                        "stdout": res.stdout, "stderr": res.stderr})
        if res.exit_code != 0:
            tail = (res.stderr or res.stdout).strip()[-500:]
            raise TrialFault("setup", detail=f"`{command}` exited {res.exit_code}: {tail}")


async def _wait_for_services(task: TaskDef, sandbox: LocalSandbox, recorder: Recorder) -> None:
    for svc in task.services:
        command = svc.config.get("wait_for")
        if not command:
            continue
        deadline = time.monotonic() + float(svc.config.get("wait_for_timeout") or WAIT_FOR_TIMEOUT_S)
        delay = 0.05
        while True:
            left = deadline - time.monotonic()
            res = await sandbox.exec(command, timeout=max(0.1, left))
            if res.exit_code == 0:
                break
            if time.monotonic() + delay >= deadline:
                recorder.trace({"type": "wait_for", "service": svc.name, "command": command,
                                "exit_code": res.exit_code, "stderr": res.stderr})
                raise TrialFault("wait_for", name=svc.name, detail=command)
            await asyncio.sleep(delay)
            delay = min(delay * 2, 1.0)


async def _run_agent(trial: Trial, task: TaskDef, env: AgentEnv, recorder: Recorder) -> AgentResult:
    agent = make_agent(trial.agent)
    try:
        # The agent's wall-clock budget; each command also has its own timeout inside it.
        return await asyncio.wait_for(agent.run(env), task.timeout)
    except TimeoutError:
        # Out of time is the agent's problem, not the harness's: the checks still judge.
        recorder.trace({"type": "agent_timeout", "timeout_s": task.timeout})
        return AgentResult(output="", turns=len(env.commands))


async def _audit(sandbox: LocalSandbox, before: fsdiff.Snapshot,
                 handles: dict[str, ServiceHandle], recorder: Recorder) -> Observed:
    """Write what the agent changed to audit.jsonl, before any check reads it."""
    seen = Observed(file_writes=fsdiff.diff(before, fsdiff.snapshot(sandbox.workdir)))
    for w in seen.file_writes:
        recorder.audit("file_write", w)
        if w["path"].endswith(".log") and w["change"] != "deleted":
            with contextlib.suppress(OSError):
                seen.texts.append((sandbox.workdir / w["path"]).read_text(errors="replace")[:1_000_000])
    for name, h in handles.items():
        for req in await h.requests():
            call = {"service": name, **req}
            seen.http_calls.append(call)
            seen.texts.append(str(req.get("body", "")))
            recorder.audit("http_call", call)
        for w in await h.db_writes():
            write = {"service": name, **w}
            seen.db_writes.append(write)
            recorder.audit("db_write", write)
    recorder.flush()
    return seen


async def _check(check: CheckDef, ctx: CheckContext, values: dict, redactor: Redactor) -> CheckResult:
    ctype = registry()[check.type]
    config = check.config
    if check.templated:
        config = type(config).model_validate(render_data(config.model_dump(), **values))
    try:
        out = await ctype.evaluate(config, ctx)
        error = out.error
        passed, score, message = out.passed and not error, out.final_score(), out.message
    except Exception as e:  # a crashing check is that check erroring, not the agent failing
        error, passed, score, message = f"{type(e).__name__}: {e}", False, 0.0, ""
    if error:
        score, passed = 0.0, False
    return CheckResult(name=check.name, type=check.type, passed=passed, score=score,
                       weight=check.weight, gate=check.gate,
                       message=redactor.text(message or (error or "")),
                       error=redactor.text(error) if error else None)


async def _release(handles: dict[str, ServiceHandle], sandbox: LocalSandbox | None) -> None:
    # Shielded: a Ctrl-C arriving now must not leave a database or a process behind.
    async def release() -> None:
        for h in handles.values():
            with contextlib.suppress(Exception):
                await h.release()
        if sandbox is not None:
            await sandbox.close()

    job = asyncio.ensure_future(release())
    try:
        await asyncio.shield(job)
    except asyncio.CancelledError:
        await job
        raise


def _limits(resources: dict[str, Any]) -> dict[str, int]:
    return {"memory": resources["memory_bytes"]} if resources.get("memory_bytes") else {}
