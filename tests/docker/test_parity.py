"""Same specs, same verdicts: the bundled examples and a scenario that exercises services,
egress, forbidden rules and a failing check, on `--backend local` and `--backend docker`."""

from __future__ import annotations

import json
import re
import subprocess
import textwrap
from pathlib import Path

import pytest

from tests.helpers import REPO
from tests.helpers.agents import AGENTS, need_agent
from tests.helpers.cli import Cli, results, run_dir_of
from tests.helpers.docker import left_by, web_scenario
from tests.helpers.services import mysql_available, pg_available

pytestmark = [pytest.mark.slow]

MIXED = """\
version: 1
id: mixed
task: {prompt: x}
agent: {type: oracle}
network: {egress: deny}
services:
  - name: smtp
    type: http_mock
    record: true
    routes: [{method: POST, path: /send, status: 202, response: {ok: true}}]
setup:
  files: {keep.txt: "keep\\n"}
solution:
  - "curl -s -m 5 -X POST -d hi http://smtp/send > sent.txt"
  - "curl -s -m 5 -o /dev/null -w '%{http_code}' http://evil.example.org/ > code.txt; true"
  - "echo stray > /tmp/stray.txt; rm keep.txt"
invariants:
  sent: {description: x, check: {type: http_mock_assertions, service: smtp, assertions: [{field: request_count, equals: 1}]}}
  refused: {description: x, check: {type: file_content, path: code.txt, contains: "403"}}
  kept: {description: x, weight: 0.5, check: {type: file_exists, path: keep.txt}}
forbidden:
  file_writes_outside: [sent.txt, code.txt]
"""


def _verdicts(run_dir: Path) -> dict:
    return {t["id"]: (t["status"], sorted((c["name"], c["passed"]) for c in t["checks"]),
                      sorted((f["rule"], f["violated"]) for f in t["forbidden"]))
            for t in results(run_dir)["trials"]}


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _audited(event: dict) -> tuple:
    d = event.get("details") or {}
    path = re.sub(r"\.git/objects/\w\w/\w+", ".git/objects/*", str(d.get("path")))
    return event["type"], path, d.get("change"), d.get("method"), d.get("status"), d.get("service")


def _records(run_dir: Path) -> dict:
    """Per trial, what the trace and the audit log say happened, less what differs from one
    run to the next on any backend (times, git object names, a service's random address)."""
    return {trial.name: ([(e["type"], e.get("command"), e.get("exit_code"))
                          for e in _lines(trial / "trace.jsonl")],
                         sorted(map(_audited, _lines(trial / "audit.jsonl"))))
            for trial in sorted((run_dir / "trials").iterdir())}


def _both(tmp_path: Path, *args: str, agent: tuple[str, ...] = ("--agent", "oracle"),
          ) -> tuple[dict, dict]:
    """Verdicts on each backend, after checking that both traced and audited the same
    events; the docker run leaves no container behind."""
    cli = Cli(tmp_path)
    out, records = {}, {}
    for backend in ("local", "docker"):
        done = cli("run", *args, "--backend", backend, *agent, "--output-dir",
                   f"run-{backend}", timeout=600)
        assert done.returncode in (0, 1), done.stderr
        run = run_dir_of(done)
        assert results(run)["isolation"]["backend"] == backend
        out[backend] = _verdicts(run)
        records[backend] = _records(run)
    assert left_by(run) == []  # every trial's container removed
    assert records["local"] == records["docker"]  # the same trace and audit log
    assert all(trace for trace, _ in records["docker"].values())
    return out["local"], out["docker"]


@pytest.mark.parametrize("agent", [("--agent", "oracle"), ("--model", "mock/solver"),
                                   ("--agent", "nop")], ids=["oracle", "llm", "nop"])
def test_the_bundled_examples_give_the_same_verdicts(base_image, tmp_path, agent):
    """The reference solutions (oracle), the LLM agent replaying them as tool calls, and an
    agent that does nothing (every trial fails, some checks still pass): check by check."""
    local, docker = _both(tmp_path, str(REPO / "examples"), agent=agent)
    assert len(local) >= 15 and local == docker
    statuses = {status for status, _, _ in local.values()}
    assert statuses == ({"fail"} if agent[1] == "nop" else {"pass"})
    if agent[1] == "nop":  # a mixed picture, not all-fail: checks that hold without the agent
        checks = [passed for _, cs, _ in local.values() for _, passed in cs]
        assert 0 < sum(checks) < len(checks)


def test_services_egress_and_forbidden_rules_give_the_same_verdicts(base_image, tmp_path):
    (tmp_path / "mixed.yaml").write_text(MIXED)
    local, docker = _both(tmp_path, "mixed.yaml")
    assert local == docker
    [(status, checks, forbidden)] = docker.values()
    assert status == "fail"
    assert checks == [("kept", False), ("refused", True), ("sent", True)]
    assert forbidden == [("file_writes_outside", True)]


def test_an_image_service_is_reached_by_name(web_image, tmp_path):
    (tmp_path / "web.yaml").write_text(web_scenario(web_image, replicas=3))
    cli = Cli(tmp_path)
    done = cli("run", "web.yaml", "--backend", "docker", timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "warning" not in done.stderr  # `validate` says it needs docker; a docker run does not
    assert "web.yaml:7:12: warning: services[0].image: service 'web' runs image " \
        "'proctor-test-web:1': this needs `--backend docker`" in cli("validate", "web.yaml").stderr
    assert results(run_dir_of(done))["summary"]["passed"] == 3
    assert left_by(run_dir_of(done)) == []
    done = cli("run", "web.yaml", "--output-dir", "local-run")
    assert done.returncode == 2 and not (tmp_path / "local-run").exists()
    assert "web: service 'web' runs image 'proctor-test-web:1': image services need " \
           "--backend docker" in done.stderr


DATABASES = """\
version: 1
id: dbs
task: {prompt: x}
agent: {type: oracle}
services:
  - {name: my, type: mysql, seed: "CREATE TABLE t (id int); INSERT INTO t VALUES (1);",
     wait_for: "mysql -e 'select 1'"}
  - {name: pg, type: postgres, seed: "CREATE TABLE t (id int);", wait_for: pg_isready -q}
solution:
  - "mysql -N -e 'select count(*) from t' > n.txt; mysql -h my -e 'insert into t values (2)'"
  - "psql -h pg -c 'insert into t values (7)'; psql -Atc 'select sum(id) from t' > s.txt"
invariants:
  n: {description: x, check: {type: file_content, path: n.txt, contains: "1"}}
  my: {description: x, check: {type: sql, service: my, query: "select count(*) from t", equals: 2}}
  pg: {description: x, check: {type: sql, service: pg, query: "select sum(id) from t", equals: 7}}
  s: {description: x, check: {type: file_content, path: s.txt, contains: "7"}}
  wrong: {description: x, weight: 0.1, check: {type: sql, service: pg, query: "select 1", equals: 2}}
forbidden:
  db_writes_outside: [t]
"""


@pytest.mark.skipif(not (pg_available() and mysql_available()),
                    reason="needs PostgreSQL and MariaDB (./setup.sh installs them)")
def test_shared_database_servers_are_reached_by_name_from_the_container(base_image, tmp_path):
    (tmp_path / "dbs.yaml").write_text(DATABASES)
    local, docker = _both(tmp_path, "dbs.yaml")
    assert local == docker
    [(_status, checks, _forbidden)] = docker.values()
    assert checks == [("my", True), ("n", True), ("pg", True), ("s", True), ("wrong", False)]


CUSTOM = """\
version: 1
id: custom
task: {prompt: x}
agent: {type: oracle}
solution: ["echo 42 > answer.txt"]
invariants:
  inside: {description: x, check: {type: custom, script: in-container.sh, runs_in: sandbox}}
  outside: {description: x, check: {type: custom, script: on-host.sh, runs_in: host}}
"""
# Passes when the answer is 42 and the script runs where it was asked to.
CHECK = """\
#!/bin/sh
n=$(cat "$PROCTOR_WORKDIR/answer.txt")
[ "$n" = 42 ] && [ {test} -d /.proctor ] && echo '{{"passed": true}}' || echo '{{"passed": false}}'
"""


def test_custom_checks_run_in_the_container_or_on_the_host(base_image, tmp_path):
    (tmp_path / "custom.yaml").write_text(CUSTOM)
    for name, test in (("in-container.sh", ""), ("on-host.sh", "!")):
        (tmp_path / name).write_text(CHECK.format(test=test))
        (tmp_path / name).chmod(0o755)
    done = Cli(tmp_path)("run", "custom.yaml", "--backend", "docker", timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    [trial] = results(run_dir_of(done))["trials"]
    assert {c["name"]: c["passed"] for c in trial["checks"]} == {"inside": True, "outside": True}


@pytest.mark.parametrize("agent", AGENTS)
def test_external_agents_pass_in_the_container(base_image, agent, tmp_path):
    """The real agents (installed on the host, shown read-only at their path) against the
    mock model, through the recording proxy reached inside the container."""
    need_agent(agent)
    done = Cli(tmp_path)("run", str(REPO / "examples" / "external-agents"), "--agent", agent,
                         "--backend", "docker", "-q", timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    [t] = results(run_dir_of(done))["trials"]
    assert t["status"] == "pass" and t["turns"] >= 2, t.get("error")
    assert [(c["name"], c["passed"]) for c in t["checks"]] == [
        ("verify#0", True), ("ran#1", True), ("not_ran#2", True)]


def test_every_port_of_an_image_service_is_reached(base_image, tmp_path):
    tag = "proctor-test-twoports:1"
    subprocess.run(["docker", "build", "-q", "--force-rm", "-t", tag, "-"], text=True, capture_output=True,
                   check=True, input=f"FROM {base_image}\nWORKDIR /srv\nRUN echo two > index.html\n"
                   'CMD ["sh", "-c", "python3 -m http.server 8001 & exec python3 -m http.server 8002"]\n')
    (tmp_path / "two.yaml").write_text(textwrap.dedent(f"""\
        version: 1
        id: two
        task: {{prompt: x}}
        agent: {{type: oracle}}
        services:
          - name: web
            image: {tag}
            ports: [8001, 8002]
            wait_for: curl -sf http://web:8001/ && curl -sf http://web:8002/
        solution: ["curl -s http://web:8002/ > b.txt; echo $WEB_PORT > port.txt"]
        invariants:
          b: {{description: x, check: {{type: file_content, path: b.txt, contains: two}}}}
          port: {{description: x, check: {{type: file_content, path: port.txt, contains: "8001"}}}}
        """))
    done = Cli(tmp_path)("run", "two.yaml", "--backend", "docker", timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
