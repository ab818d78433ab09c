"""boxstart.py: a local run's first boxes, remembered by the run before, made while proctor
starts, and taken by a slot only when each is exactly the box the slot would make; never
left behind (process, cgroup, file system, directory), whether taken, not taken, or the run
stopped before its trials.

Each run is the `proctor` program (a copy of the console script pip writes) in a fresh
interpreter; at exit it says on stderr what was made early and taken.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

import proctor
from proctor import headstart
from proctor.sandbox import boxstart
from proctor.sandbox.namespaces import missing

# The console script, and at exit (after boxstart's own exit handler) what was made early:
# each box's root, spawner pid, cgroup directories and whether its slot took it.
SCRIPT = """#!{python}
import atexit, json, os, sys
from proctor import headstart
from proctor.sandbox import boxstart
made = []
def _make(early, make=boxstart._make):
    makers = make(early)
    for m in makers:
        m.join()
    for b in early:
        made.append({{"root": b.root, "bwrap": None,
                     "cgroups": [str(d) for d in b.cgroup.dirs.values()] if b.cgroup else []}})
    return makers
def _launch(launch=boxstart.launch_made):
    if os.environ.get("STOP_BEFORE_LAUNCH"):  # as a run stopped before its body began
        sys.exit(3)
    launch()
    for m, b in zip(made, boxstart._early):
        m.update(bwrap=b.launched and b.launched.bwrap.pid)
boxstart._make, boxstart.launch_made = _make, _launch
def said():
    for m, b in zip(made, boxstart._early):
        m.update(taken=b.taken, pid=b.pid)
    os.write(2, ("early: " + json.dumps(made) + "\\n").encode())
atexit.register(said)
from proctor.cli import main
if __name__ == '__main__':
    sys.exit(main())
"""

SUITE = """cli: sh
tasks:
  - id: t1
    intent: Write the file.
    solution: ["echo hello > out.txt"]
    assert: [{file_contains: {path: out.txt, text: hello}}]
  - id: t2
    intent: Write the other file.
    solution: ["echo bye > other.txt"]
    assert: [{file_contains: {path: other.txt, text: bye}}]
"""


@pytest.fixture(autouse=True)
def _boxes():
    if missing() is not None:
        pytest.skip(f"no namespace box here: {missing()}")


def _program(tmp_path: Path) -> Path:
    path = tmp_path / "bin" / "proctor"
    path.parent.mkdir(exist_ok=True)
    path.write_text(SCRIPT.format(python=sys.executable))
    path.chmod(0o755)
    return path


def _run(tmp_path: Path, out: str) -> tuple[subprocess.CompletedProcess[str], list[dict]]:
    (tmp_path / "tmp").mkdir(exist_ok=True)
    env = dict(os.environ, PROCTOR_HOME=str(tmp_path / "home"),
               PROCTOR_CACHE=str(tmp_path / "cache"), TMPDIR=str(tmp_path / "tmp"),
               PYTHONPATH=str(Path(proctor.__file__).resolve().parents[1]))
    env.pop("PROCTOR_NO_HEADSTART", None)
    done = subprocess.run([str(_program(tmp_path)), "run", "suite.yaml", "--agent", "oracle",
                           "-q", "--concurrency", "2", "--output-dir", out], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=120)
    line = [x for x in done.stderr.splitlines() if x.startswith("early: ")]
    assert line, done.stderr
    return done, json.loads(line[-1][len("early: "):])


def _left(tmp_path: Path, early: list[dict]) -> list[str]:
    """What of the boxes made early is still there, and anything in the scratch place."""
    left = [f"cgroup {d}" for box in early for d in box["cgroups"] if os.path.exists(d)]
    left += [f"{box['root']} exists" for box in early if os.path.exists(box["root"])]
    for box in early:
        for pid in (box["bwrap"], box["pid"]):
            if pid and os.path.exists(f"/proc/{pid}") and \
                    "Z" not in Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1][:3]:
                left.append(f"process {pid} alive")
    left += [str(p) for p in (tmp_path / "tmp").iterdir()]
    # Any process naming the scratch place: a box's bubblewrap whose spawner never started
    # (one left waiting for its killed parent outlives every pid recorded above).
    for proc in Path("/proc").iterdir():
        try:
            named = str(tmp_path / "tmp") in (proc / "cmdline").read_bytes().decode(
                errors="replace")
            stat = (proc / "stat").read_text().rsplit(")", 1)[1][:3]
        except (OSError, ValueError):
            continue
        if named and "Z" not in stat and proc.name != str(os.getpid()):
            left.append(f"process {proc.name} alive: {(proc / 'cmdline').read_bytes()[:80]!r}")
    return left


def _recipe(tmp_path: Path) -> Path:
    found = list((tmp_path / "cache" / "headstart").glob("local-*.json"))
    assert len(found) == 1, found
    return found[0]


def test_the_remembered_boxes_are_made_first_and_taken_only_when_identical(tmp_path):
    (tmp_path / "suite.yaml").write_text(SUITE)
    first, early = _run(tmp_path, "r1")
    assert first.returncode == 0, first.stderr
    assert early == []  # nothing remembered yet: nothing made early
    recipe = _recipe(tmp_path)
    kept = json.loads(recipe.read_text())
    assert len(kept["boxes"]) == 2  # a box per trial slot
    assert oct(recipe.stat().st_mode & 0o777) == "0o600"

    # The same command line again (another output directory): both boxes made at start-up
    # are the slots' boxes; the trials pass in them, and nothing of them is left.
    second, early = _run(tmp_path, "r2")
    assert second.returncode == 0, second.stderr
    assert second.stdout.startswith("2/2 passed"), second.stdout
    assert [b["taken"] for b in early] == [True, True], early
    assert all(b["pid"] and b["bwrap"] for b in early)
    assert _left(tmp_path, early) == []
    assert json.loads(recipe.read_text()) == kept  # the same boxes: nothing rewritten

    # A remembered box that is not the slot's (other limits): made, not taken; the slot
    # makes its own, the one made early is removed whole, and the slots' own remembered.
    changed = json.loads(recipe.read_text())
    changed["boxes"][1]["limits"]["pids"] = 77
    recipe.write_text(json.dumps(changed))
    third, early = _run(tmp_path, "r3")
    assert third.returncode == 0, third.stderr
    assert third.stdout.startswith("2/2 passed"), third.stdout
    assert sorted(b["taken"] for b in early) == [False, True], early
    assert _left(tmp_path, early) == []
    assert json.loads(recipe.read_text()) == kept


def test_boxes_made_for_a_run_that_stops_before_its_trials_are_removed(tmp_path):
    (tmp_path / "suite.yaml").write_text(SUITE)
    assert _run(tmp_path, "r1")[0].returncode == 0
    # What a run killed (SIGKILL) before its run directory existed left: its scratch
    # directory, naming the process that made its boxes; and a live run's, left alone.
    dead = subprocess.Popen(["sleep", "30"])
    dead_owner = headstart._owner(dead.pid)
    dead.kill()
    dead.wait()
    for name, owner in (("dead", dead_owner), ("live", headstart._owner())):
        (tmp_path / "tmp" / f"proctor-{name}-x" / "box-0" / "work").mkdir(parents=True)
        (tmp_path / "tmp" / f"proctor-{name}-x" / boxstart.OWNER).write_text(owner)
    # The same command line, but its output directory holds a run: exit 2 after the boxes
    # were made (at start-up), before any trial.
    stopped, early = _run(tmp_path, "r1")
    assert stopped.returncode == 2, stopped.stderr
    assert "already holds a run" in stopped.stderr
    assert len(early) == 2 and not any(b["taken"] for b in early)
    assert all(b["bwrap"] for b in early)
    live = tmp_path / "tmp" / "proctor-live-x"
    assert _left(tmp_path, early) == [str(live)]  # the dead run's removed, the live one's kept


def test_boxes_begun_for_a_run_stopped_before_they_were_launched_are_removed(tmp_path,
                                                                             monkeypatch):
    """A remembered command line whose process ends after the boxes were begun (file
    systems, directories, cgroups: `_make`) and before its run's body launched them (an
    error, a signal): never launched, they are removed whole at exit."""
    (tmp_path / "suite.yaml").write_text(SUITE)
    assert _run(tmp_path, "r1")[0].returncode == 0
    monkeypatch.setenv("STOP_BEFORE_LAUNCH", "1")
    refused, early = _run(tmp_path, "r2")
    assert refused.returncode == 3, refused.stderr
    assert len(early) == 2 and not any(b["bwrap"] or b["taken"] for b in early), early
    assert _left(tmp_path, early) == []


def test_a_box_begun_at_start_up_outlives_the_threads_that_made_it(tmp_path, monkeypatch):
    """bubblewrap's --die-with-parent kills a box when the thread that started it ends:
    `launch_made` starts every box on the main thread, after `_make`'s threads, which made
    their directories, have ended. The hostile order (started on a thread that then ends)
    is shown to kill it, so the check can fail."""
    import threading

    argv = ["bwrap", "--die-with-parent", "--dev-bind", "/", "/", "sleep", "30"]
    recipe = {"argv": argv, "env": dict(os.environ), "program": "/bin/true", "disk": 0,
              "limits": {}}
    box = boxstart.Early({**recipe, "root": str(tmp_path / "box")})
    started_on: list[str] = []
    launch = boxstart.launch
    monkeypatch.setattr(boxstart, "launch", lambda *a: started_on.append(
        threading.current_thread().name) or launch(*a))
    monkeypatch.setattr(boxstart, "_early", [box])
    monkeypatch.setattr(boxstart, "_makers", boxstart._make([box]))
    monkeypatch.setattr(boxstart, "_pending", (sys.getswitchinterval(), str(tmp_path)))
    monkeypatch.setattr(boxstart, "sweep_orphans", lambda scratch: 0)
    monkeypatch.setattr(boxstart, "_thread", None)
    hostile = None
    try:
        boxstart.launch_made()
        assert started_on == [threading.main_thread().name]
        assert box.launched is not None
        # the twin: the same box started by a thread that ends a moment later
        out: list = []
        maker = threading.Thread(target=lambda: out.append(launch(argv, dict(os.environ),
                                                                 "/bin/true")) or time.sleep(0.2))
        maker.start()
        maker.join()
        hostile = out[0]
        time.sleep(0.3)
        assert hostile.bwrap.poll() is not None  # killed with the thread that started it
        assert box.launched.bwrap.poll() is None  # still running: started by the main thread
    finally:
        box.claimed = True
        for launched in (box.launched, hostile):
            if launched is not None:
                launched.bwrap.kill()
        if boxstart._thread is not None:
            boxstart._thread.join(10)
        box.ready.set()
        boxstart._close(box)
        if hostile is not None:
            hostile.bwrap.wait()
            hostile.bwrap.stderr.close()
            hostile.sock.close()
            os.close(hostile.info)


def test_a_recipe_others_could_write_is_not_made() -> None:
    """Made as root before anything else runs: only a file this user alone could write."""
    import tempfile

    with tempfile.TemporaryDirectory() as where:
        path = Path(where) / "local-x.json"
        path.write_text(json.dumps({"boxes": []}))
        os.chmod(where, 0o700)
        path.chmod(0o600)
        assert headstart.trusted(path) == {"boxes": []}
        path.chmod(0o622)
        assert headstart.trusted(path) is None


def test_only_a_local_run_of_its_own_boxes_makes_them_early() -> None:
    assert boxstart._wanted(["proctor", "run", "s.yaml", "--agent", "oracle"])
    assert boxstart._wanted(["proctor", "run", "s.yaml", "--backend", "local", "-q"])
    for argv in (["proctor", "validate", "s.yaml"], ["proctor", "run", "--backend", "docker"],
                 ["proctor", "run", "s.yaml", "--backend=docker"],
                 ["proctor", "run", "s.yaml", "--isolation", "none"],
                 ["proctor", "run", "s.yaml", "--isolation=none"],
                 ["proctor", "run", "--resume", "latest"], ["proctor", "run", "s.yaml", "--keep"],
                 ["proctor", "run", "s.yaml", "--executor", "ray"]):
        assert not boxstart._wanted(argv), argv



def test_each_box_is_made_on_a_thread_and_one_that_cannot_be_is_not_prepared(tmp_path):
    """`_make` makes each box's directories (and cgroup) on a thread of its own and returns
    those threads at once (the caller goes on importing); a box whose directories cannot be
    made is not prepared (`launch_made` does not launch it, no slot takes it)."""
    import threading

    (tmp_path / "file").write_text("")
    recipe = {"argv": ["/bin/true"], "env": {}, "program": "/bin/true", "disk": 0,
              "limits": {}}
    bad = boxstart.Early({**recipe, "root": str(tmp_path / "file" / "bad")})  # under a file
    good = boxstart.Early({**recipe, "root": str(tmp_path / "good")})
    makers = boxstart._make([bad, good])
    assert len(makers) == 2 and threading.current_thread() not in makers
    for maker in makers:
        maker.join(30)
    try:
        assert good.prepared and not bad.prepared
        assert good.launched is None and bad.launched is None
        assert sorted(p.name for p in (tmp_path / "good").iterdir()) == [
            "home", "private", "shm", "tmp", "work"]
        assert (tmp_path / "good" / "private" / "hosts").read_text() == ""
    finally:
        for box in (good, bad):
            box.claimed = True
            box.ready.set()
            boxstart._close(box)
