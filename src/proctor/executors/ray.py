"""Trials on a Ray cluster (`--executor ray`).

The head (the `proctor run` process) plans, scores, stores and reports exactly as with the
local executor; only `run_trial` moves. Each trial is one Ray task that runs the trial in a
private temp dir on whichever node Ray picks, and sends back its TrialResult together with
its trace and audit files, which the head writes into the run directory. So nodes need
proctor installed and the tools the specs use, but no shared filesystem.

Services: a trial's PostgreSQL/MariaDB servers and HTTP mocks are started on its node, for
that trial alone (a server start is ~0.6 s, paid per trial instead of per run).

The cluster is `$RAY_ADDRESS` when set (e.g. `ray://head:10001` or `auto`), otherwise a
local Ray instance started for the run and stopped after it.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from proctor.errors import UsageError
from proctor.model import RunOptions, TaskDef, Trial, TrialResult


def require_ray() -> None:
    try:
        import ray  # noqa: F401
    except ImportError:
        raise UsageError("--executor ray needs Ray: pip install 'proctor[ray]' (or run with "
                         "--executor local)") from None


class RayExecutor:
    def __init__(self, trial_dir: Any, run_id: str, options: RunOptions):
        import ray

        self.ray = ray
        self.trial_dir = trial_dir  # Callable[[str], Path] into the head's run directory
        self.run_id = run_id
        self.options = options
        self.started_here = not ray.is_initialized()
        if self.started_here:
            ray.init(address=os.environ.get("RAY_ADDRESS") or None, include_dashboard=False,
                     logging_level="ERROR", log_to_driver=False,
                     runtime_env={"env_vars": {"PROCTOR_RUN_ID": run_id}})
        self.remote = ray.remote(num_cpus=1, max_retries=0)(_run_remote)

    async def run(self, trial: Trial, task: TaskDef) -> TrialResult:
        ref = self.remote.remote(trial, task, self.options, self.run_id)
        try:
            result, files = await ref
        except asyncio.CancelledError:
            # Interrupt the remote trial (not force-kill it) so its cleanup runs there.
            self.ray.cancel(ref, force=False)
            raise
        except self.ray.exceptions.RayError as e:
            return _lost(trial, task, f"the Ray task failed: {e}")
        target = self.trial_dir(trial.id)
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir(parents=True, exist_ok=True)
        for name, data in files.items():
            (target / name).write_bytes(data)
        return result

    def close(self) -> None:
        if self.started_here:
            self.ray.shutdown()


def _run_remote(trial: Trial, task: TaskDef, options: RunOptions,
                run_id: str) -> tuple[TrialResult, dict[str, bytes]]:
    """One trial on a Ray worker, in a temp dir that is gone when it returns."""
    from proctor.services.lifecycle import start_services, stop_services
    from proctor.trial import RunContext, run_trial

    tmp = Path(tempfile.mkdtemp(prefix=f"proctor-{run_id}-"))
    trials = tmp / "trials"

    async def go() -> TrialResult:
        run = RunContext(options=options, sandbox_root=tmp / "sandboxes",
                         trial_dir=lambda trial_id: trials / trial_id, run_id=run_id)
        try:
            run.services = await start_services([task], run_id, tmp)
            return await run_trial(trial, task, run)
        finally:
            await stop_services(run.services)

    try:
        result = asyncio.run(go())
        out = trials / trial.id
        files = {p.name: p.read_bytes() for p in out.iterdir()} if out.exists() else {}
        return result, files
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _lost(trial: Trial, task: TaskDef, error: str) -> TrialResult:
    return TrialResult(id=trial.id, task_id=trial.task_id, model=trial.model,
                       help_mode=trial.help_mode, replica=trial.replica, params=trial.params,
                       status="error", composite_score=0.0, error=error, agent=trial.agent,
                       category=task.category)
