"""`--executor ray`: the same spec, trials shipped to a (local) Ray cluster."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from tests.runner.conftest import results

pytest.importorskip("ray")

SUITE = """
cli: sh
tasks:
  - id: writes
    intent: x
    solution: ["echo a > f"]
    assert: [{file_contains: {path: f, text: a}}]
  - id: fails
    intent: x
    solution: ["echo b > f"]
    assert: [{file_contains: {path: f, text: nope}}]
"""

SCENARIO = """
version: 1
id: with-mock
task: {prompt: x}
agent: {type: oracle}
services:
  - name: api
    type: http_mock
    record: true
    routes: [{method: POST, path: /hook, status: 201}]
invariants:
  called:
    description: the hook was called once
    check:
      type: http_mock_assertions
      service: api
      assertions: [{field: request_count, filters: {method: POST}, equals: 1}]
solution: ['curl -sf -X POST "$API_URL/hook"']
"""


def _ray_processes() -> list[str]:
    out = subprocess.run(["ps", "-eo", "stat=,args="], capture_output=True, text=True).stdout
    return [line for line in out.splitlines()
            if not line.startswith("Z") and ("raylet" in line or "gcs_server" in line)]


@pytest.mark.slow
def test_trials_run_on_ray_and_their_traces_come_home(cli, spec, tmp_path):
    spec(SUITE)
    spec(SCENARIO, name="scenario.yaml")
    before = _ray_processes()
    out = cli("run", ".", "--agent", "oracle", "--executor", "ray", "-q", "--output-dir", "run",
              env={"RAY_ADDRESS": ""}, timeout=180)
    assert out.returncode == 1, out.stdout + out.stderr
    r = results(tmp_path / "run")
    status = {t["task_id"]: t["status"] for t in r["trials"]}
    assert status == {"writes": "pass", "fails": "fail", "with-mock": "pass"}
    trace = (tmp_path / "run" / "trials" / "writes.r0" / "trace.jsonl").read_text().splitlines()
    assert json.loads(trace[0])["argv"] == ["sh", "-c", "echo a > f"]
    audit = (tmp_path / "run" / "trials" / "with-mock.r0" / "audit.jsonl").read_text()
    assert '"http_call"' in audit
    # The local Ray instance started for the run is gone with it.
    assert _ray_processes() == before
    assert os.environ.get("RAY_ADDRESS") in (None, "")
