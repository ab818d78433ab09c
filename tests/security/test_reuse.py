"""A box serves one trial after another (sandbox/pool.py): nothing a trial leaves in it
reaches the next. Each hostile trial is followed, in the same box, by a probe that must find
it clean; the probe is the honest twin (it passes), and the test checks the two really
shared a box (BOX: the box's UTS namespace and its workspace directory, inode and birth
time, which no trial can change and a new box does not have), or it would prove nothing."""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers.security import trial

BOX = "readlink /proc/self/ns/uts; stat -c '%i %w' $PROCTOR_WORKDIR"

# What a trial can try to leave behind, all at once. The first two commands are the probe's
# too: the box, and the first pid a trial's command gets.
PLANT = [
    BOX,
    "echo pid=$$",
    "for d in $PROCTOR_WORKDIR $HOME /tmp /dev/shm; do echo planted > $d/leak; done",
    "mkdir -p /tmp/locked/deep && echo x > /tmp/locked/deep/f && chmod 000 /tmp/locked/deep /tmp/locked",
    "ipcmk -M 4096 && ipcmk -Q && ipcmk -S 2",
    "python3 -c \"import ctypes, os; rt = ctypes.CDLL('librt.so.1'); "
    "print('mq', rt.mq_open(b'/leak', os.O_CREAT | os.O_RDWR, 0o600, None))\"",
    "python3 -c \"import ctypes, platform; n = 248 if platform.machine() == 'x86_64' else 217; "
    "print('keyring', ctypes.CDLL(None).syscall(n, b'user', b'leak', b'v', 1, -2))\"",
    "(setsid sh -c 'sleep 1; echo late > /tmp/late; sleep 600' > /dev/null 2>&1 &)",
    "nohup sleep 600 > /dev/null 2>&1 &",
    # Counters: pid numbers, and the network's (/proc/net/snmp, /proc/net/dev).
    "for i in $(seq 100); do /bin/true; done",
    "python3 -c \"import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); "
    "[s.sendto(b'x' * 1000, ('127.0.0.1', 9)) for _ in range(100)]\"",
    "grep -A1 '^Udp:' /proc/net/snmp | tail -1; grep 'lo:' /proc/net/dev",
]

PROBE = [
    BOX,
    "echo pid=$$",
    "sleep 1.5",  # long enough for a surviving daemon to write /tmp/late
    "{ ls -A $PROCTOR_WORKDIR $HOME /tmp /dev/shm; ipcs -m -q -s | grep '^0x';"
    " python3 -c \"import ctypes, os; rt = ctypes.CDLL('librt.so.1'); "
    "print('mq leak') if rt.mq_open(b'/leak', os.O_RDWR, 0, None) >= 0 else None\";"
    " ps -eo comm | grep -x sleep;"
    " awk '/^Udp:/ && $2 ~ /^[0-9]+$/ && $5 != 0 {print \"udp sent\", $5}' /proc/net/snmp;"
    " awk '/lo:/ && $2 != 0 {print \"lo bytes\", $2}' /proc/net/dev; } > .found 2>&1; true",
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


def _printed(run_dir: Path, trial_id: str, command: str) -> str:
    """What the first command of the trial starting with `command` printed."""
    for line in (run_dir / "trials" / trial_id / "trace.jsonl").read_text().splitlines():
        event = json.loads(line)
        if event.get("type") == "command" and event["command"].startswith(command):
            return event["stdout"].strip()
    raise AssertionError(f"{trial_id} ran no {command}")


def _box(run_dir: Path, trial_id: str) -> str:
    """The box a trial ran in (what BOX printed)."""
    return _printed(run_dir, trial_id, BOX)


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
    assert _box(run_dir, plant["id"]) == _box(run_dir, probe["id"])  # one box, reused
    assert probe["status"] == "pass", _outputs(run_dir, probe["id"])
    # Pid numbers start afresh: the probe's first command has the plant's first pid.
    pid = _printed(run_dir, plant["id"], "echo pid")
    assert pid == _printed(run_dir, probe["id"], "echo pid"), pid


# What no packet shows: a connection to an address there is no route to (there is only
# loopback) counts in /proc/net/snmp (Ip: OutNoRoutes) all the same.
NO_ROUTE = ("python3 -c \"import socket; s = socket.socket(); "
            "print(s.connect_ex(('192.0.2.1', 80)))\"")
# Every nonzero counter of /proc/net/snmp (not the settings: Ip's first two, Tcp's four).
COUNTED = ("awk '$2 ~ /^-?[0-9]+$/ {for (i = 2; i <= NF; i++) if ($i != 0 && !($1 == \"Ip:\" "
           "&& i <= 3) && !($1 == \"Tcp:\" && i <= 5)) print $1, i, $i}' /proc/net/snmp "
           "> counted.txt")


def _quiet_then(first: str) -> str:
    """Two trials in one box: `first`, then one that lists what its network counted."""
    def steps(*commands: str) -> str:
        return "[" + ", ".join(json.dumps(c) for c in commands) + "]"
    return f"""
        cli: sh
        tasks:
          - id: a-first
            intent: work
            solution: {steps(BOX, "readlink /proc/self/ns/net", first)}
            assert: [{{exit_code: 0}}]
          - id: b-second
            intent: find nothing counted
            solution: {steps(BOX, "readlink /proc/self/ns/net", COUNTED)}
            assert: [{{verify: {{run: "test ! -s counted.txt"}}}}]
        """


def test_a_network_namespace_that_counted_anything_is_not_kept(run_spec, tmp_path):
    # A trial whose network namespace counted anything, even without a packet (the hostile
    # plant), leaves the next trial a new one; the honest twin: after a trial that used no
    # network the box's namespace is kept (nothing of that trial is in it). Either way the
    # next trial finds nothing counted.
    for n, (first, kept) in enumerate([("true", True), (NO_ROUTE, False)]):
        r = run_spec(_quiet_then(first), "--concurrency", "1")
        run_dir = tmp_path / f"run{n}"
        a, b = trial(r, "a-first"), trial(r, "b-second")
        assert a["status"] == "pass", _outputs(run_dir, a["id"])
        assert b["status"] == "pass", _outputs(run_dir, b["id"])
        assert _box(run_dir, a["id"]) == _box(run_dir, b["id"])  # one box
        nets = {_printed(run_dir, t["id"], "readlink /proc/self/ns/net") for t in (a, b)}
        assert (len(nets) == 1) == kept, (first, nets)


def test_a_renewed_network_namespace_is_watched_as_the_first_was(run_spec, tmp_path):
    # The spawner watches the namespace it made for a trial as it did bubblewrap's: the
    # second trial's use of its new namespace is seen too, and the third gets another, where
    # nothing is counted (counters read from the first namespace would miss it).
    steps = [BOX, "readlink /proc/self/ns/net"]
    spec = f"""
        cli: sh
        tasks:
          - id: a-first
            intent: count
            solution: {json.dumps([*steps, NO_ROUTE])}
            assert: [{{exit_code: 0}}]
          - id: b-second
            intent: count again
            solution: {json.dumps([*steps, NO_ROUTE])}
            assert: [{{exit_code: 0}}]
          - id: c-third
            intent: find nothing counted
            solution: {json.dumps([*steps, COUNTED])}
            assert: [{{verify: {{run: "test ! -s counted.txt"}}}}]
        """
    r = run_spec(spec, "--concurrency", "1")
    run_dir = tmp_path / "run0"
    trials = [trial(r, name) for name in ("a-first", "b-second", "c-third")]
    for t in trials:
        assert t["status"] == "pass", _outputs(run_dir, t["id"])
    assert len({_box(run_dir, t["id"]) for t in trials}) == 1  # one box
    # Each a new one (a freed namespace's number may come back: only neighbours compared).
    a, b, c = (_printed(run_dir, t["id"], "readlink /proc/self/ns/net") for t in trials)
    assert a != b and b != c, (a, b, c)


def test_a_workdir_inside_tmp_gets_a_new_box_for_each_trial(run_spec, tmp_path):
    # A fixed workdir under /tmp is mounted on a directory of /tmp's place, which a wipe
    # would remove: such boxes serve one trial, and the probe still finds nothing.
    r = run_spec(_spec(PLANT, suite="workdir: /tmp/project"), "--concurrency", "1")
    run_dir = tmp_path / "run0"
    plant, probe = trial(r, "a-plant"), trial(r, "b-probe")
    assert plant["status"] == "pass", _outputs(run_dir, plant["id"])
    assert _box(run_dir, plant["id"]) != _box(run_dir, probe["id"])
    assert probe["status"] == "pass", _outputs(run_dir, probe["id"])


# The box's spawner and the tracers it forks are not in a trial's PID namespace: the agent
# sees its own processes and the trial's init, which ignores every signal sent from inside,
# holds no descriptor and whose memory and environment it cannot read.
# It stops and kills everything it sees; its next command still runs, it is still recorded,
# and the next trial gets the same box. Run as root here, without root in test_unprivileged.
TAKEOVER = """
        cli: sh
        tasks:
          - id: a-attack
            intent: take over the box
            timeout: 20
            solution:
              - {BOX}
              - "ps -eo comm= > seen.txt"
              - "for p in $(ls /proc | grep -E '^[0-9]+$'); do [ $p = $$ ] || kill -STOP $p; done 2>/dev/null; kill -KILL 1; true"
              - "kill -KILL -1"
              - "echo fds=$(ls -A /proc/1/fd 2>/dev/null | wc -l) > out.txt; cat /proc/1/environ > /dev/null 2>&1; echo environ=$? >> out.txt"
            assert:
              - {verify: {run: "grep -qx init seen.txt && ! grep -v -x -e init -e sh -e ps seen.txt"}}
              - {verify: {run: "test \\"$(cat out.txt | tr '\\n' ' ')\\" = 'fds=0 environ=1 '"}}
              - {ran: "kill -KILL -1"}
          - id: b-next
            intent: work
            solution: [{BOX}, "echo ok > ok.txt"]
            assert: [{file_contains: {path: ok.txt, text: ok}}]
        """.replace("{BOX}", json.dumps(BOX))


def check_takeover(results: dict, run_dir: Path) -> None:
    attack = [t for t in results["trials"] if t["id"].startswith("a-attack")][0]
    nxt = [t for t in results["trials"] if t["id"].startswith("b-next")][0]
    assert attack["status"] == "pass", json.dumps(attack["checks"]) + _outputs(run_dir, attack["id"])
    assert nxt["status"] == "pass", json.dumps(nxt["checks"]) + _outputs(run_dir, nxt["id"])
    assert _box(run_dir, attack["id"]) == _box(run_dir, nxt["id"])  # the box was reused


def test_an_agent_cannot_take_over_the_process_starter(run_spec, tmp_path):
    check_takeover(run_spec(TAKEOVER, "--concurrency", "1"), tmp_path / "run0")


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
solution: [{json.dumps(BOX)}, "python3 -c 'b = bytearray(200 * 1024**2)'"]
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
    assert len({_box(run_dir, t["id"]) for t in (roomy, tight, again)}) == 1  # one box


def _agent_under_tmp(tmp_path: Path, body: str) -> str:
    """A command agent installed under /tmp (tmp_path), as an agent cache under a temporary
    PROCTOR_HOME is: its prefix is shown read-only at its own path inside the box's /tmp."""
    prog = tmp_path / "tool" / "bin" / "agent"
    prog.parent.mkdir(parents=True)
    prog.write_text(f"#!/bin/sh\n{BOX}\n{body}\necho done > out.txt\n")
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
    assert len({_launcher_box(run_dir, t["id"]) for t in r["trials"]}) == 1  # one box


def test_a_box_whose_mount_was_moved_away_is_never_reused(run_spec, tmp_path):
    # The agent owns its /tmp, so it can rename the directory holding a read-only mount's
    # point. The wipe takes the mount with it; the box is closed, not handed on with the
    # program gone (`not found`, exit 127, in every later trial).
    top = str(tmp_path).split("/")[2]
    prog = _agent_under_tmp(tmp_path, f"mv /tmp/{top} /tmp/moved-$$")
    r = run_spec(THREE, "--agent", "command", "--agent-command", prog, "--concurrency", "1")
    assert [t["status"] for t in r["trials"]] == ["pass"] * 3, r["trials"]
    run_dir = tmp_path / "run0"
    assert len({_launcher_box(run_dir, t["id"]) for t in r["trials"]}) == 3  # a new box each


def _launcher_box(run_dir: Path, trial_id: str) -> str:
    """What the command agent's program printed first: the box it ran in (as BOX prints it)."""
    for line in (run_dir / "trials" / trial_id / "trace.jsonl").read_text().splitlines():
        event = json.loads(line)
        if event.get("type") == "command" and event.get("source") == "launcher":
            return " ".join(event["stdout"].splitlines()[:2])
    raise AssertionError(f"{trial_id}: no launcher recorded")


# A command agent runs under the tracer, which the box's spawner forks beside it in the box's
# PID namespace: the agent sees only its own processes and the trial's init, kills everything
# it sees, and its trace is still whole (no "recording lost"); it ran `ps`.
TRACED_AGENT = ("ps -eo comm= > seen.txt; for p in $(ls /proc | grep -E '^[0-9]+$'); do "
                "[ $p = $$ ] || kill -KILL $p 2>/dev/null; done; echo done > done.txt")
TRACED_SPEC = """
        cli: sh
        tasks:
          - id: t
            intent: take over the tracer
            assert:
              - {verify: {run: "test -s done.txt && grep -qx init seen.txt && ! grep -v -x -e init -e sh -e ps seen.txt"}}
              - {ran: "^ps"}
        """


def test_a_traced_agent_cannot_reach_its_tracer(run_spec):
    r = run_spec(TRACED_SPEC, "--agent", "command", "--agent-command", TRACED_AGENT)
    assert trial(r)["status"] == "pass", trial(r)
