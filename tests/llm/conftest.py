"""Fixtures for the LLM layer: the real `proctor mock-llm` subprocess, and a real trial
environment (LocalSandbox + Recorder) to run the LLM agent in."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from proctor.agents.base import AgentEnv
from proctor.agents.llm import LLMAgent
from proctor.config import ProctorConfig
from proctor.model import RunOptions, TaskDef, Trial
from proctor.record.recorder import Recorder
from proctor.redact import Redactor
from proctor.sandbox.local.backend import LocalSandbox
from tests.helpers.llm import _ENV_VARS, SCRIPTS, AgentRun, ServerProcess


@pytest.fixture(autouse=True)
def _clean_model_env(monkeypatch):
    # The developer's own keys and endpoints must never leak into these tests.
    for var in _ENV_VARS:
        monkeypatch.delenv(var, raising=False)


@pytest.fixture(scope="module")
def wire_server():
    server = ServerProcess(SCRIPTS / "wire.yaml")
    yield server
    server.stop()


@pytest.fixture
def run_agent(tmp_path: Path):
    """await run_agent(task, model, config, help_mode=None, shared=None, secrets=None, path=None)."""
    counter = iter(range(1000))

    async def run(task: TaskDef, model: str | None, config: dict[str, Any], *,
                  help_mode: str | None = None, shared: dict[str, Any] | None = None,
                  secrets: dict[str, str] | None = None,
                  path: str | None = None) -> AgentRun:
        n = next(counter)
        env_vars = {"PATH": f"{path}:{os.environ['PATH']}"} if path else {}
        sandbox = LocalSandbox(tmp_path / f"sb{n}", env=env_vars, keep=True)
        trial = Trial(id=f"{task.id}.r{n}", task_id=task.id, agent="llm", model=model,
                      help_mode=help_mode, replica=n)
        recorder = Recorder(tmp_path / f"trial{n}", Redactor(secrets or {}))
        env = AgentEnv(task=task, trial=trial, prompt=task.prompt, sandbox=sandbox,
                       recorder=recorder, options=RunOptions(config=ProctorConfig.model_validate(config)),
                       solution=list(task.solution),
                       shared=shared if shared is not None else {})
        try:
            result = await LLMAgent().run(env)
        finally:
            recorder.close()
            await sandbox.close()
        trace = []
        if recorder.trace_path.exists():
            trace = [json.loads(line) for line in recorder.trace_path.read_text().splitlines()]
        return AgentRun(result, env, Path(sandbox.workdir), trace)

    return run


@pytest.fixture
def fake_cli(tmp_path: Path) -> Path:
    """A directory with `mytool`, whose --help prints a marker and counts its calls."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    tool = bin_dir / "mytool"
    tool.write_text(
        "#!/bin/sh\n"
        f"echo x >> {tmp_path}/help-calls\n"
        'if [ "$1" = "--help" ]; then echo "usage: mytool [--frobnicate] MYTOOL-HELP-MARKER"; fi\n')
    tool.chmod(0o755)
    return bin_dir

