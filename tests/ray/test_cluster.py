"""`--executor ray` on a real 2-node Ray cluster (head + a node that cannot see the specs)."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tests.conftest import PROCTOR, REPO
from tests.ray.conftest import ENV, Cluster, proctor_leftovers

pytestmark = pytest.mark.slow

SUITE = """
cli: sh
scaffold: scaf
tasks:
  - id: reads-scaffold
    intent: x
    solution: ["cat fixture > out"]
    assert: [{file_contains: {path: out, text: from-the-scaffold}}]
  - id: fails
    intent: x
    solution: ["echo b > out"]
    assert: [{file_contains: {path: out, text: nope}}]
"""

SLEEPS = """
cli: sh
tasks:
  - id: nap
    intent: x
    repeat: {n}
    solution: ["sleep {s}", "echo done > out"]
    assert: [{{file_contains: {{path: out, text: done}}}}]
"""


def _specs(cluster: Cluster, name: str) -> Path:
    """The examples that read spec-side files (seed, check script, the agent's and the
    judge's mock scripts) plus a scaffold suite, written where the hidden node cannot see
    them."""
    d = cluster.spec_dir / name
    for example in ("reconciliation", "fix-the-bug", "mock-llm-demo"):
        shutil.copytree(REPO / "examples" / example, d / example)
    (d / "suite" / "scaf").mkdir(parents=True)
    (d / "suite" / "scaf" / "fixture").write_text("from-the-scaffold\n")
    (d / "suite" / "suite.yaml").write_text(SUITE)
    return d


def _run(cwd: Path, *args: str, timeout: float = 240) -> subprocess.CompletedProcess:
    return subprocess.run([PROCTOR, "run", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, env=ENV)


def _trials(run_dir: Path) -> dict[str, dict]:
    r = json.loads((run_dir / "results.json").read_text())
    return {t["id"]: t for t in r["trials"]}


def test_results_equal_a_local_run_with_a_node_that_cannot_see_the_specs(cluster, tmp_path):
    specs = _specs(cluster, "equal")
    local = _run(tmp_path, str(specs), "--agent", "oracle", "--repeat", "2", "-q",
                 "--output-dir", "local")
    on_ray = _run(tmp_path, str(specs), "--agent", "oracle", "--repeat", "2", "-q",
                  "--executor", "ray", "--ray-address", cluster.address, "--output-dir", "ray")
    assert local.returncode == on_ray.returncode == 1, on_ray.stdout + on_ray.stderr
    a, b = _trials(tmp_path / "local"), _trials(tmp_path / "ray")
    assert {k: v["status"] for k, v in a.items()} == {k: v["status"] for k, v in b.items()}
    assert {k: [c["passed"] for c in v["checks"]] for k, v in a.items()} == \
        {k: [c["passed"] for c in v["checks"]] for k, v in b.items()}
    assert {t["status"] for t in b.values()} == {"pass", "fail"}
    assert all(t["node"] is None for t in a.values())
    # Trials ran on both nodes, the hidden one included (it got the files shipped).
    assert len({t["node"] for t in b.values()}) == 2
    trace = (tmp_path / "ray" / "trials" / "reconciliation.r0" / "audit.jsonl").read_text()
    assert '"http_call"' in trace
    assert "ray" not in on_ray.stderr.lower(), on_ray.stderr  # no (raylet) noise under -q


# Another Ray job on the cluster: it holds every CPU of the node whose temp dir it is given.
OTHER_JOB = """
import sys, time, ray
from ray.util.placement_group import NODE_ID_LABEL_KEY, placement_group
ray.init(address=sys.argv[1], logging_level="ERROR")
[node] = [n["NodeID"] for n in ray.nodes() if n["Alive"] and sys.argv[2] in n["ObjectStoreSocketName"]]
group = placement_group([{"CPU": 2}], bundle_label_selector=[{NODE_ID_LABEL_KEY: node}])
ray.get(group.ready())
print(node, flush=True)
time.sleep(600)
"""


def test_trials_reserve_their_cpus_in_ray_and_wait_for_room_other_jobs_hold(cluster, tmp_path):
    other = subprocess.Popen([sys.executable, "-c", OTHER_JOB, cluster.address,
                              str(cluster.hidden.temp_dir)], env=ENV, text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        busy = other.stdout.readline().strip()
        assert busy, "the other job could not reserve the node"
        (tmp_path / "s.yaml").write_text(SLEEPS.format(n=4, s=1))
        done = _run(tmp_path, "s.yaml", "--agent", "oracle", "-q", "--executor", "ray",
                    "--ray-address", cluster.address, "--concurrency", "4", "--output-dir", "run")
        assert done.returncode == 0, done.stdout + done.stderr
        nodes = {t["node"] for t in _trials(tmp_path / "run").values()}
        # Every trial went to the node with room: the busy one's CPUs are the other job's.
        assert len(nodes) == 1 and not next(iter(nodes)).endswith(busy[:8]), (nodes, busy)
    finally:
        other.kill()
        other.wait()


def _node_running_trials(node, timeout: float = 60) -> None:
    """Wait until the node's actor has a trial's sandbox."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for pid in node.workers():
            try:
                links = [os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")]
            except OSError:
                continue
            for link in links:
                if link.endswith("/lock") and "-node-" in link:
                    box = Path(link).parent / "sandboxes"
                    if box.is_dir() and any(box.iterdir()):
                        return
        time.sleep(0.2)
    raise AssertionError("no trial started on the node")


def test_a_node_killed_mid_run_loses_no_trial_and_leaves_nothing(cluster, tmp_path):
    (tmp_path / "s.yaml").write_text(SLEEPS.format(n=8, s=2))
    doomed = cluster.add_node(cpus=2)
    run = subprocess.Popen([PROCTOR, "run", "s.yaml", "--agent", "oracle", "-q", "--executor",
                            "ray", "--ray-address", cluster.address, "--concurrency", "6",
                            "--output-dir", "run"], cwd=tmp_path, env=ENV,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _node_running_trials(doomed)
        doomed.kill()  # raylet, its workers and the actor running trials: SIGKILL
        out, err = run.communicate(timeout=180)
    finally:
        run.kill()
    assert run.returncode == 0, out + err
    trials = _trials(tmp_path / "run")
    assert len(trials) == 8 and {t["status"] for t in trials.values()} == {"pass"}
    run_id = json.loads((tmp_path / "run" / "run.json").read_text())["run_id"]
    _assert_nothing_left(run_id)


def test_resume_reruns_trials_lost_with_their_node(cluster, tmp_path):
    (tmp_path / "s.yaml").write_text(SLEEPS.format(n=6, s=2))
    (tmp_path / "proctor.toml").write_text("[ray]\nmax_retries = 0\n")
    doomed = cluster.add_node(cpus=4)
    run = subprocess.Popen([PROCTOR, "run", "s.yaml", "--agent", "oracle", "-q", "--executor",
                            "ray", "--ray-address", cluster.address, "--concurrency", "6",
                            "--output-dir", "run"], cwd=tmp_path, env=ENV,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _node_running_trials(doomed)
        doomed.kill()
        out, err = run.communicate(timeout=180)
    finally:
        run.kill()
    lost = [t for t in _trials(tmp_path / "run").values() if t["status"] == "error"]
    assert lost, out + err
    assert all(t["error"].startswith("infrastructure error: ") for t in lost), lost
    assert all(t["node"] for t in lost)  # the node it was lost on
    again = _run(tmp_path, "--resume", "run", "-q", "--ray-address", cluster.address)
    assert again.returncode == 0, again.stdout + again.stderr
    trials = _trials(tmp_path / "run")
    assert len(trials) == 6 and {t["status"] for t in trials.values()} == {"pass"}


def test_ctrl_c_leaves_nothing_on_either_node(cluster, tmp_path):
    specs = _specs(cluster, "interrupt")
    (specs / "suite" / "slow.yaml").write_text(textwrap.dedent("""
        cli: sh
        tasks:
          - id: long
            intent: x
            repeat: 4
            solution: ["sleep 60 & sleep 60"]
            assert: [{file_contains: {path: out, text: never}}]
    """))
    run = subprocess.Popen([PROCTOR, "run", str(specs), "--agent", "oracle", "-q",
                            "--executor", "ray", "--ray-address", cluster.address,
                            "--concurrency", "4", "--output-dir", "run"], cwd=tmp_path, env=ENV,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _node_running_trials(cluster.hidden)
        time.sleep(1.5)  # trials and the database server are up on both nodes
        run_id = json.loads((tmp_path / "run" / "run.json").read_text())["run_id"]
        pids, _ = proctor_leftovers(run_id)
        assert pids, "no trial process was running"
        run.send_signal(signal.SIGINT)
        out, err = run.communicate(timeout=120)
    finally:
        run.kill()
    assert run.returncode == 130, out + err
    _assert_nothing_left(run_id)


def _assert_nothing_left(run_id: str, timeout: float = 30, nodes_only: bool = False) -> None:
    deadline = time.monotonic() + timeout
    while True:
        pids, dirs = proctor_leftovers(run_id)
        if nodes_only:  # what node actors make is labelled <run id>-<n><hex>-
            dirs = [d for d in dirs if re.match(rf"proctor-{run_id}-\d+[0-9a-f]{{6}}-", Path(d).name)]
        if not pids and not dirs:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"left behind: processes {pids}, dirs {dirs}")
        time.sleep(0.5)


def test_a_killed_head_leaves_nothing_on_the_nodes(cluster, tmp_path):
    specs = _specs(cluster, "head-killed")
    (specs / "suite" / "slow.yaml").write_text(textwrap.dedent("""
        cli: sh
        tasks:
          - id: long
            intent: x
            repeat: 4
            solution: ["sleep 60 & sleep 60"]
            assert: [{file_contains: {path: out, text: never}}]
    """))
    run = subprocess.Popen([PROCTOR, "run", str(specs), "--agent", "oracle", "-q",
                            "--executor", "ray", "--ray-address", cluster.address,
                            "--concurrency", "4", "--output-dir", "run"], cwd=tmp_path, env=ENV,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _node_running_trials(cluster.hidden)
        time.sleep(1.5)
        run_id = json.loads((tmp_path / "run" / "run.json").read_text())["run_id"]
        assert proctor_leftovers(run_id)[0], "no trial process was running"
    finally:
        run.kill()  # SIGKILL: no clean-up from the head; the nodes' reapers do it
        run.wait()
    # The head's own temp dir is --resume's to sweep (docs/running.md); the nodes' are not.
    _assert_nothing_left(run_id, timeout=60, nodes_only=True)
    from proctor.janitor import sweep

    sweep(run_id)


def test_a_node_that_joins_during_the_run_gets_trials(cluster, tmp_path):
    (tmp_path / "s.yaml").write_text(SLEEPS.format(n=24, s=3))  # ~18 s on the first 2 nodes
    run = subprocess.Popen([PROCTOR, "run", "s.yaml", "--agent", "oracle", "-q", "--executor",
                            "ray", "--ray-address", cluster.address, "--concurrency", "8",
                            "--output-dir", "run"], cwd=tmp_path, env=ENV,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _node_running_trials(cluster.hidden)
        late = cluster.add_node(cpus=2)
        out, err = run.communicate(timeout=180)
    finally:
        run.kill()
    assert run.returncode == 0, out + err
    trials = _trials(tmp_path / "run")
    assert {t["status"] for t in trials.values()} == {"pass"}
    assert len({t["node"] for t in trials.values()}) == 3, "the late node ran nothing"
    late.kill()


def test_a_node_without_proctor_is_named_with_the_reason(tmp_path):
    """A head without CPUs and one node where proctor cannot be imported (its source is
    hidden): every trial is an infrastructure error saying so, and nothing hangs."""
    import proctor
    from tests.ray.conftest import start_cluster

    src = Path(proctor.__file__).resolve().parent.parent  # src/ of the editable install
    cluster = start_cluster(head_cpus=0)
    try:
        cluster.add_node(hide=src)
        (tmp_path / "s.yaml").write_text(SLEEPS.format(n=1, s=0))
        out = _run(tmp_path, "s.yaml", "--agent", "oracle", "-q", "--executor", "ray",
                   "--ray-address", cluster.address, "--output-dir", "run", timeout=120)
    finally:
        cluster.stop()
    assert out.returncode == 1, out.stdout + out.stderr
    (trial,) = _trials(tmp_path / "run").values()
    assert trial["error"].startswith("infrastructure error: no live Ray node with CPUs is left")
    assert "No module named 'proctor" in trial["error"]
