"""`--executor ray --backend docker` where the worker node has a Docker engine of its own
(tests/helpers/dockerd.py: a second dockerd, no bridge, its own data root) and cannot see the
dataset: every image a trial runs (five Harbor cookbook recipes' images, the image map's
stand-in under them, proctor's base image and a scenario's `image:` service) is built on
the head and shipped to the node's engine once, never built or pulled there; the verdicts
are the local ones; nothing is left in either engine, also after the node is SIGKILLed
mid-trial, and `--resume` runs exactly the trials lost with it."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from tests.docker.engine import require_engine
from tests.helpers.cli import Cli
from tests.helpers.docker import web_scenario
from tests.helpers.dockerd import second_engine
from tests.helpers.harbor import corpus, public_addresses
from tests.helpers.ray import ENV, _wait_nodes, start_cluster

pytestmark = pytest.mark.slow

RECIPES = ["simple-task", "multi-step", "multi-container", "multi-reward", "dns-blacklisting"]
ERA = {"UV_EXCLUDE_NEWER": "2026-03-27T00:00:00Z"}  # as tests/harbor/test_cookbook.py
WEB = "proctor-test-web:1"  # as tests/docker/conftest.py's, built on the head
SCENARIO = web_scenario(WEB, replicas=2)


def _web_image() -> None:
    from proctor.sandbox.docker.images import ensure_base

    dockerfile = (f"FROM {ensure_base()}\nRUN mkdir -p /srv && echo hello-from-web > /srv/index.html\n"
                  "WORKDIR /srv\nEXPOSE 8000\n"
                  'CMD ["sh", "-c", "echo \\"greeting=$GREETING\\" > /srv/env.txt; '
                  'exec python3 -m http.server 8000"]\n')
    subprocess.run(["docker", "build", "-q", "--force-rm", "-t", WEB, "-"], input=dockerfile,
                   text=True, capture_output=True, check=True, timeout=600)


@pytest.fixture(scope="module")
def engine():
    require_engine()
    with second_engine() as e:
        yield e


@pytest.fixture(scope="module")
def own(engine, tmp_path_factory):
    """(cluster, engine): a head without CPUs (the first engine) and a worker node blind to
    the specs whose DOCKER_HOST is the second engine."""
    recipes = corpus("harbor-cookbook") / "recipes"
    spec_dir = tmp_path_factory.mktemp("own-engine-specs")
    for name in RECIPES:
        shutil.copytree(recipes / name, spec_dir / "cookbook" / name)
    (spec_dir / "web").mkdir()
    (spec_dir / "web" / "web.yaml").write_text(SCENARIO)
    _web_image()
    c = start_cluster(head_cpus=0, spec_dir=spec_dir)
    try:
        c.hidden = c.add_node(cpus=2, hide=spec_dir, env={"DOCKER_HOST": engine.host})
        _wait_nodes(c, 2)
        yield c
    finally:
        c.stop()


def _toml(where: Path, extra: str = "") -> None:
    (where / "proctor.toml").write_text('pass_env = ["UV_EXCLUDE_NEWER"]\ntimeout_multiplier = 3\n'
                                        f'public_addresses = {public_addresses()!r}\n{extra}')


def _image_events(engine, since: int) -> list[tuple[str, str]]:
    """(action, image id) of every image event of the engine since `since` (epoch s)."""
    out = engine.docker("events", "--since", str(since), "--until", str(int(time.time()) + 1),
                        "--filter", "type=image", "--format", "{{.Action}} {{.Actor.ID}}").stdout
    return [tuple(line.split(" ", 1)) for line in out.splitlines()]  # type: ignore[misc]


def _trials(run: Path) -> dict[str, dict]:
    return {t["id"]: t for t in json.loads((run / "results.json").read_text())["trials"]}


def _head_containers(run_id: str) -> list[str]:
    out = subprocess.run(["docker", "ps", "-a", "--filter", "label=proctor.run",
                          "--format", '{{.ID}} {{.Label "proctor.run"}}'],
                         capture_output=True, text=True, timeout=60, check=True).stdout
    return [ln for ln in out.splitlines() if ln.split(" ", 1)[1].startswith(run_id)]


def test_a_dataset_on_a_node_with_its_own_engine_gives_the_local_verdicts(own, engine, tmp_path):
    _toml(tmp_path)
    since = int(time.time())
    proc = Cli(tmp_path, env={**ENV, **ERA})(
        "run", str(own.spec_dir / "cookbook"), str(own.spec_dir / "web"), "--agent", "oracle",
        "--agent", "nop", "--backend", "docker", "--executor", "ray", "--ray-address",
        own.address, "--output-dir", "run", timeout=1800)
    assert "Traceback" not in proc.stderr, proc.stderr
    trials = _trials(tmp_path / "run")
    assert len(trials) == 2 * (len(RECIPES) + 2)
    # The local verdicts (tests/harbor/test_cookbook.py, tests/docker/test_parity.py).
    verdicts = {(t["task_id"], t["agent"]): t["status"] for t in trials.values()}
    assert verdicts == {**{(task, "oracle"): "pass" for task in [*RECIPES, "web"]},
                        **{(task, "nop"): "fail" for task in [*RECIPES, "web"]}}, trials
    assert proc.returncode == 1, proc.stdout + proc.stderr
    # Every trial ran on the node with its own engine (the head has no CPUs).
    assert len({t["node"] for t in trials.values()}) == 1 and None not in \
        {t["node"] for t in trials.values()}
    # What the verifier and the steps keep in directories of the trial's came home.
    for t in trials.values():
        home = tmp_path / "run" / "trials" / t["id"]
        if t["task_id"] == "simple-task":
            reward = "1" if t["agent"] == "oracle" else "0"
            assert (home / "verifier" / "reward.txt").read_text().strip() == reward
        if t["task_id"] == "multi-step" and t["agent"] == "oracle":
            assert (home / "artifacts" / "app" / "greet.sh").is_file()
    # Every image the trials ran got into the node's engine by `docker load` only, once
    # each, whatever the number of its trials: nothing was built or pulled there.
    assert {WEB} <= engine.images()
    events = _image_events(engine, since)
    assert {action for action, _ in events} == {"load"}, events
    loaded = [image for _, image in events]
    assert len(loaded) == len(set(loaded)), loaded
    shipped = [ln for ln in proc.stderr.splitlines() if " shipped to Ray node " in ln]
    assert len(shipped) == len({ln.split()[2] for ln in shipped}) >= len(RECIPES) + 2, shipped
    run_id = json.loads((tmp_path / "run" / "run.json").read_text())["run_id"]
    # Every trial's container: killed at its close, removed by its engine (--rm) just after.
    assert _wait_for(lambda: not engine.containers(run_id), 60), engine.containers(run_id)
    assert _head_containers(run_id) == []


def test_a_node_killed_mid_trial_leaves_no_container_and_resume_runs_exactly_its_trials(
        own, engine, tmp_path):
    _toml(tmp_path, "[ray]\nmax_retries = 0\n")
    doomed = own.add_node(cpus=2, hide=own.spec_dir, env={"DOCKER_HOST": engine.host})
    try:
        _wait_nodes(own, 3)
        run = Cli(tmp_path, env={**ENV, **ERA}).popen(
            "run", str(own.spec_dir / "cookbook" / "simple-task"), "--agent", "oracle",
            "--backend", "docker", "--executor", "ray", "--ray-address", own.address,
            "--repeat", "4", "--concurrency", "4", "-q", "--output-dir", "run")
        try:
            label = _wait_for(doomed.label, 300)
            assert label, "no actor started on the doomed node"
            assert _wait_for(lambda: engine.containers(label), 300), "no container of it"
            doomed.kill()
            out, err = run.communicate(timeout=900)
        finally:
            run.kill()
    finally:
        doomed.kill()
    trials = _trials(tmp_path / "run")
    lost = {i for i, t in trials.items() if t["status"] == "error"}
    assert lost, out + err
    assert all(trials[i]["error"].startswith("infrastructure error: ") for i in lost), trials
    assert {t["status"] for i, t in trials.items() if i not in lost} == {"pass"}, trials
    run_id = json.loads((tmp_path / "run" / "run.json").read_text())["run_id"]
    # The doomed node's reaper removed its containers from its engine; none on the head's.
    assert _wait_for(lambda: not engine.containers(run_id), 60), engine.containers(run_id)
    assert _head_containers(run_id) == []
    before = _lines(tmp_path / "run")
    again = Cli(tmp_path, env={**ENV, **ERA})("run", "--resume", "run", "-q", "--ray-address",
                                              own.address, timeout=900)
    assert again.returncode == 0, again.stdout + again.stderr
    after = _lines(tmp_path / "run")
    # Exactly the lost trials ran again; what had finished is kept as it was.
    assert {i for i in before if after[i] != before[i]} == lost
    assert {t["status"] for t in _trials(tmp_path / "run").values()} == {"pass"}
    # The resumed trials' containers: killed at their close, removed by their engine (--rm).
    assert _wait_for(lambda: not engine.containers(run_id), 60), engine.containers(run_id)
    assert _head_containers(run_id) == []


def _lines(run: Path) -> dict[str, str]:
    """results.jsonl's line of each trial."""
    lines = (run / "results.jsonl").read_text().splitlines()
    return {json.loads(line)["id"]: line for line in lines}


def _wait_for(what, timeout: float):
    deadline = time.monotonic() + timeout
    while not (found := what()) and time.monotonic() < deadline:
        time.sleep(0.5)
    return found
