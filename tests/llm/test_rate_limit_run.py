"""`proctor run` against a provider with a rate limit: a real `proctor mock-llm` that answers
429 (with Retry-After) to any call above N in flight, reached by the llm agent through the
real OpenAI SDK. At `concurrency` 3N the run ends with no `provider` error and few calls
refused, because the limit of calls in flight adapts (providers/limiter.py); with the same
cap held fixed, most of the first calls are refused."""

from __future__ import annotations

import json

import pytest

from tests.helpers.cli import Cli
from tests.helpers.rate_limit import (
    MAX_REFUSED_SHARE,
    SUITE,
    N,
    check_adaptive_run,
    load,
    rate_limited_server,
    toml,
)

pytestmark = pytest.mark.slow


def test_a_run_at_three_times_the_providers_concurrency_adapts(tmp_path):
    (tmp_path / "suite.yaml").write_text(SUITE)
    server = rate_limited_server(tmp_path)
    try:
        (tmp_path / "proctor.toml").write_text(toml(server.url))
        out = Cli(tmp_path, env={"NO_COLOR": "1", "COLUMNS": "200"})(
            "run", "suite.yaml", "--output-dir", "run", timeout=300)
        assert out.returncode == 0, out.stdout + out.stderr
        r = check_adaptive_run(tmp_path / "run", server)
        # The terminal summary says it too.
        assert (f"rate limit: openai@{server.url}/v1: {r['calls']} calls, {r['refused']} "
                "refused (429/overload)") in out.stdout
    finally:
        server.stop()


def test_without_adapting_the_same_run_is_refused_far_more(tmp_path):
    """The same cap (8) held fixed: the provider refuses most calls above N, every trial
    retries, and the refused share is well above the adaptive run's bound."""
    (tmp_path / "suite.yaml").write_text(SUITE)
    server = rate_limited_server(tmp_path)
    try:
        (tmp_path / "proctor.toml").write_text(toml(server.url, "adaptive_concurrency = false\n"))
        Cli(tmp_path, env={"NO_COLOR": "1"})("run", "suite.yaml", "--output-dir", "run", "-q",
                                            timeout=300)
        results = json.loads((tmp_path / "run" / "results.json").read_text())
        [r] = results["summary"]["rate_limit"].values()
        # The limit held at the cap from start to end. How many calls were in flight at once
        # at the most is timing: every trial's (3N), or fewer on a loaded machine.
        assert r["adaptive"] is False and r["cap"] == r["final_limit"] == r["lowest_limit"]
        assert N < r["max_in_flight"] <= 3 * N, r
        assert r["refused"] == load(server)["refused"]
        assert r["refused"] > 2 * MAX_REFUSED_SHARE * r["calls"], r
    finally:
        server.stop()
