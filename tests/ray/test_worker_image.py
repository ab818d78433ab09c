"""`proctor ray worker-image`: a Ray worker node in a container built by proctor (the shape of
a KubeRay RayCluster worker pod, without Kubernetes). The head is a `ray start --head` on this
machine without CPUs; the only node with CPUs is the container, which cannot see the spec
files: `--network host` (it joins the head), the capabilities and unmasked /proc the local
backend needs, and for the docker backend this machine's engine (its socket, `--pid host`,
one directory at the same path inside and out holding the node's TMPDIR and PROCTOR_CACHE,
which the engine's bind mounts name). The trials run there and give the local verdicts."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest

from tests.docker.engine import require_engine
from tests.helpers.cli import Cli
from tests.helpers.docker import gone
from tests.helpers.harbor import corpus, public_addresses
from tests.helpers.ray import ENV, NODE_MEMORY, start_cluster

pytestmark = pytest.mark.slow

SUITE = """
cli: sh
scaffold: scaf
tasks:
  - id: reads-scaffold
    intent: x
    repeat: 2
    solution: ["cat fixture > out"]
    assert: [{file_contains: {path: out, text: from-the-scaffold}}]
  - id: fails
    intent: x
    solution: ["echo b > out"]
    assert: [{file_contains: {path: out, text: nope}}]
"""


# What the local backend needs in a container (bubblewrap's namespaces, the ptrace tracer),
# where --privileged
# is not possible (this machine may itself be a container: "unable to apply caps").
LOCAL_BACKEND = ["--cap-add", "SYS_ADMIN", "--cap-add", "NET_ADMIN", "--cap-add", "SYS_PTRACE",
                 "--security-opt", "seccomp=unconfined", "--security-opt", "apparmor=unconfined",
                 "--security-opt", "systempaths=unconfined"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def image(tmp_path_factory):
    require_engine()
    started = time.monotonic()
    built = Cli(tmp_path_factory.mktemp("image"))("ray", "worker-image", "-q", timeout=900)
    assert built.returncode == 0, built.stderr
    tag = built.stdout.strip().splitlines()[-1]
    print(f"worker image {tag} in {time.monotonic() - started:.1f} s")
    return tag


@pytest.fixture(scope="module")
def worker(image, tmp_path_factory):
    """A head here (0 CPUs) and a worker in the image; both gone afterwards."""
    c = start_cluster(head_cpus=0, spec_dir=tmp_path_factory.mktemp("kuberay-specs"))
    name = f"proctor-kuberay-test-{int(time.time() * 1000)}"
    shared = tmp_path_factory.mktemp("kuberay-node")
    (shared / "tmp").mkdir()
    # Ray's worker ports: a range of this node's own, below the kernel's ephemeral ports
    low = 20000 + os.getpid() % 50 * 200
    argv = ["docker", "run", "-d", "--name", name, "--network", "host", *LOCAL_BACKEND,
            "--pid", "host", "-v", "/var/run/docker.sock:/var/run/docker.sock",
            "-v", f"{shared}:{shared}", "-e", f"TMPDIR={shared}/tmp",
            "-e", f"PROCTOR_CACHE={shared}/cache",
            "--shm-size", "512m", "-e", f"RAY_ADDRESS={c.address}", "-e", "RAY_AUTH_MODE=disabled",
            image, "--num-cpus", "2", "--memory", str(NODE_MEMORY),
            "--object-store-memory", str(200 << 20), "--disable-usage-stats",
            "--min-worker-port", str(low), "--max-worker-port", str(low + 200),
            "--dashboard-agent-listen-port", str(_free_port())]
    try:
        subprocess.run(argv, check=True, capture_output=True, timeout=60)
        deadline = time.monotonic() + 90
        logs = ""
        while time.monotonic() < deadline:
            logs = subprocess.run(["docker", "logs", name], capture_output=True, text=True,
                                  timeout=30)
            logs = logs.stdout + logs.stderr
            if "Ray runtime started" in logs:
                break
            time.sleep(0.5)
        else:
            raise AssertionError(f"the worker in {image} did not join:\n{logs[-3000:]}")
        yield c, name
    finally:
        subprocess.run(["docker", "rm", "-f", name], capture_output=True, timeout=120)
        c.stop()


def _statuses(run_dir: Path) -> dict[str, str]:
    r = json.loads((run_dir / "results.json").read_text())
    return {t["id"]: t["status"] for t in r["trials"]}


def _nodes(run_dir: Path) -> set[str]:
    r = json.loads((run_dir / "results.json").read_text())
    return {t["node"] for t in r["trials"]}


def test_a_worker_in_the_image_joins_the_head_and_gives_the_local_verdicts(worker, tmp_path):
    cluster, container = worker
    suite = cluster.spec_dir / "suite"
    (suite / "scaf").mkdir(parents=True)
    (suite / "scaf" / "fixture").write_text("from-the-scaffold\n")
    (suite / "suite.yaml").write_text(SUITE)
    cli = Cli(tmp_path, env=ENV)
    local = cli("run", str(suite), "--agent", "oracle", "--agent", "nop", "-q",
                "--output-dir", "local", timeout=240)
    on_ray = cli("run", str(suite), "--agent", "oracle", "--agent", "nop", "-q",
                 "--executor", "ray", "--ray-address", cluster.address,
                 "--output-dir", "ray", timeout=300)
    assert local.returncode == on_ray.returncode == 1, on_ray.stdout + on_ray.stderr
    verdicts = _statuses(tmp_path / "local")
    assert sorted(verdicts.values()).count("pass") == 2, verdicts  # the oracle's reads-scaffold
    assert _statuses(tmp_path / "ray") == verdicts
    # Every trial ran on the container's node: the head has no CPU, and the node the
    # results name is the one the container's raylet logs.
    (node,) = _nodes(tmp_path / "ray")
    found = subprocess.run(["docker", "exec", container, "grep", "-rlF", "--include=raylet*.out",
                            node.rsplit("/", 1)[1], "/tmp"],
                           capture_output=True, text=True, timeout=30)
    assert found.stdout.strip(), found.stderr


def test_the_docker_backend_on_that_node_drives_this_machines_engine(worker, tmp_path):
    """A Harbor recipe with --backend docker: its image built by the head in this engine, its
    container started by the node in the image through the mounted socket."""
    cluster, container = worker
    spec = cluster.spec_dir / "harbor"
    shutil.copytree(corpus("harbor-cookbook") / "recipes" / "simple-task", spec / "simple-task")
    (tmp_path / "proctor.toml").write_text('pass_env = ["UV_EXCLUDE_NEWER"]\n'
                                           f'public_addresses = {public_addresses()!r}\n')
    run = Cli(tmp_path, env={**ENV, "UV_EXCLUDE_NEWER": "2026-03-27T00:00:00Z"})(
        "run", str(spec), "--backend", "docker", "--agent", "oracle", "-q", "--executor", "ray",
        "--ray-address", cluster.address, "--output-dir", "ray", timeout=400)
    assert run.returncode == 0, run.stdout + run.stderr  # the oracle passes, as locally
    assert list(_statuses(tmp_path / "ray").values()) == ["pass"]
    (node,) = _nodes(tmp_path / "ray")
    found = subprocess.run(["docker", "exec", container, "grep", "-rlF", "--include=raylet*.out",
                            node.rsplit("/", 1)[1], "/tmp"],
                           capture_output=True, text=True, timeout=30)
    assert found.stdout.strip(), found.stderr
    run_id = json.loads((tmp_path / "ray" / "results.json").read_text())["run_id"]
    # The node killed the container's init; the engine removes it (--rm) a moment later.
    assert gone(run_id) == []


def test_a_base_image_that_is_not_there_is_one_line_and_exit_2(tmp_path):
    require_engine()
    done = Cli(tmp_path)("ray", "worker-image", "--base", "proctor-kuberay-no-such-image:1")
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.strip() == ("proctor: --base proctor-kuberay-no-such-image:1: no such "
                                   "image in this Docker engine (build or pull it first)")
