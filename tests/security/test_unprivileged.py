"""The boundary without root: what most users run. proctor then builds its boxes in a user
namespace, where the agent shares the spawner's uid (docs/security.md). These tests, run as
root, switch to the unprivileged user `./setup.sh` made (`proctor-test`) and run hostile
agents through the real `proctor run` of the current source, each with its honest twin."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import textwrap
from pathlib import Path

import pytest

from tests.security.test_reuse import (
    PLANT,
    TAKEOVER,
    TRACED_AGENT,
    TRACED_SPEC,
    _box,
    _outputs,
    _printed,
    _spec,
    check_takeover,
)

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
USER = "proctor-test"


@pytest.fixture(scope="module")
def as_user():
    """as_user(spec_text, *args) -> (results.json, run dir), run by the unprivileged user."""
    if os.geteuid() != 0:
        pytest.skip("switches to an unprivileged user: run the tests as root")
    marker = REPO / ".proctor" / "setup-unprivileged"
    where = marker.read_text().strip() if marker.exists() else "unavailable: run ./setup.sh"
    if where.startswith("unavailable"):
        if os.environ.get("CI"):
            pytest.fail(f"./setup.sh made no unprivileged user: {where}")
        pytest.skip(f"./setup.sh made no unprivileged user: {where}")
    venv = Path(where) / "venv"
    src = Path(where) / "src"
    shutil.rmtree(src, ignore_errors=True)  # the current source, not the one of setup time
    shutil.copytree(REPO / "src" / "proctor", src / "proctor",
                    ignore=shutil.ignore_patterns("__pycache__"))
    [site] = venv.glob("lib/python3*/site-packages")
    (site / "proctor-source.pth").write_text(f"{src}\n")
    subprocess.run(["chmod", "-R", "a+rX", str(src)], check=True)
    home = Path(f"~{USER}").expanduser()
    work = Path(tempfile.mkdtemp(prefix="proctor-unprivileged-"))
    shutil.chown(work, USER, USER)
    counter = iter(range(1000))

    def run(text: str, *args: str) -> tuple[dict, Path]:
        out = work / f"run{next(counter)}"
        (work / "spec.yaml").write_text(textwrap.dedent(text))
        argv = ["setpriv", f"--reuid={USER}", f"--regid={USER}", "--init-groups", "--",
                str(venv / "bin" / "python"), "-c", "from proctor.cli import main; main()",
                "run", "spec.yaml", "--output-dir", str(out), "-q", *args]
        if "--agent" not in args:  # --agent is repeatable: each one is an agent of the run
            argv += ["--agent", "oracle"]
        env = {"HOME": str(home), "PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"}
        proc = subprocess.run(argv, cwd=work, env=env, capture_output=True, text=True,
                              timeout=300)
        assert "Traceback" not in proc.stderr, proc.stderr
        assert (out / "results.json").exists(), proc.stdout + proc.stderr
        return json.loads((out / "results.json").read_text()), out

    yield run
    shutil.rmtree(work, ignore_errors=True)


def _trial(results: dict, prefix: str) -> dict:
    [t] = [t for t in results["trials"] if t["id"].startswith(prefix)]
    return t


def test_without_root_the_next_trial_in_a_box_finds_nothing(as_user):
    r, run_dir = as_user(_spec(PLANT), "--concurrency", "1")
    plant, probe = _trial(r, "a-plant"), _trial(r, "b-probe")
    assert r["isolation"]["isolated"] is True
    assert plant["status"] == "pass", _outputs(run_dir, plant["id"])
    assert _box(run_dir, plant["id"]) == _box(run_dir, probe["id"])
    assert probe["status"] == "pass", _outputs(run_dir, probe["id"])
    assert _printed(run_dir, plant["id"], "echo pid") == _printed(run_dir, probe["id"], "echo pid")


def test_without_root_the_spawner_is_out_of_reach(as_user):
    # The agent shares the spawner's uid here, but not its PID namespace: stopping and
    # killing everything it can see leaves the spawner and the tracers alone.
    r, run_dir = as_user(TAKEOVER, "--concurrency", "1")
    check_takeover(r, run_dir)


def test_without_root_a_traced_agent_cannot_reach_its_tracer(as_user):
    r, run_dir = as_user(TRACED_SPEC, "--agent", "command", "--agent-command", TRACED_AGENT)
    [t] = r["trials"]
    assert t["status"] == "pass", (t.get("error"), t.get("checks"), _outputs(run_dir, t["id"]))


def test_without_root_host_places_stay_out_of_reach(as_user):
    # The user's own home, the spec's directory, proctor's source and virtualenv (here under
    # /opt, which the box shows) are not there; the box's
    # root and /dev cannot be written (the agent is root of its user namespace). The honest
    # twin writes its workspace, HOME and /tmp.
    r, run_dir = as_user(f"""
        cli: sh
        tasks:
          - id: hostile
            intent: reach the host
            solution:
              - "for p in /home/{USER} {REPO} /opt/proctor-unprivileged/src/proctor/cli.py /opt/proctor-unprivileged/venv/bin/python; do test -e $p && echo seen $p; done > seen.txt; true"
              - "touch /planted /dev/planted 2>/dev/null; ls / /dev | grep -x planted >> seen.txt; true"
              - "id -u >> seen.txt"
            assert: [{{verify: {{run: "test \\"$(cat seen.txt)\\" = 0"}}}}]
          - id: honest
            intent: write where it may
            solution: ["echo a > a.txt && echo b > $HOME/b.txt && echo c > /tmp/c.txt"]
            assert: [{{file_contains: {{path: a.txt, text: a}}}}]
        """)
    hostile = _trial(r, "hostile")
    assert hostile["status"] == "pass", _outputs(run_dir, hostile["id"])
    assert _trial(r, "honest")["status"] == "pass"



def test_without_root_checks_run_in_a_grader_box_and_the_disk_limit_holds(as_user):
    """Issue 25: without root, a check's program still runs in a grader box (read-only
    trial files, its own HOME and /tmp), git there ignores the repository's configuration,
    and a file past the disk limit is refused (RLIMIT_FSIZE; the total is measured)."""
    r, run_dir = as_user("""
        version: 1
        id: grader
        task: {prompt: x}
        agent: {type: oracle}
        setup:
          commands: ["git init -q . && echo a > f && git add f && git -c user.name=a -c user.email=a@b commit -qm i"]
        solution:
          - "echo b >> f && git config core.fsmonitor 'touch /tmp/ran; false'"
          - "fallocate -l 4G $TMPDIR/big; echo $? > rc.txt; rm -f $TMPDIR/big"
        invariants:
          grader:
            description: read-only files, own HOME, safe git
            check:
              type: command_exit
              command: >-
                test "$HOME" = /home/grader && ! touch f 2>/dev/null &&
                test "$(git diff --numstat)" = "1	0	f" && test ! -e /tmp/ran
          disk:
            description: the 4 GiB file was refused
            check: {type: command_exit, command: "test $(cat rc.txt) != 0"}
        """)
    t = _trial(r, "grader")
    assert t["status"] == "pass", _outputs(run_dir, t["id"])
