"""Fixtures for the LLM layer: the real `proctor mock-llm` subprocess, and a real trial
environment (LocalSandbox + Recorder) to run the LLM agent in."""

from __future__ import annotations

import json
import os
import subprocess
import threading
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from proctor.agents.base import AgentEnv, AgentResult
from proctor.agents.llm import LLMAgent
from proctor.model import AgentDef, RunOptions, TaskDef, Trial
from proctor.record.recorder import Recorder
from proctor.redact import Redactor
from proctor.sandbox.local import LocalSandbox
from tests.conftest import PROCTOR

SCRIPTS = Path(__file__).parent / "scripts"

_ENV_VARS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL",
             "PROCTOR_JUDGE_FAST", "PROCTOR_JUDGE_MAX", "PROCTOR_MODEL", "OPENROUTER_API_KEY",
             "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_PROFILE")


@pytest.fixture(autouse=True)
def _clean_model_env(monkeypatch):
    # The developer's own keys and endpoints must never leak into these tests.
    for var in _ENV_VARS:
        monkeypatch.delenv(var, raising=False)


class ServerProcess:
    def __init__(self, script: Path):
        self.proc = subprocess.Popen(
            [PROCTOR, "mock-llm", "--script", str(script), "--port", "0"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
        timer = threading.Timer(20, self.proc.kill)  # never hang the suite on a dead server
        timer.start()
        try:
            self.banner = self.proc.stdout.readline()
        finally:
            timer.cancel()
        if "http://" not in self.banner:
            self.stop()
            raise RuntimeError(f"mock-llm did not start: {self.banner!r} {self.proc.stderr.read()!r}")
        self.url = self.banner.split(" at ", 1)[1].strip()

    def received(self, contains: str | None = None) -> list[dict[str, Any]]:
        with urllib.request.urlopen(self.url + "/_proctor/requests", timeout=5) as r:
            reqs = json.load(r)
        if contains is None:
            return reqs
        return [r for r in reqs if contains in json.dumps(r["body"])]

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for f in (self.proc.stdout, self.proc.stderr):
            f.close()


@pytest.fixture(scope="module")
def wire_server():
    server = ServerProcess(SCRIPTS / "wire.yaml")
    yield server
    server.stop()


def wire_config(url: str, transport: str, **extra: Any) -> dict[str, Any]:
    """proctor.toml contents pointing `openai/…` or `anthropic/…` at the mock server."""
    base = url + "/v1" if transport == "openai" else url
    return {"providers": {transport: {"base_url": base, "api_key": "test-key"}},
            "retry": {"base_delay": 0.01, "max_attempts": 3}, **extra}


def make_task(base_dir: Path, **kw: Any) -> TaskDef:
    agent = AgentDef(type="llm", max_turns=kw.pop("max_turns", 5), model=kw.pop("model", None))
    fields: dict[str, Any] = {"id": "task", "dialect": "suite", "source": str(base_dir / "s.yaml"),
                              "base_dir": str(base_dir), "prompt": "Do it.", "agent": agent,
                              "checks": [], "timeout": 30.0}
    fields.update(kw)
    return TaskDef(**fields)


@dataclass
class AgentRun:
    result: AgentResult
    env: AgentEnv
    workdir: Path
    trace: list[dict[str, Any]] = field(default_factory=list)

    def events(self, type_: str) -> list[dict[str, Any]]:
        return [e for e in self.trace if e["type"] == type_]


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
                       recorder=recorder, options=RunOptions(config=config),
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
