"""Processes: nothing an agent starts outlives its agent phase, whatever it does."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

from tests.helpers.security import trial


def sleepers(tag: str) -> list[str]:
    out = subprocess.run(["pgrep", "-af", tag], capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if "pgrep" not in line]


def test_daemons_die_with_the_trial(run_spec):
    tag = f"{uuid.uuid4().int % 10**6 + 10**6}"  # a sleep length no other process uses
    r = run_spec(f"""
        cli: sh
        tasks:
          - id: daemons
            intent: leave something running
            solution:
              - "setsid sleep {tag} > /dev/null 2>&1 &"
              - "(sh -c 'sleep {tag} &' &) > /dev/null 2>&1"
              - "setsid sh -c 'unset PROCTOR_RUN_ID; exec sleep {tag}' > /dev/null 2>&1 &"
              - "echo done > done.txt"
            assert: [{{file_contains: {{path: done.txt, text: done}}}}]
        """)
    assert trial(r)["status"] == "pass", trial(r)
    assert sleepers(f"sleep {tag}") == []


def test_a_daemon_cannot_change_the_workspace_after_the_agent(run_spec):
    # The forger waits until the agent is done, then writes the answer the check wants.
    r = run_spec("""
        cli: sh
        tasks:
          - id: forger
            intent: write the right answer
            solution:
              - "echo wrong > answer.txt; (setsid sh -c 'sleep 0.3; echo right > answer.txt' &) ; true"
            assert: [{file_contains: {path: answer.txt, text: right}}]
          - id: honest
            intent: write the right answer
            solution: ["echo right > answer.txt"]
            assert: [{file_contains: {path: answer.txt, text: right}}]
        """)
    assert trial(r, "forger")["status"] == "fail"
    assert trial(r, "honest")["status"] == "pass"


def test_sigkill_of_proctor_takes_every_sandbox_process_with_it(cli, tmp_path):
    tag = f"{uuid.uuid4().int % 10**6 + 2 * 10**6}"
    (tmp_path / "spec.yaml").write_text(f"""
cli: sh
tasks:
  - id: slow
    intent: x
    solution: ["setsid sleep {tag} > /dev/null 2>&1 & sleep 60"]
    assert: [{{exit_code: 0}}]
""")
    proc = cli.popen("run", "spec.yaml", "--agent", "oracle", "--output-dir", "run", "-q")
    deadline = time.monotonic() + 30
    while not sleepers(f"sleep {tag}") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert sleepers(f"sleep {tag}"), "the daemon never started"
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=30)
    deadline = time.monotonic() + 10
    while sleepers(f"sleep {tag}") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert sleepers(f"sleep {tag}") == []
    # --resume sweeps what the killed run left: its temp dirs and its trials' cgroups.
    cli("run", "--resume", "run", "-q")
    assert not list(Path("/sys/fs/cgroup").glob(f"*/**/proctor-{proc.pid}-*"))
    run_id = json.loads((tmp_path / "run" / "run.json").read_text())["run_id"]
    assert not list(Path(tempfile.gettempdir()).glob(f"proctor-{run_id}-*"))
