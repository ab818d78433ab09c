"""Harbor tasks run for real (docker backend, the task's image as its environment): the
verifier's contract (reward.txt, reward.json, ctrf.json, no reward, a timeout), multi-step
gates, proctor's overlay, and the image's user, workdir and entrypoint. The hostile cases of
the verifier are in tests/security/test_harbor_verifier.py."""

from __future__ import annotations

import json

import pytest

from tests.docker.engine import require_engine
from tests.helpers.cli import Cli, results, run_dir_of
from tests.helpers.harbor import task

pytestmark = [pytest.mark.slow]


@pytest.fixture(scope="module")
def image() -> str:
    """A small image with bash, python3 and an entrypoint of its own, built from proctor's
    base (no registry): stands for a task image."""
    require_engine()
    import subprocess

    from proctor.sandbox.docker.images import ensure_base

    tag = "proctor-test-harbor:1"
    dockerfile = (f"FROM {ensure_base()}\n"
                  "RUN useradd -m -u 1234 player && mkdir -p /app && echo seed > /app/seed.txt\n"
                  "RUN printf '#!/bin/sh\\necho up > /run/entrypoint-ran\\n"
                  "sh -c \"sleep 1000\" &\\nexec \"$@\"\\n' > /entry.sh && chmod +x /entry.sh\n"
                  "ENTRYPOINT [\"/entry.sh\"]\nWORKDIR /app\n")
    subprocess.run(["docker", "build", "-q", "--force-rm", "-t", tag, "-"], input=dockerfile,
                   text=True, capture_output=True, check=True)
    return tag


def toml(image: str, extra: str = "", verifier: str = "timeout_sec = 60.0") -> str:
    return (f'version = "1.0"\n{extra}\n[verifier]\n{verifier}\n\n[agent]\ntimeout_sec = 60.0\n\n'
            f'[environment]\ndocker_image = "{image}"\nmemory_mb = 512\n')


def run(tmp_path, *args, agent="oracle", extra=()):
    proc = Cli(tmp_path)("run", *map(str, args), "--agent", agent, *extra, "-q", timeout=600)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc, results(run_dir_of(proc))


def checks(trial) -> dict[str, tuple[bool, float, float]]:
    return {c["name"]: (c["passed"], c["score"], c["weight"]) for c in trial["checks"]}


def test_the_reward_files_are_the_score(image, tmp_path):
    txt = task(tmp_path, "txt", toml=toml(image), dockerfile=None,
               solve="echo done > /app/out.txt\n",
               test="[ -f /app/out.txt ] && echo 1 > /logs/verifier/reward.txt || "
                    "echo 0 > /logs/verifier/reward.txt\n")
    half = task(tmp_path, "half", toml=toml(image), dockerfile=None,
                test="echo 0.5 > /logs/verifier/reward.txt\n")
    js = task(tmp_path, "js", toml=toml(image), dockerfile=None, test="""\
        echo '{"correctness": 1, "speed": 0}' > /logs/verifier/reward.json
        cat > /logs/verifier/ctrf.json <<'EOF'
        {"results": {"tests": [{"name": "test_a", "status": "passed"},
                               {"name": "test_b", "status": "failed", "message": "too slow"}]}}
        EOF
        """)
    proc, res = run(tmp_path, txt, half, js)
    by = {t["task_id"]: t for t in res["trials"]}
    assert by["txt"]["status"] == "pass" and checks(by["txt"]) == {"reward": (True, 1.0, 1.0)}
    assert by["half"]["status"] == "fail" and by["half"]["composite_score"] == 0.5
    assert checks(by["js"]) == {"reward.correctness": (True, 1.0, 0.5),
                                "reward.speed": (False, 0.0, 0.5),
                                "reward.test:test_a": (True, 1.0, 0.0),
                                "reward.test:test_b": (False, 0.0, 0.0)}
    assert by["js"]["composite_score"] == 0.5 and by["js"]["status"] == "fail"
    failed = [c for c in by["js"]["checks"] if c["name"] == "reward.test:test_b"][0]
    assert failed["message"] == "failed: too slow"
    # The verifier's files are kept with the trial.
    kept = run_dir_of(proc) / "trials" / by["js"]["id"] / "verifier"
    assert json.loads((kept / "reward.json").read_text()) == {"correctness": 1, "speed": 0}


def test_no_reward_or_no_time_is_an_error(image, tmp_path):
    none = task(tmp_path, "none", toml=toml(image), dockerfile=None, test="echo checked\n")
    slow = task(tmp_path, "slow", toml=toml(image, verifier="timeout_sec = 2"), dockerfile=None,
                test="sleep 30; echo 1 > /logs/verifier/reward.txt\n")
    junk = task(tmp_path, "junk", toml=toml(image), dockerfile=None,
                test="echo lots > /logs/verifier/reward.txt\n")
    # no solution/solve.sh: Harbor's oracle errors (it does not do nothing and fail)
    unsolved = task(tmp_path, "unsolved", toml=toml(image), dockerfile=None, solve=None,
                    test="echo 0 > /logs/verifier/reward.txt\n")
    _, res = run(tmp_path, none, slow, junk, unsolved)
    by = {t["task_id"]: t for t in res["trials"]}
    assert all(t["status"] == "error" for t in by.values())
    assert by["unsolved"]["error"] == "agent error: no solution/solve.sh: the oracle has nothing to run"
    assert "no reward: the verifier wrote neither /logs/verifier/reward.txt nor reward.json " \
           "(tests/test.sh exited 0)" in by["none"]["error"]
    assert "checked" in by["none"]["error"]
    assert "the verifier (tests/test.sh) did not finish within 2s" in by["slow"]["error"]
    assert "/logs/verifier/reward.txt holds 'lots', not a number" in by["junk"]["error"]


def test_the_verifiers_egress_is_in_the_trace_with_why_it_was_refused(image, tmp_path):
    """A verifier's download the proxy refuses (a private address, as a lab's gateway is)
    fails its tests without saying why; the trace says it."""
    t = task(tmp_path, "net", toml=toml(image), dockerfile=None, test="""\
        python3 -c "import urllib.request; urllib.request.urlopen('http://10.1.2.3/x')" \\
          || echo 0 > /logs/verifier/reward.txt
        """)
    # the same download under the task's own `no-network` verifier is the task's doing, as
    # it would be under Harbor: said apart, and `proctor check` blames the task, not the network
    own = task(tmp_path, "own", dockerfile=None, toml=toml(
        image, verifier='timeout_sec = 60.0\nnetwork_mode = "no-network"'), test="""\
        python3 -c "import urllib.request; urllib.request.urlopen('http://pypi.org/simple/')" \\
          || echo 0 > /logs/verifier/reward.txt
        """)
    proc, res = run(tmp_path, t, own, agent="nop")
    trial, denied = sorted(res["trials"], key=lambda x: x["task_id"] != "net")
    assert denied["status"] == "fail" and denied["reason"].startswith(
        "the checks' network requests were denied by the task's network policy: pypi.org "
        "(egress to pypi.org is denied"), denied["reason"]
    from proctor.lint import cause

    assert cause(denied) is None and cause(trial) == "network"
    assert trial["status"] == "fail"
    trace = run_dir_of(proc) / "trials" / trial["id"] / "trace.jsonl"
    events = [e for e in map(json.loads, trace.read_text().splitlines())
              if e["type"] == "check_egress" and not e["allowed"]]
    assert [(e["host"], e["allowed"], e["status"]) for e in events] == [("10.1.2.3", False, 403)]
    assert "10.1.2.3 is a private or reserved address" in events[0]["why"]
    assert "public_addresses" in events[0]["why"] and "headers" not in events[0]
    # The one-line reason (and so the run's summary) says it first, with why.
    assert trial["reason"].startswith("the checks' network requests were refused: 10.1.2.3 "
                                      "(egress to 10.1.2.3 is refused: 10.1.2.3 is a private "
                                      "or reserved address"), trial["reason"]
    assert "; failed: reward" in trial["reason"], trial["reason"]


def test_a_verifier_download_this_machine_cannot_make_is_the_reason(image, tmp_path):
    """A host the policy allows but this machine cannot resolve or reach (Terminal-Bench's
    filter-js-from-html fetches from github.com in its tests): said first, with why."""
    t = task(tmp_path, "unreachable", toml=toml(image), dockerfile=None, test="""\
        python3 -c "import urllib.request; urllib.request.urlopen('http://proctor-test.invalid/x')" \\
          || echo 0 > /logs/verifier/reward.txt
        """)
    proc, res = run(tmp_path, t, agent="nop")
    (trial,) = res["trials"]
    assert trial["status"] == "fail"
    assert trial["reason"].startswith("the checks' network requests failed: proctor-test.invalid "
                                      "(could not resolve proctor-test.invalid); composite 0.00"), \
        trial["reason"]
    trace = run_dir_of(proc) / "trials" / trial["id"] / "trace.jsonl"
    events = [e for e in map(json.loads, trace.read_text().splitlines())
              if e["type"] == "check_egress" and e.get("host") == "proctor-test.invalid"]
    assert [(e["allowed"], e["status"]) for e in events] == [(True, 502)], events


def test_a_passing_verifier_s_refused_egress_is_not_a_reason(image, tmp_path):
    t = task(tmp_path, "netok", toml=toml(image), dockerfile=None, test="""\
        python3 -c "import urllib.request; urllib.request.urlopen('http://10.1.2.3/x')" || true
        echo 1 > /logs/verifier/reward.txt
        """)
    _, res = run(tmp_path, t, agent="nop")
    (trial,) = res["trials"]
    assert trial["status"] == "pass" and not trial.get("reason")


def test_the_image_is_the_environment(image, tmp_path):
    """WORKDIR, USER (or [agent] user), ENTRYPOINT and the image's files; the verifier as the
    image's user."""
    probe = ("id -u > /tmp/agent-uid; pwd > /tmp/agent-pwd; cat seed.txt > /tmp/agent-seed; "
             "cat /run/entrypoint-ran > /tmp/agent-entry 2>&1; echo $HOME > /tmp/agent-home; "
             # its own hostname resolves, as on Docker's bridge
             "python3 -c 'import socket; print(socket.getaddrinfo(socket.gethostname(), 80)"
             "[0][4][0])' > /tmp/agent-host 2>&1")
    test = ("cat /tmp/agent-uid /tmp/agent-pwd /tmp/agent-seed /tmp/agent-entry /tmp/agent-home"
            " /tmp/agent-host > /logs/verifier/seen.txt; id -u >> /logs/verifier/seen.txt; "
            "echo 1 > /logs/verifier/reward.txt\n")
    root = task(tmp_path, "root", toml=toml(image), dockerfile=None, solve=probe + "\n", test=test)
    player = task(tmp_path, "player", toml=toml(image).replace(
        "[agent]\n", "[agent]\nuser = \"player\"\n"), dockerfile=None, solve=probe + "\n", test=test)
    proc, res = run(tmp_path, root, player)
    seen = {t["task_id"]: (run_dir_of(proc) / "trials" / t["id"] / "verifier" / "seen.txt")
            .read_text().split() for t in res["trials"]}
    assert seen["root"] == ["0", "/app", "seed", "up", "/root", "127.0.1.1", "0"]
    assert seen["player"] == ["1234", "/app", "seed", "up", "/home/player", "127.0.1.1", "0"]


def test_what_the_entrypoint_starts_is_up_before_the_agent_runs(image, tmp_path):
    """A server the image's ENTRYPOINT starts in the background (the cookbook's
    dns-blacklisting) still busy starting when the ENTRYPOINT hands over: the agent's first
    command comes once it has settled, as on a machine where it starts at once. Here its
    start is 1.3 s of CPU at `cpus = 0.1` (>= 13 s): longer than proctor's 10 s bound in wall
    time, which is stretched by the time the server waited for a CPU (as on a loaded
    machine, where the agent raced it)."""
    server = ("import http.server, time\n"
              "t = time.process_time()\n"
              "while time.process_time() - t < 1.3:  # stands for a slow start (imports)\n"
              "    pass\n"
              "http.server.HTTPServer(('127.0.0.1', 8765),"
              " http.server.SimpleHTTPRequestHandler).serve_forever()\n")
    entry = "#!/bin/sh\npython3 /server.py &\nexec \"$@\"\n"
    fetch = ("import urllib.request as u; print(u.build_opener(u.ProxyHandler({}))"
             ".open('http://127.0.0.1:8765/', timeout=5).status)")
    t = task(tmp_path, "up",
             toml=toml(image).replace(f'docker_image = "{image}"\n', "") + "cpus = 0.1\n",
             dockerfile=f"FROM {image}\nCOPY server.py entry.sh /\n"
                        "RUN chmod +x /entry.sh\nENTRYPOINT [\"/entry.sh\"]\n",
             files={"environment/server.py": server, "environment/entry.sh": entry},
             solve=f"python3 -c \"{fetch}\" > /app/got 2>&1\n",
             test="grep -qx 200 /app/got && echo 1 > /logs/verifier/reward.txt || "
                  "{ cat /app/got; echo 0 > /logs/verifier/reward.txt; }\n")
    _, res = run(tmp_path, t)
    (trial,) = res["trials"]
    assert trial["status"] == "pass", trial


def test_multi_step_runs_in_order_and_min_reward_stops_the_rest(image, tmp_path):
    steps = ('[[steps]]\nname = "one"\nmin_reward = 1.0\n'
             '[[steps]]\nname = "two"\n')
    gate = ("[ -f /app/one ] && echo 1 > /logs/verifier/reward.txt || "
            "echo 0 > /logs/verifier/reward.txt\n")
    files = {"steps/one/instruction.md": "make one\n", "steps/one/tests/test.sh": gate,
             "steps/one/solution/solve.sh": "touch /app/one\n",
             "steps/two/instruction.md": "make two\n",
             "steps/two/tests/test.sh": "[ -f /app/one ] && [ -f /app/two ] && [ -f /app/given ] "
                                        "&& echo 1 > /logs/verifier/reward.txt || "
                                        "echo 0 > /logs/verifier/reward.txt\n",
             "steps/two/workdir/given": "uploaded\n",
             "steps/two/solution/solve.sh": "touch /app/two\n"}
    d = task(tmp_path, "ms", toml=toml(image) + steps, dockerfile=None, instruction=None,
             test=None, solve=None, files=files)
    _, res = run(tmp_path, d)
    (t,) = res["trials"]
    assert t["status"] == "pass" and t["turns"] == 2
    assert checks(t) == {"one.reward": (True, 1.0, 1.0), "two.reward": (True, 1.0, 1.0)}
    _, res = run(tmp_path, d, agent="nop")
    (t,) = res["trials"]
    assert t["status"] == "fail"
    assert [(c["name"], c["message"]) for c in t["checks"]][1] == (
        "two.reward", "not run: step one scored 0, below its min_reward 1")


def test_the_overlay_keeps_proctors_checks_on(image, tmp_path):
    d = task(tmp_path, "ov", toml=toml(image), dockerfile=None,
             test="[ -f /app/done ] && echo 1 > /logs/verifier/reward.txt\n",
             files={"proctor.yaml": "assert:\n  - not_ran: 'rm -rf'\nforbidden:\n"
                                    "  file_writes_outside: [done]\n"})
    # An agent program proctor does not control: what it runs is recorded from outside.
    _, res = run(tmp_path, d, agent="command",
                 extra=("--agent-command", "sh -c 'rm -rf /app/seed.txt; touch /app/done'"))
    (t,) = res["trials"]
    assert checks(t)["reward"] == (True, 1.0, 1.0)
    assert checks(t)["not_ran#0"] == (False, 0.0, 0.0)
    assert t["status"] == "fail" and t["composite_score"] == 0.0  # a gate
    (rule,) = t["forbidden"]
    # workspace paths are relative to it, as everywhere in proctor
    assert rule["details"] == "file writes outside the allowed paths: deleted seed.txt"


def test_an_anti_debugger_check_passes_as_under_harbor_and_its_program_is_traced(image, tmp_path):
    """A task's binary that refuses to run under a debugger (`ptrace(PTRACE_TRACEME) == -1`,
    Terminal-Bench's vulnerable-secret) runs under the oracle as under Harbor, where nothing
    traces it; proctor's trace still records it and what it runs after the check."""
    probe = ("python3 -c 'import ctypes, os; libc = ctypes.CDLL(None); "
             "r = libc.ptrace(0, 0, 0, 0); open(\"/app/traceme\", \"w\").write(str(r)); "
             "os.execv(\"/bin/echo\", [\"echo\", \"after-the-check\"])'\n")
    root = task(tmp_path, "antidebug", toml=toml(image), dockerfile=None, solve=probe,
                test="[ \"$(cat /app/traceme)\" = 0 ] && echo 1 > /logs/verifier/reward.txt || "
                     "echo 0 > /logs/verifier/reward.txt\n")
    proc, res = run(tmp_path, root)
    [trial] = res["trials"]
    assert trial["status"] == "pass", trial["reason"]
    trace = run_dir_of(proc) / "trials" / trial["id"] / "trace.jsonl"
    ran = [p["argv"] for e in map(json.loads, trace.read_text().splitlines())
           if e["type"] == "command" for p in e.get("processes", [])]
    assert ["echo", "after-the-check"] in ran, ran
    assert any(a[0] == "python3" and "libc.ptrace(0, 0, 0, 0)" in a[-1] for a in ran), ran


DONE = ("[ -f /app/done ] && echo 1 > /logs/verifier/reward.txt || "
        "echo 0 > /logs/verifier/reward.txt\n")
PACKAGE = """\
set -e
d=/tmp/pkg; mkdir -p $d/DEBIAN $d/etc/python3.99 $d/usr/lib/python3.99
echo '# the distribution own site customizations' > $d/etc/python3.99/sitecustomize.py
ln -s /etc/python3.99/sitecustomize.py $d/usr/lib/python3.99/sitecustomize.py
printf 'Package: proctor-test-python\\nVersion: 1\\nArchitecture: all\\nMaintainer: t <t@t.example>\\nDescription: t\\n' > $d/DEBIAN/control
echo /etc/python3.99/sitecustomize.py > $d/DEBIAN/conffiles
dpkg-deb --build --root-owner-group $d /tmp/p.deb >/dev/null && dpkg -i /tmp/p.deb >/dev/null && rm -rf $d /tmp/p.deb
"""


def test_a_packages_own_start_up_hook_is_not_tampering_but_one_put_in_its_place_is(image, tmp_path):
    """A Debian package's sitecustomize.py is an absolute link to its conffile in /etc (Debian
    and Ubuntu's python3.X, as an oracle's `apt install python3-pip` brings it): installed as
    the package has it, it is the package's, read as the container sees it (never through
    the host's own /etc); a file the agent put in the link's place is tampering."""
    honest = task(tmp_path, "honest", toml=toml(image), dockerfile=None,
                  solve=PACKAGE + "touch /app/done\n", test=DONE)
    planted = task(tmp_path, "planted", toml=toml(image), dockerfile=None, test=DONE, solve=(
        PACKAGE + "rm /usr/lib/python3.99/sitecustomize.py\n"
        "echo 'import os; os._exit(0)' > /usr/lib/python3.99/sitecustomize.py\n"
        "touch /app/done\n"))
    _, res = run(tmp_path, honest, planted)
    by = {t["task_id"]: t for t in res["trials"]}
    assert by["honest"]["status"] == "pass", by["honest"]["reason"]
    assert by["honest"].get("tampering", []) == []
    assert by["planted"]["status"] == "fail", by["planted"]
    assert [t["path"] for t in by["planted"]["tampering"]] == ["/usr/lib/python3.99/sitecustomize.py"]
