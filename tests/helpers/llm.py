"""Helpers of the llm tests (their fixtures are in tests/llm/conftest.py)."""

from __future__ import annotations

import json
import subprocess
import threading
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from proctor.agents.base import AgentEnv, AgentResult
from proctor.model import AgentDef, TaskDef
from tests.helpers import PROCTOR, REPO

SCRIPTS = REPO / "tests" / "llm" / "scripts"


_ENV_VARS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL",
             "PROCTOR_JUDGE_FAST", "PROCTOR_JUDGE_MAX", "PROCTOR_MODEL", "OPENROUTER_API_KEY",
             "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_PROFILE")


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
            self.proc.kill()
            why = self.proc.stderr.read()
            self.stop()
            raise RuntimeError(f"mock-llm did not start: {self.banner!r} {why!r}")
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

