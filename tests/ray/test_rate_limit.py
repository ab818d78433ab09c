"""The adaptive limit of model calls on a real 2-node Ray cluster: a head and a worker
started as separate `ray start` processes (the worker cannot see the spec directory), 3 CPUs
each, so a run at `concurrency` 6 has trials in flight on both nodes at once. The provider
(a real `proctor mock-llm`) refuses calls above 2 in flight; the nodes share one limit (the
run's limiter actor), so the run ends as on one machine: no provider error, few refusals,
and the summary counts every call of both nodes."""

from __future__ import annotations

import json

import pytest

from tests.helpers.cli import Cli
from tests.helpers.rate_limit import SUITE, check_adaptive_run, rate_limited_server, toml
from tests.helpers.ray import ENV, blind_cluster

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def wide_cluster(tmp_path_factory):
    with blind_cluster(tmp_path_factory.mktemp("ray-rate-limit"), head_cpus=3, node_cpus=3) as c:
        yield c


def test_two_nodes_share_the_providers_limit(wide_cluster, tmp_path):
    d = wide_cluster.spec_dir / "suite"
    d.mkdir()
    (d / "suite.yaml").write_text(SUITE)
    server = rate_limited_server(tmp_path)
    try:
        (tmp_path / "proctor.toml").write_text(toml(server.url))
        out = Cli(tmp_path, env=ENV)("run", str(d), "--executor", "ray", "--ray-address",
                                     wide_cluster.address, "--output-dir", "run", "-q",
                                     timeout=300)
        assert out.returncode == 0, out.stdout + out.stderr
        r = check_adaptive_run(tmp_path / "run", server)
        trials = json.loads((tmp_path / "run" / "results.json").read_text())["trials"]
        assert len({t["node"] for t in trials}) == 2  # both nodes called the provider
        assert r["max_in_flight"] <= 4  # one limit for both: never each node's own start
    finally:
        server.stop()
