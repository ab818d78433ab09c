"""Service names work as host names in the local sandbox, and readiness probes are not the
agent's requests."""

from __future__ import annotations

import pytest

from proctor.sandbox import hosts
from tests.helpers.cli import results

SCENARIO = r"""
version: 1
id: alias
task: {prompt: x}
agent: {type: oracle}
services:
  - name: db
    type: postgres
    seed: "CREATE TABLE t (x int); INSERT INTO t VALUES (41);"
    wait_for: pg_isready -q
  - name: smtp
    type: http_mock
    record: true
    routes: [{method: GET, path: /ping, response: pong}]
    wait_for: "curl -sf \"$SMTP_URL/ping\""
setup:
  commands: ["curl -sf \"$SMTP_URL/ping\""]
invariants:
  by_name:
    description: psql -h db and http://smtp reach the services
    check: {type: file_content, path: out.txt, pattern: "^41\\npong$"}
  one_call:
    description: only the agent's request is recorded
    check:
      type: http_mock_assertions
      service: smtp
      assertions: [{field: request_count, equals: 1}]
solution:
  - psql -h db -p 5432 -Atc 'select x from t' > out.txt
  - 'curl -s "http://smtp:${SMTP_URL##*:}/ping" >> out.txt'
"""


@pytest.mark.postgres
@pytest.mark.skipif(not hosts.supported(), reason="no mount namespaces on this machine")
def test_service_names_resolve_and_probes_are_not_recorded(cli, spec, tmp_path):
    spec(SCENARIO)
    out = cli("run", "spec.yaml", "-q", "--output-dir", "run")
    trial = results(tmp_path / "run")["trials"][0]
    assert out.returncode == 0, (trial["error"], trial["checks"])
