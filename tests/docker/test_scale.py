"""Collision-safe at high concurrency: 200 trials at concurrency 16, no infrastructure error,
nothing left behind (about a minute on two cores)."""

from __future__ import annotations

import pytest

from tests.helpers.cli import results, run_dir_of
from tests.helpers.docker import left_by

pytestmark = [pytest.mark.slow]

SPEC = """\
version: 1
id: trivial{n}
task: {{prompt: x}}
agent: {{type: oracle}}
solution: ["echo ok > out.txt; curl -s http://web/ok > got.txt"]
services:
  - {{name: web, type: http_mock, routes: [{{path: /ok, response: fine}}]}}
invariants:
  ok: {{description: x, check: {{type: file_content, path: got.txt, contains: fine}}}}
parallelism: {{replicas: 100}}
"""


def test_200_trials_at_concurrency_16(base_image, cli, tmp_path):
    for n in (1, 2):
        (tmp_path / f"s{n}.yaml").write_text(SPEC.format(n=n))
    out = cli("run", "s1.yaml", "s2.yaml", "--backend", "docker", "--concurrency", "16",
              "-q", timeout=900)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    run = run_dir_of(out)
    r = results(run)
    assert r["summary"]["trials"] == 200
    errors = [t["error"] for t in r["trials"] if t["status"] != "pass"]
    assert errors == []
    assert left_by(run) == []
