"""Real Codex CLI (pinned, from the install cache) -> the recording proxy -> the real
mock-llm subprocess over the Responses API (streamed): its shell tool runs the command."""

from __future__ import annotations

import asyncio
import os
import shutil
from pathlib import Path

import pytest

from proctor.agents.install import install_npm
from proctor.providers.proxy import ModelProxy
from tests.llm.conftest import ServerProcess

pytestmark = pytest.mark.skipif(shutil.which("npm") is None, reason="npm is not installed")

CONFIG = """model = "mock"
model_provider = "proctor"
[model_providers.proctor]
name = "proctor"
base_url = "{url}/v1"
env_key = "PROCTOR_MODEL_KEY"
wire_api = "responses"
"""


async def test_codex_runs_its_shell_tool_against_the_mock(tmp_path, monkeypatch):
    monkeypatch.setenv("PROCTOR_HOME", str(tmp_path / "home"))
    codex = install_npm("codex", "@openai/codex", "0.63.0", "codex")
    server = ServerProcess(Path(__file__).parent / "scripts" / "codex.yaml")
    work, codex_home = tmp_path / "work", tmp_path / "codex-home"
    work.mkdir()
    codex_home.mkdir()
    events: list[dict] = []
    try:
        async with ModelProxy(server.url, api_key="proxy-key", on_call=events.append) as proxy:
            (codex_home / "config.toml").write_text(CONFIG.format(url=proxy.url))
            env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path / "h"),
                   "CODEX_HOME": str(codex_home), "PROCTOR_MODEL_KEY": "dummy"}
            proc = await asyncio.create_subprocess_exec(
                str(codex), "exec", "--dangerously-bypass-approvals-and-sandbox",
                "--skip-git-repo-check", "WRITE-HELLO please", cwd=work, env=env,
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
            out, err = await asyncio.wait_for(proc.communicate(), 120)
    finally:
        server.stop()
    assert proc.returncode == 0, (out + err).decode()[-2000:]
    assert (work / "out.txt").read_text() == "hello\n"
    assert [e["path"] for e in events] == ["/v1/responses"] * 2 and not proxy.errors
    assert all(e["request"]["stream"] and e["usage"]["input"] > 0 for e in events)
    # The second request carries the call and its output: one model turn, then the answer.
    kinds = [i.get("type") for i in events[1]["request"]["input"]]
    assert "function_call" in kinds and "function_call_output" in kinds
