"""`--executor ray` on a real 2-node Ray cluster (head + a node that cannot see the specs)."""

from __future__ import annotations

import itertools
import json
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from tests.helpers import REPO
from tests.helpers.cli import Cli
from tests.helpers.ray import ENV, Cluster, proctor_leftovers

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


def _run(cwd: Path, *args: str, timeout: float = 240,
         env: dict | None = None) -> subprocess.CompletedProcess:
    return Cli(cwd, env=ENV)("run", *args, timeout=timeout, env=env)


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


def test_the_address_is_the_flag_else_proctor_toml_else_ray_address(cluster, tmp_path):
    """Each source reaches the cluster; each one before it wins over a dead address in the
    ones after (nothing listens on port 1)."""
    (tmp_path / "s.yaml").write_text(SLEEPS.format(n=2, s=0))
    dead = "127.0.0.1:1"
    toml = tmp_path / "proctor.toml"
    for n, (flag, in_toml, env) in enumerate([(None, None, cluster.address),
                                              (None, cluster.address, dead),
                                              (cluster.address, dead, dead)]):
        toml.write_text(f'[ray]\naddress = "{in_toml}"\nconnect_timeout_s = 5\n' if in_toml
                        else "[ray]\nconnect_timeout_s = 5\n")
        out = _run(tmp_path, "s.yaml", "--agent", "oracle", "--executor", "ray",
                   "--output-dir", f"run{n}", *(["--ray-address", flag] if flag else []),
                   env={"RAY_ADDRESS": env})
        assert out.returncode == 0, (n, out.stdout + out.stderr)
        assert "private local Ray instance" not in out.stderr
        assert len({t["node"] for t in _trials(tmp_path / f"run{n}").values()}) >= 1


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


BIG_MEMORY = """
version: 1
id: {id}
task: {{prompt: x}}
agent: {{type: oracle}}
resources: {{memory: {memory}}}
invariants:
  done:
    description: it ran
    check: {{type: file_content, path: f, contains: done}}
solution: ['sleep 3', 'echo done > f']
"""


def test_a_trials_memory_is_a_ray_reservation(cluster, tmp_path):
    """Trials asking for more than half of a node's memory (NODE_MEMORY) never share a node
    though it has CPUs for two; one asking for more than any node has is an infrastructure
    error that says so."""
    (tmp_path / "s").mkdir()
    (tmp_path / "s" / "big.yaml").write_text(BIG_MEMORY.format(id="big", memory="3g"))
    (tmp_path / "s" / "huge.yaml").write_text(BIG_MEMORY.format(id="huge", memory="5g"))
    done = _run(tmp_path, "s", "--agent", "oracle", "-q", "--executor", "ray", "--repeat", "4",
                "--ray-address", cluster.address, "--concurrency", "4", "--output-dir", "run")
    assert done.returncode == 1, done.stdout + done.stderr
    trials = _trials(tmp_path / "run")
    huge = [t for t in trials.values() if t["task_id"] == "huge"]
    assert all(t["error"].startswith("infrastructure error: no Ray node can hold this trial "
                                     "(resources: 1 CPU, 5120 MiB; the nodes have at most 2 "
                                     "CPU, 4096 MiB)") for t in huge), huge
    big = [t for t in trials.values() if t["task_id"] == "big"]
    assert {t["status"] for t in big} == {"pass"}
    by_node: dict[str, list[float]] = {}
    for t in big:
        started = time.mktime(time.strptime(t["started_at"], "%Y-%m-%dT%H:%M:%SZ"))
        by_node.setdefault(t["node"], []).append(started)
    assert max(len(s) for s in by_node.values()) >= 2, by_node
    for starts in by_node.values():  # one after the other (3 s each; started_at in seconds)
        starts.sort()
        assert all(b - a >= 2 for a, b in itertools.pairwise(starts)), by_node


def test_trials_of_another_size_get_the_room_idle_slots_hold(cluster, tmp_path):
    """Once the trials of one size are done, the slots kept for their reuse hold every CPU of
    the cluster; trials of another size get that room (they used to wait for ever)."""
    (tmp_path / "s").mkdir()
    (tmp_path / "s" / "a.yaml").write_text(BIG_MEMORY.format(id="a", memory="256m"))
    (tmp_path / "s" / "b.yaml").write_text(BIG_MEMORY.format(id="b", memory="512m"))
    done = _run(tmp_path, "s", "--agent", "oracle", "-q", "--executor", "ray", "--repeat", "4",
                "--ray-address", cluster.address, "--concurrency", "4", "--output-dir", "run",
                timeout=180)
    assert done.returncode == 0, done.stdout + done.stderr
    trials = _trials(tmp_path / "run")
    assert len(trials) == 8 and {t["status"] for t in trials.values()} == {"pass"}


def _node_running_trials(node, timeout: float = 60) -> None:
    """Wait until the node's actor has a trial's sandbox (or box)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for home in node.homes():
            # an isolated trial runs in a box of the node's pool, else a sandbox dir
            for place in ("boxes", "sandboxes"):
                box = home / place
                if box.is_dir() and any(box.iterdir()):
                    return
        time.sleep(0.2)
    raise AssertionError("no trial started on the node")


def test_a_node_killed_mid_run_loses_no_trial_and_leaves_nothing(cluster, tmp_path):
    (tmp_path / "s.yaml").write_text(SLEEPS.format(n=8, s=2))
    doomed = cluster.add_node(cpus=2)
    run = Cli(tmp_path, env=ENV).popen("run", "s.yaml", "--agent", "oracle", "-q",
                                       "--executor", "ray", "--ray-address", cluster.address,
                                       "--concurrency", "6", "--output-dir", "run")
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
    run = Cli(tmp_path, env=ENV).popen("run", "s.yaml", "--agent", "oracle", "-q",
                                       "--executor", "ray", "--ray-address", cluster.address,
                                       "--concurrency", "6", "--output-dir", "run")
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


def _slow_db(specs: Path) -> None:
    """examples/reconciliation, 4 replicas, each first sleeping a minute (database up)."""
    d = specs / "slow-db"
    shutil.copytree(REPO / "examples" / "reconciliation", d)
    text = (d / "scenario.yaml").read_text().replace("id: reconciliation", "id: slow-db")
    text = text.replace("solution:\n", "parallelism: {replicas: 4}\nsolution:\n  - sleep 60 & sleep 60\n")
    (d / "scenario.yaml").write_text(text)


def _wait_sandboxes(run_dir: Path, prefix: str, n: int, timeout: float = 90) -> str:
    """Wait until n trials whose ids start with prefix have their sandbox on some node (an
    isolated trial's is a box of its node's pool: n boxes, n trials at once); returns the run
    id."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if (run_dir / "run.json").exists():
            run_id = json.loads((run_dir / "run.json").read_text())["run_id"]
            nodes = f"proctor-{run_id}-*-node-*"
            tmp = Path(tempfile.gettempdir())
            boxes = [*tmp.glob(f"{nodes}/sandboxes/{prefix}*"), *tmp.glob(f"{nodes}/boxes/box-*")]
            if len(boxes) >= n:
                return run_id
        time.sleep(0.2)
    raise AssertionError(f"{n} trials {prefix}* never ran at once")


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL],
                         ids=["SIGINT", "SIGTERM", "SIGKILL"])
def test_an_interrupt_or_a_killed_head_leaves_nothing_on_either_node(cluster, tmp_path, sig):
    """Agents, temp dirs and the database servers' data dirs (/dev/shm) go on both nodes
    (a SIGKILLed head cleans nothing: the nodes' reapers do; the head has no temp dir of its
    own); while the trials ran, each node had one PostgreSQL server for all its trials."""
    specs = _specs(cluster, f"interrupt-{sig.name}")
    _slow_db(specs)
    run = Cli(tmp_path, env=ENV).popen("run", str(specs), "--agent", "oracle", "-q",
                                       "--executor", "ray", "--ray-address", cluster.address,
                                       "--concurrency", "4", "--output-dir", "run")
    try:
        run_id = _wait_sandboxes(tmp_path / "run", "slow-db.", 4)  # 2 CPUs a node: 2 each
        # A node's boxes are made before its trials' database server starts: wait for both.
        deadline = time.monotonic() + 60
        while True:
            pids, dirs = proctor_leftovers(run_id)
            servers = [d for d in dirs if d.startswith("/dev/shm/") and "-postgres-" in d]
            nodes = {Path(d).name.split("-node-")[0] for d in dirs if "-node-" in d}
            if len(servers) == len(nodes) == 2 or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert pids, "no trial process was running"
        assert len(servers) == len(nodes) == 2, dirs
        run.send_signal(sig)
        out, err = run.communicate(timeout=120)
    finally:
        run.kill()
    assert run.returncode == (-9 if sig == signal.SIGKILL else 130), out + err
    _assert_nothing_left(run_id, timeout=60)


def _assert_nothing_left(run_id: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while True:
        pids, dirs = proctor_leftovers(run_id)
        if not pids and not dirs:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"left behind: processes {pids}, dirs {dirs}")
        time.sleep(0.5)


def test_a_node_that_joins_during_the_run_gets_trials(cluster, tmp_path):
    (tmp_path / "s.yaml").write_text(SLEEPS.format(n=24, s=3))  # ~18 s on the first 2 nodes
    run = Cli(tmp_path, env=ENV).popen("run", "s.yaml", "--agent", "oracle", "-q",
                                       "--executor", "ray", "--ray-address", cluster.address,
                                       "--concurrency", "8", "--output-dir", "run")
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
    from tests.helpers.ray import start_cluster

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
