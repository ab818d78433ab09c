"""A run's llm trials share one SDK client per endpoint (providers/clients.py): the real
OpenAI and Anthropic SDKs against a real `proctor mock-llm`, 8 trials of 2 model calls each
at concurrency 2. A client per trial opened a connection per trial (8 or more, and ~27 ms
of CPU to build each); a shared one keeps its connections alive across trials."""

from __future__ import annotations

import json

import pytest

from tests.helpers.cli import Cli
from tests.helpers.llm import ServerProcess
from tests.helpers.rate_limit import load

TRIALS = 8

SCRIPT = """
turns:
  - run: echo hi > out
  - say: done
"""


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_a_runs_trials_share_one_client_and_its_connections(tmp_path, kind):
    (tmp_path / "script.yaml").write_text(SCRIPT)
    server = ServerProcess(tmp_path / "script.yaml")
    try:
        url = f"{server.url}/v1" if kind == "openai" else server.url
        (tmp_path / "proctor.toml").write_text(
            f'[providers.lab]\nkind = "{kind}"\nbase_url = "{url}"\napi_key = "test-key"\n')
        (tmp_path / "suite.yaml").write_text(
            f"cli: sh\nproviders: [lab/m]\nconcurrency: 2\ntasks:\n  - id: write\n"
            f"    intent: write hi into out\n    repeat: {TRIALS}\n"
            "    assert: [{file_contains: {path: out, text: hi}}]\n")
        out = Cli(tmp_path)("run", "suite.yaml", "--output-dir", "run", "-q", timeout=120)
        assert out.returncode == 0, out.stdout + out.stderr
        trials = json.loads((tmp_path / "run" / "results.json").read_text())["trials"]
        assert [t["status"] for t in trials] == ["pass"] * TRIALS
        seen = load(server)
        assert len(server.received()) == 2 * TRIALS  # every trial made its own calls
        assert 1 <= seen["connections"] <= 2, seen  # no more than calls ever in flight
    finally:
        server.stop()
