"""`--executor ray --backend docker` for a Harbor dataset on a real 2-node Ray cluster: a head
without CPUs and a node that cannot see the dataset directory, so every trial runs where the
task's tests, solution and step uploads exist only as the files the head shipped. Both nodes
share this machine's one Docker engine (the image is built once, by the head)."""

from __future__ import annotations

import json
import shutil
import subprocess
import time

import pytest

from tests.docker.engine import require_engine
from tests.helpers.cli import Cli
from tests.helpers.harbor import corpus, public_addresses
from tests.helpers.ray import ENV, blind_cluster

pytestmark = pytest.mark.slow

# One single-step recipe, the multi-step one (step uploads, shared and per-step tests,
# per-step artifacts: files in subdirectories of the trial directory) and one with a side
# container built from its compose file (started on the trial's node).
RECIPES = ["simple-task", "multi-step", "multi-container"]
ERA = {"UV_EXCLUDE_NEWER": "2026-03-27T00:00:00Z"}  # as tests/harbor/test_cookbook.py


@pytest.fixture(scope="module")
def blind_node(tmp_path_factory):
    require_engine()
    recipes = corpus("harbor-cookbook") / "recipes"
    spec_dir = tmp_path_factory.mktemp("harbor-specs")
    for name in RECIPES:
        shutil.copytree(recipes / name, spec_dir / "cookbook" / name)
    with blind_cluster(spec_dir, head_cpus=0) as c:
        yield c


def _containers_of(run_id: str) -> list[str]:
    """Containers carrying the run's label (a node labels its own with `<run_id>-...`)."""
    out = subprocess.run(["docker", "ps", "-a", "--filter", "label=proctor.run",
                          "--format", '{{.ID}} {{.Label "proctor.run"}}'],
                         capture_output=True, text=True, timeout=60, check=True).stdout
    return [line for line in out.splitlines() if line.split(" ", 1)[1].startswith(run_id)]


# The oracle only: the do-nothing agent's verdicts on a blind node are tested with a node
# of its own engine (test_own_engine.py, which also covers these files coming home).
@pytest.mark.parametrize(("agent", "verdict", "reward"), [("oracle", "pass", "1")])
def test_cookbook_recipes_give_their_local_verdicts_on_a_node_that_cannot_see_them(
        blind_node, tmp_path, agent, verdict, reward):
    (tmp_path / "proctor.toml").write_text('pass_env = ["UV_EXCLUDE_NEWER"]\n'
                                           'timeout_multiplier = 3\n'
                                           f'public_addresses = {public_addresses()!r}\n')
    proc = Cli(tmp_path, env={**ENV, **ERA})(
        "run", str(blind_node.spec_dir / "cookbook"), "--agent", agent, "--backend", "docker",
        "--executor", "ray", "--ray-address", blind_node.address, "-q", "--output-dir", "run",
        timeout=1500)
    assert "Traceback" not in proc.stderr, proc.stderr
    run = tmp_path / "run"
    trials = {t["id"]: t for t in json.loads((run / "results.json").read_text())["trials"]}
    assert {t["task_id"] for t in trials.values()} == set(RECIPES), proc.stdout + proc.stderr
    assert {t["status"] for t in trials.values()} == {verdict}, trials
    assert proc.returncode == (0 if verdict == "pass" else 1), proc.stdout + proc.stderr
    # The head has no CPUs: every trial ran on the node without the dataset.
    assert len({t["node"] for t in trials.values()}) == 1 and None not in \
        {t["node"] for t in trials.values()}
    # The verifier's files (a directory of the trial's) came home from the node.
    kept = run / "trials" / "simple-task.r0" / "verifier" / "reward.txt"
    assert kept.read_text().strip() == reward
    if agent == "oracle":  # and the multi-step task's artifact, as a local run keeps it
        assert (run / "trials" / "multi-step.r0" / "artifacts" / "app" / "greet.sh").is_file()
    run_id = json.loads((run / "run.json").read_text())["run_id"]
    # Killed at each trial's close, removed by the engine (--rm) a moment later.
    assert _wait_for(lambda: not _containers_of(run_id), 60), _containers_of(run_id)


def _label_of(node, timeout: float = 120) -> str:
    """The run label of the node's actor, once it has started."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if label := node.label():
            return label
        time.sleep(0.5)
    raise AssertionError("no actor started on the node")


def _wait_for(what, timeout: float):
    deadline = time.monotonic() + timeout
    while not (found := what()) and time.monotonic() < deadline:
        time.sleep(0.5)
    return found


def test_a_node_killed_mid_trial_leaves_no_container_and_its_trials_run_elsewhere(
        blind_node, tmp_path):
    """The node's reaper removes the containers of its trials (labelled with its run label)
    when its actor dies; the lost trials run again on the other node."""
    (tmp_path / "proctor.toml").write_text('pass_env = ["UV_EXCLUDE_NEWER"]\n'
                                           'timeout_multiplier = 3\n'
                                           f'public_addresses = {public_addresses()!r}\n')
    doomed = blind_node.add_node(cpus=2, hide=blind_node.spec_dir)
    run = Cli(tmp_path, env={**ENV, **ERA}).popen(
        "run", str(blind_node.spec_dir / "cookbook" / "simple-task"), "--agent", "oracle",
        "--backend", "docker", "--executor", "ray", "--ray-address", blind_node.address,
        "--repeat", "4", "--concurrency", "4", "-q", "--output-dir", "run")
    try:
        label = _label_of(doomed)
        assert _wait_for(lambda: _containers_of(label), 300), "no container on the doomed node"
        doomed.kill()
        out, err = run.communicate(timeout=900)
    finally:
        run.kill()
    assert run.returncode == 0, out + err
    trials = json.loads((tmp_path / "run" / "results.json").read_text())["trials"]
    assert len(trials) == 4 and {t["status"] for t in trials} == {"pass"}, trials
    run_id = json.loads((tmp_path / "run" / "run.json").read_text())["run_id"]
    assert _wait_for(lambda: not _containers_of(run_id), 60), _containers_of(run_id)
