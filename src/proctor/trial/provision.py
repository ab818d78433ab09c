"""A trial's environment, made before its agent starts: its services ready (through an
egress proxy of their own when they reach out), its sandbox with an allowlisted environment
and the trial's limits, the egress proxy of an isolated sandbox, the workspace's files,
setup, the services' `wait_for`, the healthcheck. What fails raises a TrialFault
(faults.py): the trial is `error`, never judged.
"""

from __future__ import annotations

import asyncio
import fnmatch
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from proctor.agents.base import Agent
from proctor.clipath import host_path, shown_paths, with_path
from proctor.errors import ServiceError, SetupError
from proctor.model import (
    HealthcheckDef,
    RunOptions,
    TaskDef,
    Trial,
)
from proctor.proc import RUN_ID_VAR
from proctor.record.recorder import Recorder
from proctor.sandbox import create_sandbox
from proctor.sandbox.base import Resources, Sandbox, SandboxSpec
from proctor.sandbox.egress import PORT, EgressEvent, EgressProxy
from proctor.sandbox.hosts import aliases
from proctor.services.base import ServiceHandle
from proctor.templating import render
from proctor.trial import phases
from proctor.trial.context import RunContext
from proctor.trial.faults import TrialFault

WAIT_FOR_TIMEOUT_S = 60.0
# Limits every trial has unless its spec sets them (docs/security.md).
DEFAULT_MEMORY_BYTES = 1 << 30
DEFAULT_PIDS = 1024
DEFAULT_DISK_BYTES = 2 << 30  # everything the trial's files take (sandbox/disk.py)
# The only variables of proctor's own environment an agent gets, unless the spec or
# proctor.toml (`pass_env`) names more. Credentials never pass by default.
HOST_ENV_ALLOWED = ("PATH", "LANG", "LANGUAGE", "TERM", "TZ", "LC_*")


def host_env(options: RunOptions) -> dict[str, str]:
    """What an agent gets of proctor's own environment: the allowlist plus `pass_env`."""
    allowed = (*HOST_ENV_ALLOWED, *options.config.pass_env)
    if options.isolation != "none":
        allowed = tuple(a for a in allowed if a != "PATH")  # the box has its own PATH
    return {k: v for k, v in os.environ.items()
            if any(fnmatch.fnmatchcase(k, a) for a in allowed)}


async def open_sandbox(trial: Trial, task: TaskDef, run: RunContext, agent: Agent,
                        handles: dict[str, ServiceHandle], secret_values: dict[str, str],
                        on_output: Any) -> Sandbox:
    """The trial's sandbox, with an allowlisted environment and the trial's limits."""
    if "host_env" not in run.shared:  # proctor's own environment does not change in a run
        run.shared["host_env"] = host_env(run.options)
    dirs = host_path(run.options)  # proctor.toml `host_path`: shown read-only, first on PATH
    env = with_path({**run.shared["host_env"], **task.env}, dirs)  # rendered once the workdir is known
    env[RUN_ID_VAR] = run.run_id
    env.update(secret_values)
    for h in handles.values():
        env.update(h.env)
    res = task.resources
    net = task.network or {}
    spec = SandboxSpec(
        trial_id=trial.id, root=run.sandbox_root / trial.id, env=env, workdir=task.workdir,
        output_limit=run.options.output_limit, keep=run.options.keep,
        resources=Resources(memory_bytes=res.get("memory_bytes") or DEFAULT_MEMORY_BYTES,
                            cpus=res.get("cpu"), pids=DEFAULT_PIDS, timeout_s=res.get("timeout"),
                            disk_bytes=res.get("disk_bytes") or DEFAULT_DISK_BYTES),
        hosts=aliases(handles.values()), endpoints=[(h.host, h.port) for h in handles.values()],
        egress=net.get("egress", "allow"), egress_allow=list(net.get("allow", [])),
        readonly_paths=[*agent.readonly_paths(task, run.options), *shown_paths(dirs, task.cli),
                        *(f for h in handles.values() for f in h.files)],
        image=task.base_image, isolation=run.options.isolation, on_output=on_output,
        image_env=task.image_env)
    try:
        sandbox = await (run.backend.create(spec) if run.backend is not None
                         else create_sandbox(run.options.backend, spec))
    except (OSError, SetupError) as e:
        raise TrialFault("workspace", detail=str(e)) from None
    values: dict[str, Any] = {"params": trial.params, "secrets": secret_values,
                              "workdir": sandbox.workdir}
    sandbox.env.update({k: render(v, **values) for k, v in task.env.items()})
    return sandbox


async def egress_proxy(task: TaskDef, sandbox: Sandbox, handles: dict[str, ServiceHandle],
                        on_event: Callable[[EgressEvent], None], substitutes: Any = None,
                        public: list[str] | None = None) -> EgressProxy | None:
    """An isolated sandbox reaches the outside only through proctor's proxy."""
    if not (sandbox.capabilities.isolated and sandbox.capabilities.serves_inside):
        return None
    net = task.network or {}
    proxy = EgressProxy(net.get("egress", "allow"), list(net.get("allow", [])), on_event,
                        substitutes, public or ())
    await sandbox.serve_inside("127.0.0.1", PORT, proxy.handle)
    url = f"http://127.0.0.1:{PORT}"
    direct = ["localhost", "127.0.0.1", *handles, *(h.host for h in handles.values())]
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"):
        sandbox.env.setdefault(name, url)
    for name in ("NO_PROXY", "no_proxy"):
        sandbox.env.setdefault(name, ",".join(direct))
    return proxy


def _tagged(on_event: Callable[[EgressEvent], None], service: str
            ) -> Callable[[EgressEvent], None]:
    """`on_event` for a service's egress proxy: each event says which service it came from."""
    return lambda e: on_event({**e, "from_service": service})


async def services_ready(task: TaskDef, handles: dict[str, ServiceHandle],
                          on_event: Callable[[EgressEvent], None], substitutes: Any,
                          public: list[str] | None = None) -> None:
    """Services that reach out (a side container fetching its dependencies) do so through
    an egress proxy of their own with the task's policy; then each is awaited healthy."""
    net = task.network or {}
    for name, h in handles.items():
        if h.reaches_out:
            proxy = EgressProxy(net.get("egress", "allow"), list(net.get("allow", [])),
                                _tagged(on_event, name), substitutes, public or ())
            h.serve_egress(proxy.handle)
        try:
            await h.ready()
        except ServiceError as e:
            raise TrialFault("service", name=name, detail=str(e)) from None


def run_substitutes(run: RunContext) -> _RunSubstitutes:
    """The run's installer substitutes (sandbox/substitutes.py) as an egress proxy asks them."""
    return _RunSubstitutes(run)


class _RunSubstitutes:
    """The run's `Substitutes`, made once per run at the first request a proxy sees: a trial
    whose box asks for nothing outside does not import their module (TLS, certificates:
    start-up time, issue 37)."""

    def __init__(self, run: RunContext):
        self.run = run

    def made(self) -> Any:
        if "substitutes" not in self.run.shared:
            from proctor.sandbox.substitutes import Substitutes

            config = self.run.options.config
            self.run.shared["substitutes"] = Substitutes(config.substitutes,
                                                         config.source_dir or ".")
        return self.run.shared["substitutes"]

    def covers(self, host: str) -> bool:
        return bool(self.made().covers(host))

    async def serve(self, *request: Any) -> None:
        await self.made().serve(*request)


async def prepare_workspace(task: TaskDef, sandbox: Sandbox, values: dict[str, Any]) -> None:
    try:
        for rel, content in task.files.items():
            await sandbox.write_file(render(rel, **values), render(content, **values).encode())
        if task.scaffold:
            await sandbox.copy_in(Path(task.scaffold), ".")
        for src, dest in task.uploads:
            await sandbox.copy_in(Path(src), render(dest, **values))
    except OSError as e:
        raise TrialFault("workspace", detail=str(e)) from None


async def run_setup(task: TaskDef, sandbox: Sandbox, values: dict[str, Any],
                     recorder: Recorder) -> None:
    for command in task.setup:
        command = render(command, **values)
        res = await sandbox.exec(command, timeout=task.timeout)
        recorder.trace({"type": "setup", "command": command, "exit_code": res.exit_code,
                        "stdout": res.stdout, "stderr": res.stderr})
        if res.exit_code != 0:
            tail = (res.stderr or res.stdout).strip()[-500:]
            raise TrialFault("setup", detail=f"`{command}` exited {res.exit_code}: {tail}")


async def wait_for_services(task: TaskDef, sandbox: Sandbox, recorder: Recorder) -> None:
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


async def healthy(check: HealthcheckDef | None, sandbox: Sandbox, recorder: Recorder) -> None:
    if not await phases.healthcheck(check, sandbox, recorder):
        raise TrialFault("healthcheck", detail=check.command if check else "")

