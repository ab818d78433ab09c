"""A provider with a rate limit, for the rate-limit tests (tests/llm/test_rate_limit_run.py,
tests/ray/test_rate_limit.py): a real `proctor mock-llm` that answers 429 (Retry-After 0.5 s)
to any call above N in flight, a suite that runs 12 llm trials at `concurrency` 3N against
it, and what such a run must show."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

from tests.helpers.llm import ServerProcess

N = 2  # the mock provider's concurrency
TRIALS = 12
MAX_REFUSED_SHARE = 0.2  # of the calls made, at most this many refused

SCRIPT = f"""
rate_limit: {{concurrent: {N}, retry_after: 0.5}}
turns:
  - run: echo hi > out
    delay: 0.3
  - say: done
    delay: 0.3
"""

SUITE = f"""
cli: sh
providers: [openai/mock]
concurrency: {3 * N}
tasks:
  - id: write
    intent: write hi into out
    repeat: {TRIALS}
    assert: [{{file_contains: {{path: out, text: hi}}}}]
"""


def rate_limited_server(tmp_path: Path) -> ServerProcess:
    (tmp_path / "rl.yaml").write_text(SCRIPT)
    return ServerProcess(tmp_path / "rl.yaml")


def toml(url: str, extra: str = "") -> str:
    return (f'[providers.openai]\nbase_url = "{url}/v1"\napi_key = "test-key"\n{extra}'
            '[retry]\nbase_delay = 0.05\nmax_attempts = 6\n')


def load(server: ServerProcess) -> dict:
    with urllib.request.urlopen(server.url + "/_proctor/load", timeout=5) as r:
        return json.load(r)


def check_adaptive_run(run_dir: Path, server: ServerProcess) -> dict:
    """The run passed with no provider error and few refusals; its summary's figures agree
    with what the server saw. Returns the endpoint's figures."""
    results = json.loads((run_dir / "results.json").read_text())
    trials = results["trials"]
    assert len(trials) == TRIALS
    assert [t["error_kind"] for t in trials if t["error_kind"]] == []
    assert {t["status"] for t in trials} == {"pass"}
    [(endpoint, r)] = results["summary"]["rate_limit"].items()
    assert endpoint == f"openai@{server.url}/v1"
    seen = load(server)
    assert r["refused"] == seen["refused"] > 0  # the provider's limit was met, and learnt
    assert r["calls"] == seen["served"] + seen["refused"]
    assert r["refused"] <= MAX_REFUSED_SHARE * r["calls"], r
    assert r["waited"] > 0 and r["lowest_limit"] <= N and r["adaptive"] is True
    return r
