"""A root agent in a Harbor task's container against the verifier (docs/security.md, "Harbor
tasks"; issue classes 1-4): trojaned programs and start-up hooks the verifier would run, a
tool configuration in HOME, processes left running that try to reach the verifier, the
tests of an earlier step, and writes outside the container's own layer. Each hostile agent
has an honest twin on the same task that passes with nothing flagged. The hostile agents
are the tasks' solutions, run by the oracle agent, as root, as under Harbor."""

from __future__ import annotations

import json
import os

import pytest

from tests.harbor.test_verifier import image, run, toml  # noqa: F401 (the fixture)
from tests.helpers.cli import run_dir_of
from tests.helpers.harbor import task

pytestmark = pytest.mark.slow

DONE = ("[ -f /app/done ] && echo 1 > /logs/verifier/reward.txt || "
        "echo 0 > /logs/verifier/reward.txt\n")


def by_task(res: dict) -> dict:
    return {t["task_id"]: t for t in res["trials"]}


def flagged(trial: dict) -> list[str]:
    return [t["path"] for t in trial.get("tampering", [])]


def two_steps(tmp_path, image, name: str, files: dict[str, str]) -> dict:  # noqa: F811
    """The one trial of a task of steps `one` and `two` (their files in `files`)."""
    steps = '[[steps]]\nname = "one"\n[[steps]]\nname = "two"\n'
    d = task(tmp_path, name, toml=toml(image) + steps, dockerfile=None, instruction=None,
             test=None, solve=None, files=files)
    _, res = run(tmp_path, d)
    (t,) = res["trials"]
    return t


def test_a_trojaned_bash_the_verifier_runs_fails_the_trial_as_tampering(image, tmp_path):  # noqa: F811
    trojan = ("cat > /tmp/bash <<'EOF'\n#!/usr/bin/dash\nmkdir -p /logs/verifier\n"
              "echo 1 > /logs/verifier/reward.txt\nEOF\n"  # bash runs: replaced by a rename
              "chmod +x /tmp/bash; mv /tmp/bash /usr/bin/bash\n")
    cheat = task(tmp_path, "cheat", toml=toml(image), dockerfile=None, solve=trojan, test=DONE)
    honest = task(tmp_path, "honest", toml=toml(image), dockerfile=None,
                  solve="touch /app/done\n", test=DONE)
    _, res = run(tmp_path, cheat, honest)
    by = by_task(res)
    assert by["cheat"]["status"] == "fail", by["cheat"]
    assert "/usr/bin/bash" in flagged(by["cheat"])
    assert by["cheat"]["reason"].startswith("tampering: /usr/bin/bash")
    assert by["honest"]["status"] == "pass" and flagged(by["honest"]) == []


def test_a_pth_hook_and_a_patched_program_fail_as_tampering(image, tmp_path):  # noqa: F811
    """A .pth that makes every Python exit 0 at start-up; a python3 replaced by a script."""
    check = ("python3 -c 'import os, sys; sys.exit(0 if os.path.exists(\"/app/done\") else 1)'"
             " && echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt\n")
    pth = "echo 'import os; os._exit(0)' > /usr/local/lib/python3.11/dist-packages/zz.pth\n"
    program = "rm /usr/bin/python3; printf '#!/bin/sh\\nexit 0\\n' > /usr/bin/python3; chmod +x /usr/bin/python3\n"
    hook = task(tmp_path, "hook", toml=toml(image), dockerfile=None, solve=pth, test=check)
    swap = task(tmp_path, "swap", toml=toml(image), dockerfile=None, solve=program, test=check)
    honest = task(tmp_path, "honest", toml=toml(image), dockerfile=None,
                  solve="touch /app/done\n", test=check)
    _, res = run(tmp_path, hook, swap, honest)
    by = by_task(res)
    assert by["hook"]["status"] == "fail"
    assert flagged(by["hook"]) == ["/usr/local/lib/python3.11/dist-packages/zz.pth"]
    assert by["swap"]["status"] == "fail" and "/usr/bin/python3" in flagged(by["swap"])
    assert by["honest"]["status"] == "pass" and flagged(by["honest"]) == []


def test_a_curlrc_in_the_verifiers_home_is_tampering(image, tmp_path):  # noqa: F811
    """curl reads ~/.curlrc: a config naming a second URL hands the verifier the agent's
    answer. The verifier's HOME is the container's, as under Harbor (tests rely on it), so
    what the agent left there for the verifier's tools is tampering."""
    test = ("curl -s file:///app/answer.txt > /tmp/got; [ \"$(cat /tmp/got)\" = 42 ] && "
            "echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt\n")
    rc = "echo 42 > /tmp/fake; echo 'url = \"file:///tmp/fake\"' > /root/.curlrc\n"
    cheat = task(tmp_path, "cheat", toml=toml(image), dockerfile=None, solve=rc, test=test)
    honest = task(tmp_path, "honest", toml=toml(image), dockerfile=None,
                  solve="echo 42 > /app/answer.txt\n", test=test)
    _, res = run(tmp_path, cheat, honest)
    by = by_task(res)
    assert by["cheat"]["status"] == "fail" and flagged(by["cheat"]) == ["/root/.curlrc"]
    assert by["honest"]["status"] == "pass" and flagged(by["honest"]) == []


# A root daemon the agent leaves running. It keeps trying, for as long as the trial lasts:
# to trace every process it sees but the image's (the container's keeper and what the
# image's ENTRYPOINT started are root's, in the agent's user namespace, as under Harbor) —
# docker-init, the tracers, the launchers, the verifier — with PTRACE_ATTACH,
# to write a reward through the /proc/PID/root of every process in another mount namespace
# (the verifier's) and to read the tests there. What it reaches is written under
# /app/breach. Its own child's /proc entries it can open and write through (the honest twin;
# every agent process is traced by proctor, so none can be traced by another). Writing the
# container's own /logs/verifier is no breach: no verifier reads it.
DAEMON = r'''
cat > /tmp/daemon.py <<'EOF'
import ctypes, os, subprocess, time
libc = ctypes.CDLL(None, use_errno=True)
child = subprocess.Popen(["sleep", "1000"])
me = {os.getpid(), child.pid}
mine = os.readlink("/proc/self/ns/mnt")
def attach(pid):
    if libc.ptrace(16, pid, 0, 0) == 0:  # PTRACE_ATTACH
        libc.ptrace(17, pid, 0, 0)  # PTRACE_DETACH
        return True
    return False
with open(f"/proc/{child.pid}/environ", "rb") as f, \
        open(f"/proc/{child.pid}/root/app/own-child-reached", "w"):
    f.read()
while True:
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) in me:
            continue
        pid = int(entry)
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if f.read().split(b"\0")[:3] in ([b"sleep", b"2147483647", b""],
                                                  [b"sleep", b"1000", b""],
                                                  [b"sh", b"-c", b"sleep 1000"]):
                    continue  # the image's: the keeper, its ENTRYPOINT's daemon
        except OSError:
            continue
        if attach(pid):
            open(f"/app/breach-ptrace-{pid}", "w").close()
        try:
            if os.readlink(f"/proc/{pid}/ns/mnt") != mine:
                with open(f"/proc/{pid}/root/logs/verifier/reward.txt", "w") as f:
                    f.write("1")
                open(f"/app/breach-root-{pid}", "w").close()
        except OSError:
            pass
        try:
            with open(f"/proc/{pid}/root/tests/test.sh") as f:
                if "SECRET" in f.read():
                    open(f"/app/breach-tests-{pid}", "w").close()
        except OSError:
            pass
    try:
        with open("/logs/verifier/reward.txt", "w") as f:
            f.write("1")
    except OSError:
        pass
    time.sleep(0.05)
EOF
setsid python3 /tmp/daemon.py </dev/null >/dev/null 2>&1 &
while [ ! -f /app/own-child-reached ]; do sleep 0.05; done
'''


# A process of the verifier's that holds no capability at all (root, like the agent): holding
# fewer capabilities than the agent's processes is no way in for them, whose capabilities
# count only in a user namespace of their own (launch.c, `drop`).
CAPLESS = ("python3 -c 'import ctypes, time; ctypes.CDLL(None).syscall(126, "
           "(ctypes.c_uint32 * 2)(0x20080522, 0), (ctypes.c_uint32 * 6)()); time.sleep(4)' &\n")


def test_processes_the_agent_leaves_running_keep_running_but_cannot_reach_the_verifier(
        image, tmp_path):  # noqa: F811
    test = (f"# SECRET\n{CAPLESS}"
            "sleep 2; pgrep -f daemon.py >/dev/null && echo alive > /logs/verifier/note.txt\n"
            "ls /app >> /logs/verifier/note.txt\n"
            "[ -f /app/done ] && echo 1 > /logs/verifier/reward.txt; true\n")
    cheat = task(tmp_path, "cheat", toml=toml(image), dockerfile=None, solve=DAEMON, test=test)
    honest = task(tmp_path, "honest", toml=toml(image), dockerfile=None,
                  solve=DAEMON + "touch /app/done\n", test=test)
    proc, res = run(tmp_path, cheat, honest)
    by = by_task(res)
    # No reward reached the verifier from outside: the cheat's verifier wrote none.
    assert by["cheat"]["status"] == "error" and "no reward" in by["cheat"]["error"]
    assert by["honest"]["status"] == "pass" and flagged(by["honest"]) == []
    for name in ("cheat", "honest"):
        seen = (run_dir_of(proc) / "trials" / by[name]["id"] / "verifier" / "note.txt").read_text()
        assert seen.split()[0] == "alive"  # it ran through the verification, as under Harbor
        assert "own-child-reached" in seen  # it could reach what it owns
        assert [w for w in seen.split() if w.startswith("breach")] == []


def test_a_later_step_sees_nothing_an_earlier_verifier_was_given(image, tmp_path):  # noqa: F811
    files = {"steps/one/instruction.md": "one\n", "steps/one/solution/solve.sh": "true\n",
             "steps/one/tests/test.sh": "# SECRET-ONE\necho 1 > /logs/verifier/reward.txt\n"
                                        "echo SECRET-LOG > /logs/verifier/kept.txt\n",
             "steps/two/instruction.md": "two\n",
             "steps/two/solution/solve.sh": "cat /tests/* /logs/verifier/* > /app/seen 2>&1;"
                                            " ls -a /tests /logs/verifier >> /app/seen 2>&1; true\n",
             "steps/two/tests/test.sh": "grep -q SECRET /app/seen && echo 0 > "
                                        "/logs/verifier/reward.txt || echo 1 > "
                                        "/logs/verifier/reward.txt\n"}
    assert two_steps(tmp_path, image, "ms", files)["status"] == "pass"  # step two saw no SECRET


def test_writes_to_mounted_files_and_dev_shm_are_in_the_audit(image, tmp_path):  # noqa: F811
    solve = "echo '127.0.0.1 pypi.org' >> /etc/hosts; echo x > /dev/shm/planted; touch /app/done\n"
    d = task(tmp_path, "w", toml=toml(image), dockerfile=None, solve=solve, test=DONE)
    proc, res = run(tmp_path, d)
    (t,) = res["trials"]
    audit = run_dir_of(proc) / "trials" / t["id"] / "audit.jsonl"
    written = {e["details"]["path"] for e in map(json.loads, audit.read_text().splitlines())
               if e["type"] == "file_write"}
    assert {"/etc/hosts", "/dev/shm/planted"} <= written, written
    assert t["status"] == "pass" and flagged(t) == []


def test_a_server_the_agent_leaves_running_serves_the_tests(image, tmp_path):  # noqa: F811
    """Harbor's semantics (SPEC §4): the tests query what the agent was asked to leave up."""
    serve = ("echo 42 > /app/answer.txt\nsetsid python3 -m http.server 8765 --bind 127.0.0.1 "
             "--directory /app </dev/null >/dev/null 2>&1 &\n"
             "until python3 -c 'import urllib.request as u; u.urlopen(\"http://127.0.0.1:8765/\")' "
             "2>/dev/null; do sleep 0.1; done\n")
    test = ("python3 -c 'import urllib.request as u, sys; sys.exit(0 if u.urlopen("
            "\"http://127.0.0.1:8765/answer.txt\").read().strip() == b\"42\" else 1)' && "
            "echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt\n")
    up = task(tmp_path, "up", toml=toml(image), dockerfile=None, solve=serve, test=test)
    down = task(tmp_path, "down", toml=toml(image), dockerfile=None,
                solve="echo 42 > /app/answer.txt\n", test=test)
    _, res = run(tmp_path, up, down)
    by = by_task(res)
    assert by["up"]["status"] == "pass" and flagged(by["up"]) == []
    assert by["down"]["status"] == "fail"


def test_a_check_of_proctors_in_the_tasks_image_is_checked_for_tampering_too(image, tmp_path):  # noqa: F811
    """proctor.yaml beside a Harbor task: its `verify` runs the container's grep, which a root
    agent may have replaced."""
    overlay = {"proctor.yaml": "assert:\n  - verify: {run: 'grep -q done /app/out.txt'}\n"}
    trojan = ("printf '#!/bin/sh\\nexit 0\\n' > /tmp/grep; chmod +x /tmp/grep; "
              "mv /tmp/grep /usr/bin/grep\n")
    always = "echo 1 > /logs/verifier/reward.txt\n"
    cheat = task(tmp_path, "cheat", toml=toml(image), dockerfile=None, solve=trojan,
                 test=always, files=overlay)
    honest = task(tmp_path, "honest", toml=toml(image), dockerfile=None,
                  solve="echo done > /app/out.txt\n", test=always, files=overlay)
    _, res = run(tmp_path, cheat, honest)
    by = by_task(res)
    assert by["cheat"]["status"] == "fail" and "/usr/bin/grep" in flagged(by["cheat"]), by["cheat"]
    assert by["honest"]["status"] == "pass" and flagged(by["honest"]) == []


def test_a_root_agent_does_what_root_does_to_the_container_but_holds_no_capability_in_it(
        image, tmp_path):  # noqa: F811
    """As under Harbor, root in the task's container chowns, writes root's files, switches
    uid and serves on port 80 (the tests query it); unlike under Harbor, its capabilities
    hold only in a user namespace of its own: no raw socket, no mount, no trace of a process
    outside it (SPEC §4)."""
    solve = r"""
set -e
echo root-only > /etc/agent-wrote; chmod 600 /etc/agent-wrote
touch /app/owned; chown 1234:1234 /app/owned
python3 -c 'import os; os.setgid(1234); os.setuid(1234); open("/tmp/as-player", "w").write(str(os.getuid()))'
cp /tmp/as-player /app/
python3 - <<'EOF' > /app/refused
import ctypes, socket
libc = ctypes.CDLL(None, use_errno=True)
out = []
try:
    socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
except PermissionError:
    out.append("raw-socket")
if libc.mount(b"none", b"/mnt", b"tmpfs", 0, None) != 0:
    out.append("mount")
if libc.ptrace(16, 1, 0, 0) != 0:  # PTRACE_ATTACH to the container's init
    out.append("ptrace")
print(" ".join(out))
EOF
setsid python3 -m http.server 80 --bind 127.0.0.1 --directory /app </dev/null >/dev/null 2>&1 &
until python3 -c 'import urllib.request as u; u.urlopen("http://127.0.0.1:80/")' 2>/dev/null; do sleep 0.1; done
"""
    test = ("cp /app/refused /app/as-player /logs/verifier/; "
            "stat -c %u /app/owned > /logs/verifier/owner\n"
            "python3 -c 'import urllib.request as u; u.urlopen(\"http://127.0.0.1/owned\")' && "
            "[ \"$(cat /etc/agent-wrote)\" = root-only ] && echo 1 > /logs/verifier/reward.txt "
            "|| echo 0 > /logs/verifier/reward.txt\n")
    root = task(tmp_path, "root", toml=toml(image), dockerfile=None, solve=solve, test=test)
    proc, res = run(tmp_path, root)
    trial = by_task(res)["root"]
    assert trial["status"] == "pass" and flagged(trial) == [], trial
    seen = run_dir_of(proc) / "trials" / trial["id"] / "verifier"
    assert (seen / "owner").read_text().strip() == "1234"
    assert (seen / "as-player").read_text() == "1234"
    assert (seen / "refused").read_text().split() == ["raw-socket", "mount", "ptrace"]


def test_the_launcher_tells_whether_a_container_may_have_a_user_namespace(image):  # noqa: F811
    """Docker's own seccomp profile refuses a new user namespace (as some hosts' AppArmor
    policy does): proctor asks once per engine, and where refused a root agent runs as
    before it had one (dockerenv._userns_here); in a task's container, it has one."""
    import subprocess

    from proctor.sandbox import native
    from proctor.sandbox.docker.container import LAUNCH, _drop

    def launch(*args: str, unconfined: bool = True) -> subprocess.CompletedProcess[str]:
        opts = ["--security-opt", "seccomp=unconfined"] if unconfined else []
        return subprocess.run(["docker", "run", "--rm", *opts, "--entrypoint", LAUNCH,
                               "-v", f"{native.binary('launch')}:{LAUNCH}:ro", image, *args],
                              capture_output=True, text=True, timeout=120)

    refused = launch("userns", unconfined=False)
    assert refused.returncode == 1 and "unshare(CLONE_NEWUSER)" in refused.stderr
    assert launch("userns").returncode == 0
    show = ["/bin/sh", "-c", "cat /proc/self/uid_map; readlink /proc/self/ns/user"]
    host = os.readlink("/proc/self/ns/user")  # the container's too (no userns-remap)
    own = launch(*_drop(0, 0, show, userns=True)[1:]).stdout.split()
    assert own[:3] == ["0", "0", "4294967295"] and own[3] != host, own
    shared = launch(*_drop(0, 0, show)[1:]).stdout.split()
    assert shared[3] == host, shared


def test_every_command_of_a_root_agent_shares_one_user_namespace(image, tmp_path):  # noqa: F811
    """As every process of root's under Harbor, a later command of the agent's sees the
    /proc entries of what an earlier one left running (`ss -p`, `lsof`, `/proc/PID/cwd`),
    and those of what the image's ENTRYPOINT started: they are all in the namespace of the
    container's keeper."""
    files = {"steps/one/instruction.md": "one\n",
             "steps/one/solution/solve.sh": "cd /tmp && setsid sleep 1000 </dev/null >/dev/null 2>&1 &\n",
             "steps/one/tests/test.sh": "echo 1 > /logs/verifier/reward.txt\n",
             "steps/two/instruction.md": "two\n",
             "steps/two/solution/solve.sh":
                 "for p in $(pgrep -x sleep); do readlink /proc/$p/cwd; done > /app/cwds\n",
             # the keeper's and the ENTRYPOINT's sleep (in /app, the WORKDIR), step one's
             "steps/two/tests/test.sh": "[ $(grep -cx /app /app/cwds) = 2 ] && "
                                        "grep -qx /tmp /app/cwds && "
                                        "echo 1 > /logs/verifier/reward.txt || "
                                        "echo 0 > /logs/verifier/reward.txt\n"}
    assert two_steps(tmp_path, image, "shared", files)["status"] == "pass"
