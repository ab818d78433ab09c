"""Trials in this process (the default executor): the run's backend and services set up once
on this machine, each trial run by `run_trial` on the run's event loop."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

from proctor import headstart
from proctor.executors import Launch, close_run, drain_run, open_run
from proctor.model import RunOptions, TaskDef, Trial
from proctor.results import TrialRecord
from proctor.services.lifecycle import start_services
from proctor.trial.context import RunContext
from proctor.trial.trial import run_trial


class LocalExecutor:
    def __init__(self, tmp_root: Path, run: RunContext, trials: int = 0):
        self.tmp_root = tmp_root  # the run's scratch (its sandboxes unless --keep), removed
        self.context = run
        self.left = trials  # trials not begun yet: at the last, the backend is drained

    @classmethod
    def connect(cls, options: RunOptions) -> bool:
        return False  # nothing to reach

    @classmethod
    async def open(cls, launch: Launch) -> LocalExecutor:
        # Made at start-up with the run's first container (headstart.py), else now.
        tmp_root = (headstart.scratch(launch.run_id)
                    or Path(tempfile.mkdtemp(prefix=f"proctor-{launch.run_id}-")))
        run = open_run(launch.options, run_id=launch.run_id, trial_dir=launch.trial_dir,
                       sandbox_root=launch.run_dir / "workdirs" if launch.options.keep
                       else tmp_root, scratch=tmp_root, concurrency=launch.workers)
        executor = cls(tmp_root, run, len(launch.trials))
        try:
            needed = {launch.tasks[t.task_id].id: launch.tasks[t.task_id] for t in launch.trials
                      if not launch.tasks[t.task_id].unavailable}  # its trials are errors
            run.services = await start_services(list(needed.values()), launch.run_id, tmp_root)
        except BaseException:
            await executor.close()
            raise
        return executor

    async def run(self, trial: Trial, task: TaskDef) -> TrialRecord:
        self.left -= 1
        if self.left == 0:  # its box is taken before any running trial gives one back
            drain_run(self.context)
        return await run_trial(trial, task, self.context)

    async def rate_limits(self) -> dict[str, Any]:
        from proctor.providers import limiter

        calls = limiter.current()  # the run's (run/execute.py installs one per run)
        return dict(calls.stats()) if isinstance(calls, limiter.LocalLimiter) else {}

    async def close(self) -> None:
        try:
            await close_run(self.context)
        finally:
            shutil.rmtree(self.tmp_root, ignore_errors=True)
