"""headstart.py: a docker run's first container, remembered by the run before, made while
proctor starts, and taken by the trial only when it is exactly the container the trial
asks for; never left behind."""

from __future__ import annotations

import json
import re
import subprocess
import time

import pytest

from proctor import headstart
from tests.helpers.cli import results
from tests.helpers.docker import gone

pytestmark = [pytest.mark.slow]

SPEC = """\
version: 1
id: trivial
task: {prompt: x}
agent: {type: oracle}
solution: ["echo ok > out.txt"]
invariants:
  ok: {description: x, check: {type: file_content, path: out.txt, contains: ok}}
"""
ARGS = ("run", "spec.yaml", "--backend", "docker", "-q")


def _created(run_id: str, since: float) -> list[str]:
    """The containers the engine created for the run (its `create` events)."""
    done = subprocess.run(["docker", "events", "--since", f"{since:.3f}", "--until",
                           f"{time.time() + 1:.3f}", "--filter", "type=container", "--filter",
                           "event=create", "--filter", f"label=proctor.run={run_id}",
                           "--format", "{{.Actor.ID}}"],
                          capture_output=True, text=True, check=True, timeout=30)
    return done.stdout.split()


def _run(cli, out: str) -> str:
    done = cli(*ARGS, "--output-dir", out)
    assert done.returncode == 0, done.stdout + done.stderr
    summary = results(cli.cwd / out)
    assert summary["summary"]["passed"] == 1
    return str(summary["run_id"])


def test_the_remembered_container_is_made_first_and_taken_only_when_identical(
        base_image, cli, spec, tmp_path, monkeypatch):
    spec(SPEC)
    monkeypatch.chdir(tmp_path)
    key = headstart._key_of(["proctor", *ARGS, "--output-dir", "elsewhere"])
    recipe = headstart._dir() / f"{key}.json"
    try:
        since = time.time() - 1
        first = _run(cli, "r1")
        assert recipe.exists(), "the run's first container is remembered"
        assert len(_created(first, since)) == 1

        # The same command line again (another output directory): the container begun at
        # start-up is the trial's; the engine made no other.
        since = time.time() - 1
        second = _run(cli, "r2")
        assert len(_created(second, since)) == 1
        assert gone(second) == []

        # A remembered request that is not the trial's (its memory limit changed): begun,
        # not taken; the trial makes its own, the begun one is removed at exit.
        kept = json.loads(recipe.read_text())
        changed = re.sub(r'"(Memory|MemorySwap)": \d+', r'"\1": 314572800', kept["body"])
        assert changed != kept["body"]
        recipe.write_text(json.dumps({"body": changed}))
        since = time.time() - 1
        third = _run(cli, "r3")
        made = _created(third, since)
        assert len(made) == 2, made
        assert gone(third) == []
        assert json.loads(recipe.read_text()) == kept  # the trial's own request remembered
    finally:
        recipe.unlink(missing_ok=True)


def test_only_a_docker_run_on_this_engine_begins_one() -> None:
    assert headstart._wanted(["proctor", "run", "s.yaml", "--backend", "docker"])
    assert headstart._wanted(["proctor", "run", "s.yaml", "--backend=docker", "-q"])
    for argv in (["proctor", "run", "s.yaml"], ["proctor", "validate", "--backend", "docker"],
                 ["proctor", "run", "--resume", "latest", "--backend", "docker"],
                 ["proctor", "run", "s.yaml", "--backend", "docker", "--keep"],
                 ["proctor", "run", "s.yaml", "--backend", "docker", "--executor", "ray"],
                 ["pytest", "tests"]):
        assert not headstart._wanted(argv), argv


def test_a_begun_container_whose_process_is_gone_is_removed_and_a_live_ones_kept(base_image):
    """SIGKILL before the run directory exists: no --resume can sweep its early container, so
    the next head start removes every one whose process is gone, and only those."""
    dead = subprocess.Popen(["sleep", "30"])
    dead_owner = headstart._owner(dead.pid)
    dead.kill()
    dead.wait()
    assert dead_owner and headstart._owner(dead.pid) != dead_owner
    made = {}
    for who, owner in (("dead", dead_owner), ("live", headstart._owner()),
                       ("elsewhere", "pid:[1]/" + dead_owner.split("/", 1)[1])):
        made[who] = subprocess.run(
            ["docker", "run", "-d", "--rm", "--label", f"{headstart.OWNER}={owner}",
             base_image, "sleep", "60"], capture_output=True, text=True, check=True).stdout.strip()
    try:
        assert headstart.sweep_orphans() >= 1
        running = subprocess.run(["docker", "ps", "-aq", "--no-trunc", "--filter",
                                  f"label={headstart.OWNER}"], capture_output=True, text=True,
                                 check=True).stdout.split()
        assert made["dead"] not in running
        assert made["live"] in running  # this process is alive: its container is its own
        assert made["elsewhere"] in running  # another PID namespace's pid: not judged here
    finally:
        subprocess.run(["docker", "rm", "-f", *made.values()], capture_output=True)
