"""Real Claude Code (pinned, from the install cache) -> the recording proxy -> the real
mock-llm subprocess: its own Bash tool runs the scripted command."""

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


async def test_claude_code_runs_its_bash_tool_against_the_mock(tmp_path, monkeypatch):
    monkeypatch.setenv("PROCTOR_HOME", str(tmp_path / "home"))
    claude = install_npm("claude-code", "@anthropic-ai/claude-code", "2.0.76", "claude")
    server = ServerProcess(Path(__file__).parent / "scripts" / "claude-code.yaml")
    work = tmp_path / "work"
    work.mkdir()
    events: list[dict] = []
    try:
        async with ModelProxy(server.url, api_key="proxy-key", on_call=events.append) as proxy:
            env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path / "h"),
                   "ANTHROPIC_BASE_URL": proxy.url, "ANTHROPIC_API_KEY": "dummy",
                   "DISABLE_AUTOUPDATER": "1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
                   "IS_SANDBOX": "1"}  # as root, Claude Code allows skipping permissions only so
            proc = await asyncio.create_subprocess_exec(
                str(claude), "-p", "WRITE-HELLO please", "--output-format", "json",
                "--dangerously-skip-permissions", "--model", "mock", cwd=work, env=env,
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
            out, err = await asyncio.wait_for(proc.communicate(), 120)
    finally:
        server.stop()
    assert proc.returncode == 0, err.decode()[-2000:]
    assert (work / "out.txt").read_text() == "hello\n"
    assert '"result":"done"' in out.decode()
    main = [e for e in events if e["request"].get("model") == "mock"]
    assert len(main) == 2 and not any("error" in e for e in main)  # tool call, then answer
    assert all(e["usage"]["input"] > 0 for e in main)
    # Claude Code's own side calls (other models, e.g. haiku titles) are recorded too; the
    # script has no conversation for them, so they are the only errors.
    side = [e for e in events if e["request"].get("model") != "mock"]
    assert side and len(proxy.errors) == sum("error" in e for e in side)
