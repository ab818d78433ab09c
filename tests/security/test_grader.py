"""The grader box (issue 25.1): a check that executes something runs without proctor's
privileges, over the trial's final files read-only, with its own HOME and /tmp emptied after
it, its own uid, the trial's services and nothing else; it can forge only its own result."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from tests.helpers.security import run_texts, trial

GRADER = """
    version: 1
    id: grader
    task: {{prompt: answer}}
    agent: {{type: oracle}}
    services:
      - name: api
        type: http_mock
        routes: [{{method: GET, path: /ping, response: pong}}]
    solution: ["echo right > answer.txt; echo data > $HOME/h.txt; echo agent > /tmp/agent.txt"]
    invariants:
      tamper:
        description: a check that tries to change what the next one sees
        check:
          type: command_exit
          command: >-
            echo wrong > answer.txt 2>/dev/null; echo wrong > $HOME/../agent/h.txt 2>/dev/null;
            echo x > $HOME/left; echo y > /tmp/left; mkdir -p $HOME/.config/git;
            printf '[core]\\n\\tfsmonitor = touch {marker}\\n' > $HOME/.gitconfig;
            (sleep 2; echo late > /tmp/late) > /dev/null 2>&1 &
            true
      unchanged:
        description: the next check finds the trial's files as the agent left them
        check:
          type: command_exit
          command: >-
            sleep 3; grep -qx right answer.txt && grep -qx data /home/agent/h.txt &&
            test ! -e $HOME/left && test ! -e /tmp/left && test ! -e /tmp/late &&
            test ! -e $HOME/.gitconfig
      identity:
        description: its own uid, HOME and /tmp; the trial's files read-only
        check:
          type: command_exit
          command: >-
            test "$(id -u)" = "{uid}" && test "$HOME" = /home/grader && test "$TMPDIR" = /tmp &&
            touch /tmp/ok $HOME/ok && ! touch answer.txt 2>/dev/null &&
            ! touch /home/agent/x 2>/dev/null && test ! -e /tmp/agent.txt
      network:
        description: the trial's services, nothing else
        check:
          type: command_exit
          command: >-
            curl -s -m 5 http://api/ping | grep -q pong &&
            ! curl -s -m 3 --noproxy '*' http://{outside}/ > /dev/null
      unseen:
        description: the spec, the run directory and proctor's keys are not there
        check:
          type: command_exit
          command: "{unseen}"
    """


def test_a_check_can_change_nothing_another_check_or_the_host_sees(run_spec, tmp_path):
    marker = tmp_path / "fsmonitor-ran"
    home = tmp_path / "proctor-home0"
    unseen = " && ".join(f"test ! -e {p}" for p in (tmp_path / "spec.yaml", home / "keys",
                                                     tmp_path / "run0"))
    uid = 65533 if os.geteuid() == 0 else 0
    r = run_spec(GRADER.format(marker=marker, uid=uid, outside="192.0.2.1", unseen=unseen))
    t = trial(r)
    assert t["status"] == "pass", [c for c in t["checks"] if not c["passed"]]
    assert not marker.exists()


VERDICT = """\
import json, os, subprocess, sys
ctx = json.load(sys.stdin)
out = {"uid": os.getuid(), "cwd": os.getcwd(), "home": os.environ["HOME"],
       "workspace": ctx["workspace_path"], "audit": open(ctx["audit_log_path"]).read()[:20]}
try:
    open(__file__, "a").write("# changed")
    out["script_writable"] = True
except OSError:
    out["script_writable"] = False
try:
    open(os.path.join(ctx["workspace_path"], "answer.txt"), "w").write("forged")
    out["workspace_writable"] = True
except OSError:
    out["workspace_writable"] = False
out["git"] = subprocess.run(["git", "diff", "--numstat"], capture_output=True, text=True,
                            cwd=ctx["workspace_path"]).stdout
print(json.dumps({"passed": True, "reason": json.dumps(out, sort_keys=True)}))
"""


def test_a_host_check_runs_in_the_grader_box(run_spec, tmp_path):
    """`runs_in: host` once meant proctor's uid (root) in the agent's workspace, with
    `safe.directory=*` for git. Now: the grader's uid, a copy of the script's directory,
    read-only files, and git reading the agent's repository without its configuration."""
    (tmp_path / "checks").mkdir()
    (tmp_path / "checks" / "verdict.py").write_text(VERDICT)
    r = run_spec("""
        version: 1
        id: hostcheck
        task: {prompt: answer}
        agent: {type: oracle}
        setup:
          files: {answer.txt: "old\\n"}
          commands: ["git init -q . && git add . && git -c user.name=a -c user.email=a@b commit -qm i"]
        solution: ["echo right > answer.txt"]
        invariants:
          verdict:
            description: x
            check: {type: custom, script: checks/verdict.py, runs_in: host}
        """)
    t = trial(r)
    assert t["status"] == "pass", t
    seen = json.loads(t["checks"][0]["message"])
    assert seen["uid"] == (65533 if os.geteuid() == 0 else 0)
    assert seen["home"] == "/home/grader" and seen["cwd"] == seen["workspace"]
    assert not seen["script_writable"] and not seen["workspace_writable"]
    assert seen["git"] == "1\t1\tanswer.txt\n", seen
    assert (tmp_path / "checks" / "verdict.py").read_text() == VERDICT
    assert "forged" not in run_texts(tmp_path / "run0")


@pytest.mark.parametrize("isolation", ["auto", "none"])
def test_examples_fix_the_bug_passes_under_the_grader(run_spec, tmp_path, isolation):
    example = Path(__file__).resolve().parents[2] / "examples" / "fix-the-bug"
    shutil.copytree(example, tmp_path / "ftb", dirs_exist_ok=True)
    spec = (example / "scenario.yaml").read_text()
    t = trial(run_spec(spec, "--isolation", isolation, name="ftb/scenario.yaml"))
    assert t["status"] == "pass", t


def test_custom_checks_run_when_proctors_python_lives_under_tmp(tmp_path):
    """The grader box has its own /tmp and shows proctor's Python read-only at its own path;
    emptying that /tmp after a check once removed the mount point too, so with a checkout
    under /tmp every custom check after the first could not start its Python (exit 127)."""
    import site
    import subprocess
    import sys

    venv = tmp_path / "venv"  # tmp_path is under /tmp
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", venv], check=True)
    [lib] = (venv / "lib").glob("python3*")
    src = Path(__file__).resolve().parents[2] / "src"
    (lib / "site-packages" / "proctor.pth").write_text(
        "\n".join([str(src), *site.getsitepackages()]) + "\n")
    (tmp_path / "ok.py").write_text('print(\'{"passed": true}\')\n')
    checks = "".join(f"  c{i}: {{description: x, check: {{type: custom, script: ok.py}}}}\n"
                     for i in range(3))
    (tmp_path / "spec.yaml").write_text(
        "version: 1\nid: tmpvenv\ntask: {prompt: nothing}\nagent: {type: nop}\n"
        "invariants:\n" + checks)
    proctor = [venv / "bin" / "python", "-c", "from proctor.cli import main; main()"]
    proc = subprocess.run([*proctor, "run", "spec.yaml", "-q", "--output-dir", "out"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert "Traceback" not in proc.stderr, proc.stderr
    t = trial(json.loads((tmp_path / "out" / "results.json").read_text()))
    assert [c["passed"] for c in t["checks"]] == [True] * 3, t["checks"]
