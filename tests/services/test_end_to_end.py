"""Services through the real `proctor run`: the reconciliation example, its broken twin,
100 trials at once, and nothing left behind after Ctrl-C or SIGKILL."""

from __future__ import annotations

import json
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
import yaml

from proctor.janitor import leftover_pids
from tests.helpers import REPO
from tests.helpers.cli import Cli
from tests.helpers.services import pg_available

pytestmark = [pytest.mark.postgres,
              pytest.mark.skipif(not pg_available(), reason="PostgreSQL is not installed")]

EXAMPLE = REPO / "examples" / "reconciliation"
BROKEN = REPO / "tests" / "fixtures" / "reconciliation-broken"


def proctor(*args: str, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess:
    return Cli(cwd)(*args, timeout=timeout)


def results(run: Path) -> dict:
    return json.loads((run / "results.json").read_text())


def audit(run: Path, trial: str) -> list[dict]:
    lines = (run / "trials" / trial / "audit.jsonl").read_text().splitlines()
    return [json.loads(x) for x in lines]


def test_the_reconciliation_example_passes_with_its_oracle(tmp_path):
    out = proctor("run", str(EXAMPLE), "--agent", "oracle", "--output-dir", "run", "-q",
                  cwd=tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr
    trial = results(tmp_path / "run")["trials"][0]
    assert trial["status"] == "pass" and trial["composite_score"] == 1.0
    assert {c["name"]: c["passed"] for c in trial["checks"]} == {
        "reconciliation_clean": True, "email_sent_once": True, "nothing_else_written": True}
    events = audit(tmp_path / "run", trial["id"])
    writes = [e["details"] for e in events if e["type"] == "db_write"]
    assert writes == [{"service": "db", "table": "customers_b", "inserts": 1, "updates": 2,
                       "deletes": 0}]
    calls = [e["details"] for e in events if e["type"] == "http_call"]
    assert [(c["service"], c["method"], c["path"], c["status"]) for c in calls] == [
        ("smtp", "POST", "/api/messages", 202)]
    assert json.loads(calls[0]["body"])["to"] == "finance@co"


def test_the_broken_solution_fails_the_right_invariants(tmp_path):
    out = proctor("run", str(BROKEN), "--agent", "oracle", "--output-dir", "run", "-q",
                  cwd=tmp_path)
    assert out.returncode == 1, out.stdout + out.stderr
    trial = results(tmp_path / "run")["trials"][0]
    assert trial["status"] == "fail" and trial["composite_score"] == 0.0  # the gate fired
    checks = {c["name"]: c for c in trial["checks"]}
    assert {n: c["passed"] for n, c in checks.items()} == {
        "reconciliation_clean": False, "email_sent_once": False, "nothing_else_written": True}
    assert checks["reconciliation_clean"]["message"] == "expected 0, got 1"
    assert "expected 1, got 2" in checks["email_sent_once"]["message"]
    assert all(c["error"] is None for c in checks.values())
    assert trial["forbidden"] == [{"rule": "db_writes_outside", "violated": False, "details": ""}]


def test_the_broken_twin_differs_from_the_example_only_in_its_solution():
    example = yaml.safe_load((EXAMPLE / "scenario.yaml").read_text())
    broken = yaml.safe_load((BROKEN / "scenario.yaml").read_text())
    for doc in (example, broken):
        doc.pop("solution"), doc.pop("id")
        doc["services"][0].pop("seed")
    assert broken == example


@pytest.mark.slow
def test_100_trials_at_concurrency_8_each_with_its_own_database_and_mock(tmp_path):
    out = proctor("run", str(EXAMPLE), "--agent", "oracle", "--repeat", "100",
                  "--concurrency", "8", "--output-dir", "run", "-q", cwd=tmp_path, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    r = results(tmp_path / "run")
    assert r["summary"]["passed"] == 100, [t["error"] for t in r["trials"] if t["error"]][:5]
    mocks = set()
    for t in r["trials"]:
        events = audit(tmp_path / "run", t["id"])
        # Every trial changed only its own copy: one insert, two updates, never more.
        assert [e["details"]["inserts"] for e in events if e["type"] == "db_write"] == [1]
        mocks |= {e["details"]["headers"]["Host"] for e in events if e["type"] == "http_call"}
    assert len(mocks) == 100


SLOW_SCENARIO = """
version: 1
id: slow
task: {prompt: wait}
services:
  - name: db
    type: postgres
    seed_placeholder: 1
invariants:
  ok: {description: x, check: {type: sql, service: db, query: SELECT 1, equals: 1}}
solution: ["touch started; sleep ${NAP:-0}"]
"""


def _slow_spec(tmp_path: Path) -> None:
    (tmp_path / "spec.yaml").write_text(
        SLOW_SCENARIO.replace("seed_placeholder: 1", "seed: 'CREATE TABLE t (n int);'"))


def _wait_started(tmp_path: Path, proc: subprocess.Popen) -> str:
    """The run id, once the agent's command is running (it touched `started`)."""
    deadline = time.monotonic() + 60
    run_json = tmp_path / "run" / "run.json"
    while time.monotonic() < deadline:
        if run_json.exists():
            run_id = json.loads(run_json.read_text())["run_id"]
            if any(Path(tempfile.gettempdir()).glob(f"proctor-{run_id}-*/*/work/started")):
                return run_id
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    raise AssertionError("the trial never started")


def _servers(run_id: str) -> list[int]:
    out = []
    for pid in leftover_pids(run_id):
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if b"postgres" in cmd and state != "Z":
            out.append(pid)
    return out


def _leftover_dirs(run_id: str) -> list[Path]:
    return [*Path("/dev/shm").glob(f"proctor-{run_id}-*"),
            *Path(tempfile.gettempdir()).glob(f"proctor-{run_id}-*")]


@pytest.mark.slow
def test_ctrl_c_leaves_no_server_and_no_directory(tmp_path):
    _slow_spec(tmp_path)
    (tmp_path / "proctor.toml").write_text('pass_env = ["NAP"]\n')
    proc = Cli(tmp_path, env={"NAP": "30"}).popen("run", "spec.yaml", "--agent", "oracle",
                                                  "--output-dir", "run", "-q")
    run_id = _wait_started(tmp_path, proc)
    assert _servers(run_id), "no PostgreSQL server found for the run"
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=60)
    assert proc.returncode == 130
    assert _servers(run_id) == []
    assert _leftover_dirs(run_id) == []


@pytest.mark.slow
def test_a_killed_run_takes_its_server_along_and_resume_sweeps_its_files(tmp_path):
    _slow_spec(tmp_path)
    # The first run's agent naps (NAP, passed through by proctor.toml); the resumed one not.
    (tmp_path / "proctor.toml").write_text('pass_env = ["NAP"]\n')
    proc = Cli(tmp_path, env={"NAP": "30"}).popen("run", "spec.yaml", "--agent", "oracle",
                                                  "--output-dir", "run", "-q")
    run_id = _wait_started(tmp_path, proc)
    proc.kill()
    proc.communicate(timeout=30)
    deadline = time.monotonic() + 10
    while _servers(run_id) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _servers(run_id) == []  # the server died with proctor (parent-death signal)
    out = proctor("run", "--resume", "run", "-q", cwd=tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr
    assert _servers(run_id) == []
    assert _leftover_dirs(run_id) == []
