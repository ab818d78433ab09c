"""One trial, start to finish: services, sandbox, setup, agent, audit, checks, score.

Everything a trial starts is released in `finally`, whatever happened (a failure, a timeout,
Ctrl-C). What can go wrong is mapped to a status in one table, `FAULTS` (faults.py); what
is made before the agent starts is provision.py's.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets as secrets_mod
import time
from dataclasses import replace
from typing import Any, cast

from proctor.agents import make_agent
from proctor.agents.base import Agent, AgentEnv, AgentResult
from proctor.checks.base import CheckContext, Spent, ToolCall
from proctor.errors import ServiceError
from proctor.model import (
    CommandRecord,
    TaskDef,
    Trial,
)
from proctor.providers.budget import KINDS, Budget, describe
from proctor.record import fsdiff
from proctor.record.events import Timings
from proctor.record.paths import PathNames
from proctor.record.recorder import Recorder
from proctor.record.secretscan import SecretScanner
from proctor.redact import Redactor
from proctor.results import CheckRecord, ErrorKind, LimitHit, TrialRecord, new_check, new_trial
from proctor.sandbox.base import Sandbox
from proctor.sandbox.egress import EgressEvent, EgressProxy
from proctor.sandbox.files import FilesLimit
from proctor.scoring import reason, score_trial
from proctor.services.base import ServiceHandle
from proctor.templating import render
from proctor.text import printable
from proctor.trial import phases
from proctor.trial.audit import AgentOutput, agent_state, audit
from proctor.trial.context import RunContext
from proctor.trial.faults import TrialFault
from proctor.trial.forbidden import Observed, scans_secrets
from proctor.trial.forbidden import evaluate as evaluate_forbidden
from proctor.trial.provision import (
    egress_proxy,
    healthy,
    open_sandbox,
    prepare_workspace,
    run_setup,
    run_substitutes,
    services_ready,
    wait_for_services,
)

# How long past its timeout an agent that does not stop by itself runs until it is stopped.
AGENT_GRACE_S = 5.0
OUTPUT_IN_RESULTS = 4000  # characters of the agent's output kept in results.json


async def run_trial(trial: Trial, task: TaskDef, run: RunContext) -> TrialRecord:
    """One trial, bounded by the scenario's `resources.timeout` when it has one."""
    limit = task.resources.get("timeout")
    if not limit:
        return await _run_trial(trial, task, run)
    t0 = time.monotonic()
    try:
        return await asyncio.wait_for(_run_trial(trial, task, run), limit)
    except TimeoutError:
        result = error_result(trial, task,  # the environment, checks included, too slow
                              f"the trial took longer than resources.timeout ({limit:g}s)")
        result["duration_s"] = round(time.monotonic() - t0, 4)
        return result


def error_result(trial: Trial, task: TaskDef, error: str,
                 kind: ErrorKind = "infra") -> TrialRecord:
    """A trial that ended `error` before (or instead of) a verdict, with the cause; `kind`:
    its error_kind (by default proctor's or the machine's failure)."""
    return new_trial(id=trial.id, task_id=trial.task_id, model=trial.model,
                     help_mode=trial.help_mode, replica=trial.replica, params=trial.params,
                     status="error", composite_score=0.0, error=printable(error),
                     reason=reason(printable(error)), error_kind=kind,
                     agent=trial.agent, category=task.category)


async def _run_trial(trial: Trial, task: TaskDef, run: RunContext) -> TrialRecord:
    t0 = time.monotonic()
    one = _Trial(trial, task, run)
    laps, ending = one.timings, None  # a phase cut short by a fault is left out
    try:
        await one.provision()
        laps["provision"] = _since(t0)
        acting = time.monotonic()
        if task.steps:
            await one.run_steps()
        else:
            outcome, commands = await one.act()
            await one.judge(outcome, commands)
        laps["verify"] = max(0.0, round(_since(acting) - laps.get("agent", 0.0), 4))
        ending = time.monotonic()
        await one.collect_artifacts()
    except TrialFault as e:
        one.result["status"], one.result["error"] = "error", one.redactor.text(str(e))
        one.result["error_kind"] = e.error_kind
    except Exception as e:  # a bug must cost one trial, not the run; the trace keeps it
        import traceback

        one.recorder.trace({"type": "internal_error", "traceback": traceback.format_exc()})
        one.result["status"], one.result["error_kind"] = "error", "infra"
        one.result["error"] = one.redactor.text(f"internal error: {e!r}")
    finally:
        ending = ending or time.monotonic()
        await _release(one.handles, one.sandbox)
        laps["teardown"] = _since(ending)
        one.recorder.timings(laps)
        one.recorder.close()
    r = one.result
    r["error"] = one.names(r["error"])
    if r["status"] == "error" and r["error"] and r["reason"] is None:  # a fault before the checks
        r["reason"] = reason(r["error"], task.timeout if r["timed_out"] else None)
    r["duration_s"] = round(time.monotonic() - t0, 4)
    return _printable(r)


def _since(t: float) -> float:
    return round(time.monotonic() - t, 4)


class _Trial:
    """One trial's state through its phases: provision (services, sandbox, workspace,
    setup), act (the agent, then every leftover process killed), judge (audit, checks,
    forbidden rules, score)."""

    def __init__(self, trial: Trial, task: TaskDef, run: RunContext):
        self.trial, self.task, self.run = trial, task, run
        self.secrets = {s.name: s.value if s.value is not None and not s.generated
                        else secrets_mod.token_hex(32) for s in task.secrets}
        self.redactor = Redactor(self.secrets, task.redact_patterns)
        for name in task.redact_env:
            self.redactor.add(name, task.env.get(name)
                              or run.options.config.env.get(name))
        # A trial re-run by --resume starts from a clean slate.
        self.recorder = Recorder.fresh(run.trial_dir(trial.id), self.redactor)
        self.result = new_trial(
            id=trial.id, task_id=trial.task_id, model=trial.model, help_mode=trial.help_mode,
            replica=trial.replica, params=trial.params, status="error", composite_score=0.0,
            agent=trial.agent, category=task.category,
            started_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
        self.handles: dict[str, ServiceHandle] = {}
        self.sandbox: Sandbox | None = None
        self._names: PathNames | None = None  # built by `names`, once
        self.egress: list[EgressEvent] = []
        self.checks_refused: list[EgressEvent] = []  # egress refused while checks ran
        self.output = AgentOutput(self.secrets)
        self.agent = make_agent(trial.agent)
        self.values: dict[str, Any] = {}
        self.before: fsdiff.Snapshot = {}
        # Reading the trial's files ends with the trial's own time, if it has one.
        limit = task.resources.get("timeout")
        self.deadline = time.monotonic() + limit if limit else None
        self.proxy: EgressProxy | None = None
        self.acted = False
        self.agent_s = 0.0  # the agent's wall time, over every step
        self.tool_calls: list[ToolCall] = []  # the model's, over every step
        self.timings: Timings = {}  # wall seconds per phase (Recorder.timings)

    def names(self, text: str | None) -> str | None:
        """`text` naming the sandbox's places, never proctor's temp paths (record/paths.py).
        The names are made at the first text that has a path in it, once: by then the
        sandbox is open (a check's message, the error at the end), unless the trial failed
        before it was. Every name replaced is a path, with a `/` in it: a text without one
        (most check messages) is left as it is without making them."""
        if not text or "/" not in text:
            return text
        if self._names is None:
            self._names = PathNames.for_trial(self.run.sandbox_root / self.trial.id,
                                              self.sandbox)
        return self._names(text)

    async def provision(self) -> None:
        task, run = self.task, self.run
        if task.unavailable:
            raise TrialFault("unavailable", detail=task.unavailable)
        for svc in task.services:
            try:
                self.handles[svc.name] = await run.services[(task.source, svc.name)].provision(
                    self.trial.id)
            except ServiceError as e:
                raise TrialFault("service", name=svc.name, detail=str(e)) from None
        public = run.options.config.public_addresses
        await services_ready(task, self.handles, self.egress.append, run_substitutes(run), public)
        self.sandbox = sandbox = await open_sandbox(
            self.trial, task, run, self.agent, self.handles, self.secrets, self.output.feed)
        self.values = {"params": self.trial.params, "secrets": self.secrets,
                       "workdir": sandbox.workdir}
        self.proxy = await egress_proxy(task, sandbox, self.handles, self.egress.append,
                                         run_substitutes(run), public)
        await prepare_workspace(task, sandbox, self.values)
        await wait_for_services(task, sandbox, self.recorder)
        await run_setup(task, sandbox, self.values, self.recorder)
        await healthy(task.healthcheck, sandbox, self.recorder)
        for h in self.handles.values():  # readiness probes and setup traffic: not the agent's
            await h.begin_recording()
        self.egress.clear()
        self.before = await _snapshot(sandbox, self.deadline)

    async def act(self, task: TaskDef | None = None) -> tuple[AgentResult, list[CommandRecord]]:
        """The agent on `task` (a step's view of the task, for multi-step tasks)."""
        began = time.monotonic()
        sandbox, task = self.sandbox, task or self.task
        assert sandbox is not None
        self._network("agent")
        env = AgentEnv(task=task, trial=self.trial, prompt=render(task.prompt, **self.values),
                       sandbox=sandbox, recorder=self.recorder, options=self.run.options,
                       solution=[render(c, **self.values) for c in task.solution],
                       shared=self.run.shared, budget=Budget(task.agent.limits))
        self.output.active = True
        started = time.monotonic()
        outcome = await _run_agent(self.agent, task, env, self.recorder)
        self.agent_s += time.monotonic() - started  # the agent's wall time (budget)
        self.tool_calls += env.tool_calls
        if task.image_env is not None:  # Harbor's: its servers serve the tests (SPEC §4),
            await sandbox.keep_processes()  # powerless there (sandbox/docker/taskenv.py)
        else:  # nothing the agent started may keep changing the workspace while it is judged
            await sandbox.kill_processes()
        await env.settle()  # what its commands left running, to the end
        self.output.active = False
        r = self.result
        self.timings["agent"] = round(self.timings.get("agent", 0.0) + time.monotonic() - began, 4)
        first = not self.acted  # a multi-step task's steps add up
        self.acted = True
        r["turns"] = outcome.turns + (0 if first else r["turns"])
        r["cost_usd"] = outcome.cost_usd if first else phases.add(r["cost_usd"], outcome.cost_usd)
        r["tokens"] = {"input": outcome.tokens_in, "output": outcome.tokens_out} if first else {
            "input": phases.add(r["tokens"].get("input"), outcome.tokens_in),
            "output": phases.add(r["tokens"].get("output"), outcome.tokens_out)}
        r["timed_out"] = r["timed_out"] or outcome.timed_out or env.timed_out
        # The agent's limit_hit is a Budget's: turns, tokens or cost_usd.
        r["limit_hit"] = (r["limit_hit"] or cast("LimitHit | None", outcome.limit_hit)
                          or ("timeout" if r["timed_out"] else None))
        r["output"] = self.redactor.cut(outcome.output, OUTPUT_IN_RESULTS, keep="tail")
        if fault := sandbox.fault():
            raise TrialFault("limit", detail=fault)
        if outcome.error:
            raise TrialFault("agent", outcome.error_kind, detail=outcome.error)
        return outcome, env.commands

    async def judge(self, outcome: AgentResult, commands: list[CommandRecord]) -> None:
        seen = await self.observe(outcome, commands)
        checks = await self.grade(self.task, outcome, commands)
        self.score(checks, seen)

    async def observe(self, outcome: AgentResult, commands: list[CommandRecord]) -> Observed:
        """What the agent did, in the audit log before any check reads it."""
        sandbox = self.sandbox
        assert sandbox is not None
        after = await _snapshot(sandbox, self.deadline)
        scanner = SecretScanner(self.secrets) if scans_secrets(self.task.forbidden) else None
        try:
            seen = await audit(sandbox, self.before, after, self.handles, self.egress,
                               self.recorder, agent_state(self.agent, sandbox),
                               scanner if scanner else None, self.deadline)
        except FilesLimit as e:
            raise TrialFault("limit", detail=str(e)) from None
        seen.secrets_seen |= self.output.found
        seen.texts += [outcome.output] + [c.stdout + c.stderr + c.command for c in commands]
        return seen

    async def grade(self, task: TaskDef, outcome: AgentResult,
                    commands: list[CommandRecord]) -> list[CheckRecord]:
        sandbox = self.sandbox
        assert sandbox is not None
        self._network("checks")
        spent = Spent.of(self.result, self.agent_s)
        ctx = CheckContext(task=task, trial=self.trial, sandbox=sandbox, commands=commands,
                           agent_output=outcome.output, recorder=self.recorder,
                           options=self.run.options, services=self.handles,
                           secrets=self.secrets, tool_calls=list(self.tool_calls), spent=spent)
        first = len(self.egress)
        checks = [r for c in task.checks for r in await phases.run_check(c, ctx, self.values, self.redactor)]
        self.result["tampering"] += [t for t in ctx.tampering if t not in self.result["tampering"]]
        phases.trace_check_egress(self.egress[first:], self.recorder)
        self.checks_refused += [e for e in self.egress[first:] if phases.unanswered(e)]
        for c in checks:
            c["message"], c["error"] = self.names(c["message"]) or "", self.names(c["error"])
            self.recorder.trace({"type": "check", "name": c["name"], "passed": c["passed"],
                                 "score": c["score"], "message": c["message"], "error": c["error"]})
        return checks

    def score(self, checks: list[CheckRecord], seen: Observed) -> None:
        task, r = self.task, self.result
        r["checks"] = checks
        r["forbidden"] = evaluate_forbidden(task.forbidden, seen, self.secrets)
        for f in r["forbidden"]:
            f["details"] = self.names(f["details"]) or ""
        score = score_trial(r["checks"], r["forbidden"], task.pass_threshold,
                            timed_out_after=task.timeout if r["timed_out"] else None,
                            tampering=r["tampering"])
        r["status"], r["composite_score"], r["reason"] = score.status, score.composite, score.reason
        if r["reason"] and r["limit_hit"] in KINDS:  # said first, as a timeout is
            r["reason"] = reason(f"{describe(task.agent.limits, r['limit_hit'])}; {r['reason']}")
        if score.status == "error":  # the only error scoring gives: a check errored
            r["error"], r["error_kind"] = score.error, "check"
        refused = phases.refused_line(self.checks_refused)
        if refused and r["status"] != "pass":  # a verifier that could not download: say so first
            r["reason"] = reason(f"{refused}; {r['reason'] or ''}")

    async def run_steps(self) -> None:
        """A multi-step task: each step's uploads, setup and healthcheck, then the agent on
        its prompt, then its checks (named STEP.CHECK, weighted by the step's share), in one
        sandbox. A step below its `min_score` stops the rest: their checks fail, "not run".
        The task's own checks (proctor.yaml's) judge the whole trial at the end."""
        sandbox, task = self.sandbox, self.task
        assert sandbox is not None
        results: list[CheckRecord] = []
        seen_all, everything, last = Observed(), [], AgentResult(output="")
        stopped = ""
        for step in task.steps:
            if stopped:
                results += [new_check(name=f"{step.name}.{c.name}", type=c.type, passed=False,
                                      score=0.0, weight=c.weight * step.weight, gate=False,
                                      message=f"not run: {stopped}") for c in step.checks]
                continue
            view = replace(task, prompt=step.prompt, checks=step.checks, timeout=step.timeout,
                           solution=step.solution, solution_dir=step.solution_dir, steps=[],
                           uploads=step.uploads, setup=step.setup, files={}, scaffold=None)
            self.recorder.trace({"type": "step", "name": step.name})
            await prepare_workspace(view, sandbox, self.values)
            await run_setup(view, sandbox, self.values, self.recorder)
            await healthy(step.healthcheck, sandbox, self.recorder)
            self.before = await _snapshot(sandbox, self.deadline)
            self.egress.clear()
            last, commands = await self.act(view)
            everything += commands
            seen = await self.observe(last, commands)
            seen_all.merge(seen)
            checks = await self.grade(view, last, commands)
            stopped = phases.below(step, checks)
            for c in checks:
                c["name"], c["weight"] = f"{step.name}.{c['name']}", c["weight"] * step.weight
                c["gate"] = c["gate"] and step.weight > 0
            results += checks
        results += await self.grade(task, last, everything)  # proctor.yaml's, over every step
        self.score(results, seen_all)

    def _network(self, phase: str) -> None:
        """The egress policy of this phase: the agent's, or the checks' when the task gives
        them their own (`network.checks`)."""
        if self.proxy is None:
            return
        net = self.task.network or {}
        policy = net.get("checks", net) if phase == "checks" else net
        self.proxy.egress = policy.get("egress", "allow")
        self.proxy.allow = [a.lower() for a in policy.get("allow", [])]

    async def collect_artifacts(self) -> None:
        """The task's `artifacts` (paths in the sandbox), copied into the trial directory."""
        if not self.task.artifacts or self.sandbox is None:
            return
        from proctor.sandbox import copyout

        dest, budget = self.recorder.trial_dir / "artifacts", copyout.Budget()
        redact = self.redactor.text
        for path in self.task.artifacts:
            await copyout.copy_out(self.sandbox, path, dest / path.lstrip("/"), budget,
                                   lambda data: redact(data.decode(errors="replace")).encode())


async def _run_agent(agent: Agent, task: TaskDef, env: AgentEnv, recorder: Recorder) -> AgentResult:
    """The agent, within the task's timeout. Its commands and model calls get the time left
    (`env.deadline`), so it stops by itself with what it has; should it not, it is stopped
    AGENT_GRACE_S later. Out of time is the agent's problem, not the harness's: the checks
    judge everything recorded until then."""
    env.deadline = time.monotonic() + task.timeout
    try:  # in the trial's own task (wait_for would make one more task, each trial)
        async with asyncio.timeout(task.timeout + AGENT_GRACE_S):
            outcome = await agent.run(env)
    except TimeoutError:
        outcome = env.on_timeout() if env.on_timeout is not None else \
            AgentResult(output="", turns=len(env.commands))
        outcome.timed_out = env.timed_out = True
    if outcome.timed_out or env.timed_out:
        recorder.trace({"type": "agent_timeout", "timeout_s": task.timeout})
    return outcome


async def _snapshot(sandbox: Sandbox, deadline: float | None) -> fsdiff.Snapshot:
    """Every entry of the trial's places; what cannot be read in full makes the trial
    `error`, naming the limit (never a verdict on a partial view)."""
    try:
        return await sandbox.snapshot(deadline)
    except FilesLimit as e:
        raise TrialFault("limit", detail=str(e)) from None


def _printable(r: TrialRecord) -> TrialRecord:
    """Names that are not UTF-8 (an agent's `bad\\xff` file) shown byte for byte, so that
    every report and the store can hold them (proctor.text.printable)."""
    r["error"] = printable(r["error"]) if r["error"] else r["error"]
    r["reason"] = printable(r["reason"]) if r["reason"] else r["reason"]
    r["output"] = printable(r["output"])
    for c in r["checks"]:
        c["message"] = printable(c["message"])
        if error := c.get("error"):
            c["error"] = printable(error)
    for f in r["forbidden"]:
        f["details"] = printable(f["details"])
    return r


async def _release(handles: dict[str, ServiceHandle], sandbox: Sandbox | None) -> None:
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

