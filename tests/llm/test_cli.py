"""The command line around models: `proctor mock-llm`, the preflight's exit 2, the demo."""

from __future__ import annotations

import json
import subprocess

from tests.helpers import REPO
from tests.helpers.cli import Cli
from tests.helpers.llm import SCRIPTS, ServerProcess


def proctor(*args: str, cwd=None) -> subprocess.CompletedProcess:
    return Cli(cwd, env={"NO_COLOR": "1"})(*args, timeout=60)


def test_missing_api_key_exits_2_before_any_trial(tmp_path):
    spec = tmp_path / "suite.yaml"
    spec.write_text("cli: echo\nproviders: [openai/gpt-4.1, anthropic/claude-sonnet-4-5]\n"
                    "tasks:\n  - id: t\n    intent: say hi\n    assert: [{ran: echo}]\n")
    out_dir = tmp_path / "run"
    r = proctor("run", str(spec), "--output-dir", str(out_dir))
    assert r.returncode == 2, r.stderr
    assert "OPENAI_API_KEY" in r.stderr and "ANTHROPIC_API_KEY" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr
    assert not (out_dir / "results.jsonl").exists()


def test_mock_llm_bad_script_is_exit_2(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("- run: ls\n  fail: sometimes\n")
    r = proctor("mock-llm", "--script", str(bad))
    assert r.returncode == 2
    assert r.stderr.startswith(f"proctor: mock script {bad}:") and "Traceback" not in r.stderr


def test_mock_llm_prints_both_base_urls_and_stops_cleanly():
    server = ServerProcess(SCRIPTS / "wire.yaml")
    assert server.url.startswith("http://127.0.0.1:")
    rest = server.proc.stdout.readline() + server.proc.stdout.readline()
    assert f"OPENAI_BASE_URL={server.url}/v1" in rest and f"ANTHROPIC_BASE_URL={server.url}" in rest
    server.proc.terminate()
    assert server.proc.wait(5) == 0
    server.stop()


def test_demo_passes_end_to_end_with_no_api_key(tmp_path):
    r = proctor("run", str(REPO / "examples" / "mock-llm-demo"), "--output-dir",
                str(tmp_path / "run"), "--quiet")
    assert r.returncode == 0, r.stdout + r.stderr
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    trials = results["trials"]
    assert {t["status"] for t in trials} == {"pass"}
    assert all(t["turns"] >= 2 and t["tokens"]["input"] > 0 for t in trials)
    assert all(t["cost_usd"] == 0.0 for t in trials)
