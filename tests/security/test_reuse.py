"""A box serves one trial after another (sandbox/pool.py): nothing a trial leaves in it
reaches the next. Each hostile trial is followed, in the same box, by a probe that must find
it clean; the probe is the honest twin (it passes), and the test checks the two really
shared a box (the same network namespace), or it would prove nothing."""

from __future__ import annotations

import json
import os
from pathlib import Path

from tests.security.conftest import trial

# What a trial can try to leave behind, all at once.
PLANT = [
    "readlink /proc/self/ns/net",
    "for d in $PROCTOR_WORKDIR $HOME /tmp /dev/shm; do echo planted > $d/leak; done",
    "mkdir -p /tmp/locked/deep && echo x > /tmp/locked/deep/f && chmod 000 /tmp/locked/deep /tmp/locked",
    "ipcmk -M 4096 && ipcmk -Q && ipcmk -S 2",
    "python3 -c \"import ctypes, os; rt = ctypes.CDLL('librt.so.1'); "
    "print('mq', rt.mq_open(b'/leak', os.O_CREAT | os.O_RDWR, 0o600, None))\"",
    "python3 -c \"import ctypes, platform; n = 248 if platform.machine() == 'x86_64' else 217; "
    "print('keyring', ctypes.CDLL(None).syscall(n, b'user', b'leak', b'v', 1, -2))\"",
    "(setsid sh -c 'sleep 1; echo late > /tmp/late; sleep 600' > /dev/null 2>&1 &)",
    "nohup sleep 600 > /dev/null 2>&1 &",
]

PROBE = [
    "readlink /proc/self/ns/net",
    "sleep 1.5",  # long enough for a surviving daemon to write /tmp/late
    "{ ls -A $PROCTOR_WORKDIR $HOME /tmp /dev/shm; ipcs -m -q -s | grep '^0x';"
    " python3 -c \"import ctypes, os; rt = ctypes.CDLL('librt.so.1'); "
    "print('mq leak') if rt.mq_open(b'/leak', os.O_RDWR, 0, None) >= 0 else None\";"
    " ps -eo comm | grep -x sleep; } > .found 2>&1; true",
    # Directory headers, blank lines, the probe's own file and a fixed workdir's mount point
    # are not findings.
    "grep -v -x -e '/.*:' -e '' -e '.found' -e project .found > found.txt || true",
    "test -s found.txt || echo nothing > found.txt",
    "cat .found",
]


def _spec(plant: list[str], suite: str = "") -> str:
    steps = "\n".join(f"              - {json.dumps(c)}" for c in plant)
    probe = "\n".join(f"              - {json.dumps(c)}" for c in PROBE)
    return f"""
        cli: sh
        {suite}
        tasks:
          - id: a-plant
            intent: leave things behind
            solution:
{steps}
            assert: [{{exit_code: 0}}]
          - id: b-probe
            intent: find nothing
            solution:
{probe}
            assert: [{{verify: {{run: "test \\"$(cat found.txt)\\" = nothing"}}}}]
        """


def _netns(run_dir: Path, trial_id: str) -> str:
    for line in (run_dir / "trials" / trial_id / "trace.jsonl").read_text().splitlines():
        event = json.loads(line)
        if event.get("type") == "command" and event["command"].startswith("readlink"):
            return event["stdout"].strip()
    raise AssertionError(f"{trial_id} printed no namespace")


def _outputs(run_dir: Path, trial_id: str) -> str:
    lines = (run_dir / "trials" / trial_id / "trace.jsonl").read_text().splitlines()
    return "\n".join(f"$ {e['command']}\n{e['stdout']}{e['stderr']}" for e in map(json.loads, lines)
                     if e.get("type") == "command")


def test_the_next_trial_in_a_box_finds_nothing_of_the_last(run_spec, tmp_path):
    r = run_spec(_spec(PLANT), "--concurrency", "1")
    run_dir = tmp_path / "run0"
    plant, probe = trial(r, "a-plant"), trial(r, "b-probe")
    outputs = _outputs(run_dir, plant["id"])
    assert plant["status"] == "pass", outputs  # every plant worked ...
    assert "keyring -1" in outputs  # ... but a key: refused outright
    assert _netns(run_dir, plant["id"]) == _netns(run_dir, probe["id"])  # one box, reused
    assert probe["status"] == "pass", _outputs(run_dir, probe["id"])


def test_a_workdir_inside_tmp_gets_a_new_box_for_each_trial(run_spec, tmp_path):
    # A fixed workdir under /tmp is mounted on a directory of /tmp's place, which a wipe
    # would remove: such boxes serve one trial, and the probe still finds nothing.
    r = run_spec(_spec(PLANT, suite="workdir: /tmp/project"), "--concurrency", "1")
    run_dir = tmp_path / "run0"
    plant, probe = trial(r, "a-plant"), trial(r, "b-probe")
    assert plant["status"] == "pass", _outputs(run_dir, plant["id"])
    assert _netns(run_dir, plant["id"]) != _netns(run_dir, probe["id"])
    assert probe["status"] == "pass", _outputs(run_dir, probe["id"])


def test_an_agent_cannot_take_over_the_process_starter(run_spec):
    # As root the agent runs as another uid than the box's spawner (PID 2 inside): it can
    # neither stop nor kill it, nor read its descriptors or environment. Without root they
    # share a uid: stopping or killing it then costs the agent its own trial (a timeout, or
    # an error), and the box is not reused. Either way the next trial runs as usual.
    r = run_spec("""
        cli: sh
        tasks:
          - id: a-attack
            intent: take over the box
            timeout: 5
            solution:
              - "kill -STOP 2; echo stop=$? > out.txt"
              - "kill -KILL 2; echo kill=$? >> out.txt"
              - "ls /proc/2/fd > /dev/null 2>&1; echo fd=$? >> out.txt"
              - "cat /proc/2/environ > /dev/null 2>&1; echo environ=$? >> out.txt"
            assert: [{verify: {run: "test \\"$(cat out.txt | tr '\\n' ' ')\\" = 'stop=1 kill=1 fd=2 environ=1 '"}}]
          - id: b-next
            intent: work
            solution: ["echo ok > ok.txt"]
            assert: [{file_contains: {path: ok.txt, text: ok}}]
        """, "--concurrency", "1")
    expected = "pass" if os.geteuid() == 0 else ("fail", "error")
    assert trial(r, "a-attack")["status"] in expected, trial(r, "a-attack")
    assert trial(r, "b-next")["status"] == "pass", trial(r, "b-next")


def test_keyrings_are_refused_to_traced_agents_too(run_spec):
    # Keyrings belong to a uid, shared by every trial: a command agent (traced, entered from
    # outside) is refused them as the spawner's commands are; the same agent otherwise works.
    add_key = ("python3 -c \"import ctypes, platform; n = 248 if platform.machine() == 'x86_64'"
               " else 217; print(ctypes.CDLL(None).syscall(n, b'user', b'k', b'v', 1, -2))\""
               " > key.txt")
    r = run_spec("""
        cli: sh
        tasks:
          - id: key
            intent: keep a secret in a keyring
            assert: [{verify: {run: "test $(cat key.txt) = -1"}}]
        """, "--agent", "command", "--agent-command", add_key)
    assert trial(r)["status"] == "pass", trial(r)


def test_each_trial_in_a_box_gets_its_own_limits(cli, tmp_path):
    # One box, three trials: 1 GiB, then 64 MiB (lowered: the hog is stopped and the trial
    # says so), then 1 GiB again (raised: the same allocation passes). Limits and the
    # kernel's counters are per trial, not per box.
    for name, memory in (("a-roomy", "1g"), ("b-tight", "64m"), ("c-roomy", "1g")):
        (tmp_path / "specs").mkdir(exist_ok=True)
        (tmp_path / "specs" / f"{name}.yaml").write_text(f"""
version: 1
id: {name}
task: {{prompt: use memory}}
agent: {{type: oracle}}
resources: {{memory: {memory}}}
solution: ["readlink /proc/self/ns/net", "python3 -c 'b = bytearray(200 * 1024**2)'"]
invariants:
  ran: {{description: x, check: {{type: command_exit, command: "true"}}}}
""")
    out = cli("run", "specs", "--concurrency", "1", "--output-dir", "run", "-q", timeout=180)
    r = json.loads((tmp_path / "run" / "results.json").read_text())
    assert "Traceback" not in out.stderr, out.stderr
    roomy, tight, again = (trial(r, n) for n in ("a-roomy", "b-tight", "c-roomy"))
    assert roomy["status"] == "pass", roomy
    assert tight["status"] == "error" and "64 MiB" in tight["error"], tight
    assert again["status"] == "pass", again
    run_dir = tmp_path / "run"
    assert len({_netns(run_dir, t["id"]) for t in (roomy, tight, again)}) == 1  # one box


def _agent_under_tmp(tmp_path: Path, body: str) -> str:
    """A command agent installed under /tmp (tmp_path), as an agent cache under a temporary
    PROCTOR_HOME is: its prefix is shown read-only at its own path inside the box's /tmp."""
    prog = tmp_path / "tool" / "bin" / "agent"
    prog.parent.mkdir(parents=True)
    prog.write_text(f"#!/bin/sh\nreadlink /proc/self/ns/net\n{body}\necho done > out.txt\n")
    prog.chmod(0o755)
    assert str(prog).startswith("/tmp/")
    return str(prog)


THREE = """
    cli: sh
    tasks:
      - id: again
        intent: work
        repeat: 3
        assert: [{file_contains: {path: out.txt, text: done}}]
    """


def test_a_read_only_mount_inside_tmp_outlives_the_wipe_between_trials(run_spec, tmp_path):
    # The honest twin: three trials in one box, the program under /tmp found each time.
    prog = _agent_under_tmp(tmp_path, "")
    r = run_spec(THREE, "--agent", "command", "--agent-command", prog, "--concurrency", "1")
    assert [t["status"] for t in r["trials"]] == ["pass"] * 3, r["trials"]
    run_dir = tmp_path / "run0"
    assert len({_exec_netns(run_dir, t["id"]) for t in r["trials"]}) == 1  # one box


def test_a_box_whose_mount_was_moved_away_is_never_reused(run_spec, tmp_path):
    # The agent owns its /tmp, so it can rename the directory holding a read-only mount's
    # point. The wipe takes the mount with it; the box is closed, not handed on with the
    # program gone (`not found`, exit 127, in every later trial).
    top = str(tmp_path).split("/")[2]
    prog = _agent_under_tmp(tmp_path, f"mv /tmp/{top} /tmp/moved-$$")
    r = run_spec(THREE, "--agent", "command", "--agent-command", prog, "--concurrency", "1")
    assert [t["status"] for t in r["trials"]] == ["pass"] * 3, r["trials"]
    run_dir = tmp_path / "run0"
    assert len({_exec_netns(run_dir, t["id"]) for t in r["trials"]}) == 3  # a new box each


def _exec_netns(run_dir: Path, trial_id: str) -> str:
    """What the command agent's program printed first: its network namespace."""
    for line in (run_dir / "trials" / trial_id / "trace.jsonl").read_text().splitlines():
        event = json.loads(line)
        if event.get("type") == "command" and event.get("source") == "launcher":
            return event["stdout"].splitlines()[0]
    raise AssertionError(f"{trial_id}: no launcher recorded")
