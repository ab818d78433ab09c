"""`--executor ray`: the same spec, trials shipped to a (local) Ray cluster."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import tempfile
from pathlib import Path

import pytest

import ray  # noqa: F401 - in the dev extra: without Ray these tests fail, never skip
from tests.helpers.cli import Cli, results

SUITE = """
cli: sh
tasks:
  - id: writes
    intent: x
    solution: ["echo a > f"]
    assert: [{file_contains: {path: f, text: a}}]
  - id: fails
    intent: x
    solution: ["echo b > f"]
    assert: [{file_contains: {path: f, text: nope}}]
"""

SLOWPOKE = """
version: 1
id: slowpoke
task: {prompt: x}
agent: {type: oracle}
resources: {timeout: 1, cpu: 0.5, memory: 256m}
invariants:
  done:
    description: never reached
    check: {type: file_content, path: f, contains: x}
solution: ['sleep 5']
"""

HUGE = SLOWPOKE.replace("id: slowpoke", "id: huge").replace(
    "resources: {timeout: 1, cpu: 0.5, memory: 256m}", "resources: {cpu: 64}")

BIG = """
cli: sh
tasks:
  - id: big
    intent: x
    solution: ["head -c 3000000 /dev/zero | tr '\\\\0' a"]
    assert: [{exit_code: 0}]
"""

SCENARIO = """
version: 1
id: with-mock
task: {prompt: x}
agent: {type: oracle}
services:
  - name: api
    type: http_mock
    record: true
    routes: [{method: POST, path: /hook, status: 201}]
invariants:
  called:
    description: the hook was called once
    check:
      type: http_mock_assertions
      service: api
      assertions: [{field: request_count, filters: {method: POST}, equals: 1}]
solution: ['curl -sf -X POST "$API_URL/hook"']
"""


@pytest.mark.slow
def test_trials_run_on_ray_and_their_traces_come_home(cli, spec, tmp_path):
    spec(SUITE)
    spec(SCENARIO, name="scenario.yaml")
    spec(BIG, name="big.yaml")
    spec(SLOWPOKE, name="slowpoke.yaml")
    spec(HUGE, name="huge.yaml")
    p = cli.popen("run", ".", "--agent", "oracle", "--executor", "ray", "-q", "--output-dir",
                  "run", "--keep", "--output-limit", "4000000", env={"RAY_ADDRESS": ""})
    try:
        stdout, stderr = p.communicate(timeout=180)
    finally:
        p.kill()
    out = subprocess.CompletedProcess(p.args, p.returncode, stdout, stderr)
    assert out.returncode == 1, out.stdout + out.stderr
    r = results(tmp_path / "run")
    status = {t["task_id"]: t["status"] for t in r["trials"]}
    assert status == {"writes": "pass", "fails": "fail", "with-mock": "pass", "big": "pass",
                      "slowpoke": "error", "huge": "error"}
    huge = next(t for t in r["trials"] if t["task_id"] == "huge")
    assert huge["error"].startswith("infrastructure error: no Ray node can hold this trial "
                                    "(resources: 64 CPU"), huge
    # The trial's own error is a verdict: not an infrastructure error, not run again.
    slow = next(t for t in r["trials"] if t["task_id"] == "slowpoke")
    assert slow["error"].startswith("the trial took longer than resources.timeout")
    assert all(t["node"] for t in r["trials"] if t is not huge)  # hostname/node id
    assert huge["node"] is None  # it never got one
    assert out.stderr == ""  # -q: not a word from Ray
    trace = (tmp_path / "run" / "trials" / "writes.r0" / "trace.jsonl").read_text().splitlines()
    assert json.loads(trace[0])["argv"] == ["sh", "-c", "echo a > f"]
    audit = (tmp_path / "run" / "trials" / "with-mock.r0" / "audit.jsonl").read_text()
    assert '"http_call"' in audit
    # A trace bigger than a chunk comes home whole, in chunks.
    big = (tmp_path / "run" / "trials" / "big.r0" / "trace.jsonl").read_text()
    assert big.count("a" * 1000) >= 2900
    # --keep: the workdirs come home too.
    kept = [p for p in (tmp_path / "run" / "workdirs" / "writes.r0").rglob("f") if p.is_file()]
    assert kept and kept[0].read_text() == "a\n"
    # The local Ray instance started for the run is gone with it (its processes carry the
    # pid of their proctor; other Ray instances on this machine are not ours to count).
    assert _marked(p.pid) == []
    lines = (tmp_path / "run" / "results.jsonl").read_text().count("\n")
    again = cli("run", "--resume", "run", "-q", env={"RAY_ADDRESS": ""}, timeout=180)
    assert again.returncode == 1, again.stdout + again.stderr
    # Only the infrastructure error ran again (and failed the same way); its new line
    # replaced the old one: still one line per trial.
    ids = [json.loads(line)["id"] for line in
           (tmp_path / "run" / "results.jsonl").read_text().splitlines()]
    assert len(ids) == lines == len(set(ids)), ids
    assert os.environ.get("RAY_ADDRESS") in (None, "")


def _silent_server():
    """A TCP port that accepts and never answers: a cluster address that hangs."""
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(16)
    return s


@pytest.mark.slow
def test_a_cluster_that_does_not_answer_is_an_exit_2_error_within_the_timeout(cli, spec, tmp_path):
    import time

    spec(SUITE)
    (tmp_path / "proctor.toml").write_text("[ray]\nconnect_timeout_s = 2\n")
    with _silent_server() as s:
        t0 = time.monotonic()
        out = cli("run", ".", "--agent", "oracle", "--executor", "ray", "--ray-address",
                  f"127.0.0.1:{s.getsockname()[1]}", "--output-dir", "run", timeout=60)
    assert out.returncode == 2, out.stdout + out.stderr
    assert "could not connect to the Ray cluster at 127.0.0.1:" in out.stderr
    assert "within 2s" in out.stderr and "Traceback" not in out.stderr
    assert time.monotonic() - t0 < 20
    assert not (tmp_path / "run").exists()  # nothing ran, no run directory


@pytest.mark.slow
def test_nothing_listening_is_an_exit_2_error(cli, spec, tmp_path):
    import socket

    spec(SUITE)
    with socket.socket() as s:  # a port that was free a moment ago
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    (tmp_path / "proctor.toml").write_text(f'[ray]\naddress = "127.0.0.1:{port}"\n'
                                           "connect_timeout_s = 1\n")
    out = cli("run", ".", "--agent", "oracle", "--executor", "ray", timeout=60)
    assert out.returncode == 2, out.stdout + out.stderr
    assert f"127.0.0.1:{port} within 1s" in out.stderr


@pytest.mark.slow
@pytest.mark.parametrize("sig", ["SIGTERM", "SIGINT"])
def test_a_signal_while_connecting_ends_the_run_as_an_interruption(cli, spec, tmp_path, sig):
    import signal

    spec(SUITE)
    with _silent_server() as s:
        p = cli.popen("run", ".", "--agent", "oracle", "--executor", "ray", "--ray-address",
                      f"127.0.0.1:{s.getsockname()[1]}", "--output-dir", "run")
        s.settimeout(120)
        conn, _ = s.accept()  # proctor is connecting (past its imports: its handlers are set)
        p.send_signal(getattr(signal, sig))
        try:
            out, err = p.communicate(timeout=15)
        finally:
            p.kill()
            conn.close()
    assert p.returncode == 130, out + err
    assert err.strip() == "proctor: interrupted", err
    assert not (tmp_path / "run").exists()


@pytest.mark.slow
def test_an_address_where_something_else_answers_is_one_clear_line(cli, spec, tmp_path):
    """An HTTP server is not a Ray cluster: Ray's client retries it, and its C++ logging
    of each attempt stays off the terminal."""
    import http.server
    import threading

    spec(SUITE)
    (tmp_path / "proctor.toml").write_text("[ray]\nconnect_timeout_s = 8\n")
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.BaseHTTPRequestHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        out = cli("run", ".", "--agent", "oracle", "--executor", "ray", "--ray-address",
                  f"127.0.0.1:{server.server_address[1]}", "--output-dir", "run", timeout=60)
    finally:
        server.shutdown()
    assert out.returncode == 2, out.stdout + out.stderr
    assert out.stderr.splitlines() == [
        f"proctor: could not connect to the Ray cluster at 127.0.0.1:{server.server_address[1]} "
        "within 8s ([ray] connect_timeout_s); is it running?"], out.stderr
    assert not (tmp_path / "run").exists()


def test_cluster_messages_are_one_line_each_and_none_under_quiet(capsys, monkeypatch):
    from ray._private import worker

    from proctor.executors.ray_connect import _route_cluster_messages

    monkeypatch.setattr(worker, "print_to_stdstream", worker.print_to_stdstream)  # undone after
    dead = {"pid": "raylet", "lines": [
        "The node with node id: 5254f3 has been marked dead. This can happen when a \t(1) "
        "raylet crashes unexpectedly (OOM, etc.) \n\t(2) raylet has lagging heartbeats"]}
    _route_cluster_messages(quiet=False)
    worker.print_to_stdstream(dead)
    out = capsys.readouterr()
    assert out.out == "" and out.err == (
        "proctor: ray: The node with node id: 5254f3 has been marked dead. This can happen "
        "when a (1) raylet crashes unexpectedly (OOM, etc.)\n")
    _route_cluster_messages(quiet=True)
    worker.print_to_stdstream(dead)
    assert capsys.readouterr() == ("", "")


def test_the_ray_table_is_validated(cli, spec, tmp_path):
    spec(SUITE)
    (tmp_path / "proctor.toml").write_text('[ray]\nadress = "x"\nmax_retries = -1\n')
    out = cli("run", ".", "--agent", "oracle", "--executor", "ray")
    assert out.returncode == 2
    assert "proctor.toml:2:1: ray.adress: unknown key 'adress'" in out.stderr
    assert "proctor.toml:3:1: ray.max_retries: " in out.stderr


def test_spec_files_are_packed_by_content_and_relocated(tmp_path):
    from proctor.executors.ray_files import materialize, pack, relocate
    from proctor.spec.load import load_specs

    (tmp_path / "scaf").mkdir()
    (tmp_path / "scaf" / "fixture").write_text("x")
    (tmp_path / "checks").mkdir()
    (tmp_path / "checks" / "ok.sh").write_text("#!/bin/sh\necho '{\"passed\": true}'\n")
    (tmp_path / "s.yaml").write_text(SUITE.replace("cli: sh", "cli: sh\nscaffold: scaf"))
    tasks = load_specs([str(tmp_path / "s.yaml")]).tasks
    first, again = pack(tasks), pack(tasks)
    assert first.digest == again.digest and first.data == again.data
    root = materialize(first.digest, first.data)
    moved = relocate(tasks[0], root)
    assert moved.scaffold == str(root / str(tmp_path / "scaf").lstrip("/"))
    assert (root / str(tmp_path / "scaf" / "fixture").lstrip("/")).read_text() == "x"
    assert moved.base_dir.startswith(str(root))
    (tmp_path / "scaf" / "fixture").write_text("changed")
    assert pack(tasks).digest != first.digest


def test_a_harbor_tasks_files_are_packed_and_relocated(tmp_path):
    """Every spec-side path a Harbor trial reads on a node (the verifier's tests, shared and
    per step; the solutions; a step's workdir upload; the image's context) points into the
    node's copy, where the files are."""
    from proctor.executors.ray_files import materialize, pack, relocate
    from proctor.spec.load import load_specs
    from tests.helpers.harbor import corpus

    recipes = corpus("harbor-cookbook") / "recipes"
    tasks = load_specs([str(recipes / "multi-step"), str(recipes / "simple-task")]).tasks
    bundle = pack(tasks)
    root = materialize(bundle.digest, bundle.data)
    for task in tasks:
        moved = relocate(task, root)
        parts = [moved, *moved.steps]
        paths = [moved.dockerfile, moved.base_dir,
                 *(d for p in parts for d in [p.solution_dir, *(u for u, _ in p.uploads)] if d),
                 *(t for p in parts for c in p.checks for t in c.config.tests)]
        assert len(paths) >= (10 if task.steps else 4), paths
        for path in paths:
            assert path.startswith(f"{root}/") and Path(path).exists(), path
        assert any(s.uploads for s in moved.steps) == bool(task.steps)


def test_the_mock_scripts_of_agents_and_judges_travel(tmp_path):
    """A judge's scripted model is read on the node like the agent's: both are shipped (and
    fingerprinted for --resume: the same set)."""
    import io
    import shutil
    import tarfile

    from proctor.executors.ray_files import pack
    from proctor.inputs import referenced
    from proctor.spec.load import load_specs
    from tests.helpers import REPO

    shutil.copytree(REPO / "examples" / "mock-llm-demo", tmp_path / "demo")
    tasks = load_specs([str(tmp_path / "demo" / "scenario.yaml")]).tasks
    models = tmp_path.resolve() / "demo" / "models"
    assert {models / "judge.json", models / "release-notes.json"} <= referenced(tasks)
    with tarfile.open(fileobj=io.BytesIO(pack(tasks).data)) as tar:
        names = set(tar.getnames())
    assert str(models / "judge.json").lstrip("/") in names


def test_a_mock_script_from_the_current_directory_is_found_on_a_node(tmp_path, monkeypatch):
    """`--model mock/PATH` is looked up next to the spec, else in the current directory;
    a node's current directory is Ray's, so the script is shipped next to the spec."""
    from proctor.executors.ray_files import materialize, pack, relocate
    from proctor.inputs import referenced
    from proctor.providers.mock import resolve_script_path
    from proctor.spec.load import load_specs

    (tmp_path / "specs").mkdir()
    (tmp_path / "specs" / "s.yaml").write_text(SUITE)
    (tmp_path / "here" / "scripts").mkdir(parents=True)
    (tmp_path / "here" / "scripts" / "m.yaml").write_text("responses: []\n")
    monkeypatch.chdir(tmp_path / "here")
    tasks = load_specs([str(tmp_path / "specs" / "s.yaml")]).tasks
    model = ["mock/scripts/m.yaml"]
    assert Path("scripts/m.yaml") in referenced(tasks, model)  # --resume fingerprints it
    bundle = pack(tasks, model)
    monkeypatch.chdir(tmp_path)  # elsewhere, as a Ray worker
    moved = relocate(tasks[0], materialize(bundle.digest, bundle.data))
    found = resolve_script_path("scripts/m.yaml", moved.base_dir)
    assert found is not None and found.read_text() == "responses: []\n"
    assert str(found).startswith(str(Path(moved.base_dir)))


def test_the_next_run_on_a_node_sweeps_labels_whose_actor_is_gone(tmp_path):
    import fcntl
    import tempfile
    import uuid
    from pathlib import Path

    from proctor.executors.ray_node import sweep_stale_labels

    tmp = Path(tempfile.gettempdir())
    dead, live = f"t{uuid.uuid4().hex[:8]}-1", f"t{uuid.uuid4().hex[:8]}-2"
    for label in (dead, live):
        home = tmp / f"proctor-{label}-node-x"
        (home / "sandboxes").mkdir(parents=True)
        (home / "lock").touch()
    db = Path("/dev/shm") / f"proctor-{dead}-postgres-x"
    db.mkdir()
    agent = subprocess.Popen(["sleep", "60"], env={**os.environ, "PROCTOR_RUN_ID": dead})
    held = (tmp / f"proctor-{live}-node-x" / "lock").open("a")
    fcntl.flock(held, fcntl.LOCK_EX)  # a live actor holds its lock
    try:
        assert dead in sweep_stale_labels()
        assert agent.wait(timeout=5) == -9
        assert not (tmp / f"proctor-{dead}-node-x").exists() and not db.exists()
        assert (tmp / f"proctor-{live}-node-x").exists()
    finally:
        agent.kill()
        held.close()
        import shutil

        for label in (dead, live):
            shutil.rmtree(tmp / f"proctor-{label}-node-x", ignore_errors=True)
        shutil.rmtree(db, ignore_errors=True)


@pytest.mark.slow
def test_ctrl_c_on_a_terminal_stops_a_private_instance_run_cleanly(cli, spec, tmp_path):
    """A terminal's Ctrl-C signals the whole process group: the private Ray instance must
    outlive it long enough for the node to clean up (it once crashed proctor: SIGSEGV)."""
    import signal
    import time


    spec("""
        cli: sh
        tasks:
          - id: nap
            intent: x
            repeat: 2
            solution: ["sleep 60"]
            assert: [{exit_code: 0}]
    """)
    p = Cli(tmp_path).popen("run", ".", "--agent", "oracle", "--executor", "ray", "-q",
                            "--output-dir", "run", env={"RAY_ADDRESS": ""},
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 90
        while not list((tmp_path / "run" / "trials").glob("*")) and time.monotonic() < deadline:
            run_id = json.loads((tmp_path / "run" / "run.json").read_text())["run_id"] \
                if (tmp_path / "run" / "run.json").exists() else None
            if run_id and any(Path(tempfile.gettempdir()).glob(f"proctor-{run_id}-*-node-*/sandboxes/*")):
                break
            time.sleep(0.2)
        os.killpg(p.pid, signal.SIGINT)
        out, err = p.communicate(timeout=120)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(p.pid, signal.SIGKILL)
    assert p.returncode == 130, out + err
    assert run_id
    assert not list(Path(tempfile.gettempdir()).glob(f"proctor-{run_id}-*"))
    group = subprocess.run(["ps", "-eo", "pgid=,stat="], capture_output=True, text=True).stdout
    assert not [line for line in group.splitlines()
                if line.split()[0] == str(p.pid) and not line.split()[1].startswith("Z")]


def _marked(owner: int) -> list[int]:
    from proctor.executors.ray_connect import PRIVATE_MARK
    from proctor.proc import environments

    mark = f"{PRIVATE_MARK}={owner}".encode()
    return [pid for pid, env in environments() if mark in env]


@pytest.mark.slow
def test_what_a_killed_proctor_leaves_of_its_private_instance_goes_at_the_next_run(cli, spec, tmp_path):
    import time


    spec(SUITE.replace('"echo a > f"', '"sleep 60"'))
    p = Cli(tmp_path).popen("run", ".", "--agent", "oracle", "--executor", "ray", "-q",
                            "--task", "writes", "--output-dir", "run", env={"RAY_ADDRESS": ""},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and not any(
                Path(tempfile.gettempdir()).glob("proctor-*-node-*/sandboxes/writes.r0")):
            time.sleep(0.2)
    finally:
        p.kill()  # SIGKILL: no clean-up at all from proctor
        p.wait()
    out = cli("run", ".", "--agent", "oracle", "--executor", "ray", "--task", "fails",
              env={"RAY_ADDRESS": ""}, timeout=180)
    assert out.returncode == 1, out.stdout + out.stderr
    assert _marked(p.pid) == []
    # No address anywhere: a private instance, and proctor says so.
    assert out.stderr.startswith("proctor: no Ray address given (--ray-address, [ray] "
                                 "address, $RAY_ADDRESS): starting a private local Ray "
                                 "instance for this run\n"), out.stderr
    from proctor.janitor import sweep

    sweep(json.loads((tmp_path / "run" / "run.json").read_text())["run_id"])  # what --resume does
