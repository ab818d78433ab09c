"""The agents' install cache under /tmp (a temporary PROCTOR_HOME), across trials that reuse
one box: the read-only cache is mounted at its own path inside the box's /tmp, so wiping the
box's /tmp between trials must leave its mount point alone (sandbox/pool.py). The hostile
twin (an agent moving the mount away) is tests/security/test_reuse.py."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from proctor.agents import make_agent
from proctor.agents.install import agents_home, pinned_dir
from tests.helpers import REPO
from tests.helpers.agents import need_agent
from tests.helpers.cli import Cli, results, run_dir_of

pytestmark = pytest.mark.slow


def _copy_cache(name: str, home: Path) -> None:
    """The installed agent, into `home`/agents (hard links: the same file system here)."""
    version = make_agent(name).version  # type: ignore[attr-defined]
    src, dest = pinned_dir(name, version), home / "agents" / f"{name}-{version}"
    dest.parent.mkdir(parents=True)
    if subprocess.run(["cp", "-al", str(src), str(dest)], capture_output=True).returncode:
        shutil.rmtree(dest, ignore_errors=True)
        shutil.copytree(src, dest, symlinks=True)


def _run(cwd: Path, spec: Path, home: Path, repeat: int) -> subprocess.CompletedProcess:
    """`proctor run` with PROCTOR_HOME=`home` and nothing else pointing at a cache."""
    return Cli(cwd, env={"PROCTOR_HOME": str(home)}, unset=("PROCTOR_AGENTS",))(
        "run", str(spec), "--agent", "codex", "--repeat", str(repeat), "--concurrency", "1",
        "-q", timeout=900)


# The box a command runs in: its UTS namespace (one per box; the network namespace is
# renewed per trial) and its workspace directory (inode and birth: namespace numbers are
# reused once a box is gone).
BOX = "echo box $(readlink /proc/self/ns/uts) $(stat -c %i.%W $PROCTOR_WORKDIR)"


def _boxes(run: Path) -> list[str]:
    """What each trial's setup printed of its box (BOX)."""
    out = []
    for t in results(run)["trials"]:
        events = [json.loads(line) for line in
                  (run / "trials" / t["id"] / "trace.jsonl").read_text().splitlines()]
        out += [e["stdout"] for e in events if e["type"] == "setup" and e["stdout"].startswith("box ")]
    return out


def test_three_trials_of_codex_in_one_box_with_proctor_home_under_tmp(tmp_path):
    need_agent("codex")
    home = tmp_path / "home"  # tmp_path is under /tmp: the box's /tmp holds the cache's path
    assert str(home).startswith("/tmp/") and str(agents_home()) != str(home / "agents")
    _copy_cache("codex", home)
    spec = tmp_path / "spec"
    shutil.copytree(REPO / "examples" / "external-agents", spec)
    bench = spec / "cli-bench.yaml"
    # Each trial says which box it ran in, in its trace.
    bench.write_text(bench.read_text().replace("    setup: [", f"    setup: [\"{BOX}\", "))
    proc = _run(tmp_path, spec, home, 4)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    run = run_dir_of(proc)
    trials = results(run)["trials"]
    assert len(trials) == 4 and all(t["status"] == "pass" for t in trials), [
        (t["status"], t.get("reason")) for t in trials]
    launcher = json.loads(next(line for line in (run / "trials" / trials[3]["id"] /
                                                 "trace.jsonl").read_text().splitlines()
                               if '"source": "launcher"' in line))
    assert launcher["argv"][0].startswith(str(home / "agents") + "/")  # the cache under /tmp
    boxes = _boxes(run)
    assert len(boxes) == 4 and len(set(boxes)) == 1, boxes  # one box served all four
