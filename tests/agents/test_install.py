"""The agent install cache: real npm, pinned versions, installed once."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from proctor.agents.install import agents_home, install_npm
from proctor.errors import UsageError

pytestmark = pytest.mark.skipif(shutil.which("npm") is None, reason="npm is not installed")


def test_npm_agent_installs_once_under_proctor_home(tmp_path, monkeypatch):
    monkeypatch.setenv("PROCTOR_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("PROCTOR_AGENTS")
    exe = install_npm("claude-code", "@anthropic-ai/claude-code", "2.0.76", "claude")
    assert exe.parent.parent.parent == agents_home() / "claude-code-2.0.76"
    out = subprocess.run([str(exe), "--version"], capture_output=True, text=True, timeout=60)
    assert out.stdout.startswith("2.0.76")
    stamp = exe.stat().st_mtime_ns
    assert install_npm("claude-code", "@anthropic-ai/claude-code", "2.0.76", "claude") == exe
    assert exe.stat().st_mtime_ns == stamp  # the cache, not a second install
    assert (agents_home() / "claude-code-2.0.76" / ".proctor-installed").is_file()


def test_an_interrupted_install_is_redone_not_used(tmp_path, monkeypatch):
    monkeypatch.setenv("PROCTOR_AGENTS", str(tmp_path / "agents"))
    half = tmp_path / "agents" / "claude-code-2.0.76"
    (half / "node_modules").mkdir(parents=True)  # what a killed `npm install` left, no marker
    exe = install_npm("claude-code", "@anthropic-ai/claude-code", "2.0.76", "claude")
    assert exe.is_file() and (half / ".proctor-installed").is_file()


def test_versions_must_be_exact_and_failures_say_why(tmp_path, monkeypatch):
    monkeypatch.setenv("PROCTOR_HOME", str(tmp_path))
    monkeypatch.delenv("PROCTOR_AGENTS")
    with pytest.raises(UsageError, match="not an exact version"):
        install_npm("claude-code", "@anthropic-ai/claude-code", "^2", "claude")
    with pytest.raises(UsageError, match="installing @proctor-no-such/pkg@1.0.0 failed"):
        install_npm("nope", "@proctor-no-such/pkg", "1.0.0", "nope")
    assert not (agents_home() / "nope-1.0.0").exists()
