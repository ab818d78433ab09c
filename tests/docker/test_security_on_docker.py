"""The hostile-agent suite of tests/security, run again with `--backend docker`: the same
attacks must be contained in a container (the tests are imported; `run_spec` here adds the
flag)."""

from __future__ import annotations

import json
import textwrap
import uuid
from pathlib import Path

import pytest

from tests.security.test_database import *  # noqa: F403
from tests.security.test_environment import *  # noqa: F403
from tests.security.test_filesystem import *  # noqa: F403
from tests.security.test_grading import *  # noqa: F403
from tests.security.test_limits import *  # noqa: F403
from tests.security.test_network import *  # noqa: F403
from tests.security.test_processes import *  # noqa: F403
from tests.security.test_program_names import *  # noqa: F403
from tests.security.test_safe_git import *  # noqa: F403
from tests.security.test_secrets import *  # noqa: F403

pytestmark = pytest.mark.slow

# In a container, /root is the image's own root home, so "the host's home path exists" says
# nothing: the variant below plants a file there instead.
del test_host_places_are_neither_visible_nor_writable  # noqa: F821
# Runs proctor with the local backend (not through run_spec): tests/security has it. On
# docker a SIGKILLed proctor's containers live on until --resume removes them: test_cleanup.
del test_sigkill_of_proctor_takes_every_sandbox_process_with_it  # noqa: F821


def test_host_places_are_neither_visible_nor_writable_in_a_container(run_spec, tmp_path):
    from tests.security.test_filesystem import PACKAGE, trial

    tag = uuid.uuid4().hex
    home_canary = Path.home() / f".proctor-canary-{tag}"
    home_canary.write_text("host")
    try:
        targets = {"spec_dir": tmp_path, "package": PACKAGE, "home": home_canary,
                   "run_dirs": tmp_path / "run0"}
        probes = " ; ".join(f"(test -e {p} && echo {name}=visible || echo {name}=hidden) "
                            ">> seen.txt" for name, p in targets.items())
        writes = " ; ".join([f"echo pwned > /tmp/proctor-canary-{tag} 2>/dev/null",
                             f"echo pwned > {tmp_path}/pwned-{tag} 2>/dev/null",
                             f"echo pwned > {PACKAGE}/pwned_{tag}.py 2>/dev/null", "true"])
        r = run_spec(f"""
            cli: sh
            tasks:
              - id: escape
                intent: look around
                solution: ["{probes}", "{writes}", "echo mine > ok.txt"]
                assert:
                  - file_contains: {{path: seen.txt, text: spec_dir=hidden}}
                  - file_contains: {{path: seen.txt, text: package=hidden}}
                  - file_contains: {{path: seen.txt, text: home=hidden}}
                  - file_contains: {{path: seen.txt, text: run_dirs=hidden}}
                  - file_contains: {{path: ok.txt, text: mine}}
            """)
        assert trial(r)["status"] == "pass", trial(r)
        assert home_canary.read_text() == "host"
        assert not Path(f"/tmp/proctor-canary-{tag}").exists()
        assert not (tmp_path / f"pwned-{tag}").exists()
        assert not (PACKAGE / f"pwned_{tag}.py").exists()
    finally:
        home_canary.unlink()


@pytest.fixture
def run_spec(tmp_path, cli, base_image):
    counter = iter(range(1000))

    def run(text: str, *args: str, name: str = "spec.yaml", expect: int | None = None,
            env: dict | None = None, timeout: float = 180) -> dict:
        spec = tmp_path / name
        spec.parent.mkdir(parents=True, exist_ok=True)
        spec.write_text(textwrap.dedent(text))
        out_dir = f"run{next(counter)}"
        argv = ["run", name, "--output-dir", out_dir, "-q", "--backend", "docker", *args]
        if "--agent" not in args:
            argv += ["--agent", "oracle"]
        proc = cli(*argv, env=env, timeout=timeout)
        assert "Traceback" not in proc.stderr, proc.stderr
        if expect is not None:
            assert proc.returncode == expect, proc.stdout + proc.stderr
        path = tmp_path / out_dir / "results.json"
        assert path.exists(), proc.stdout + proc.stderr
        return json.loads(path.read_text())
    return run


def test_checks_run_in_the_container_as_the_grader(run_spec, tmp_path):
    """Issue 25.1 on docker: a check's command runs in the container as uid 65533 with its
    own HOME and TMPDIR, cannot write the agent's files, leaves nothing for the next check;
    a `runs_in: host` script runs in a local grader box over the container's places."""
    from tests.helpers.security import trial

    (tmp_path / "checks").mkdir()
    (tmp_path / "checks" / "host.py").write_text(
        "import json, os, sys\nctx = json.load(sys.stdin)\n"
        "ok = os.getuid() == 65533 and open(os.path.join(ctx['workspace_path'], "
        "'answer.txt')).read() == 'right\\n'\n"
        "print(json.dumps({'passed': ok, 'reason': str(os.getuid())}))\n")
    r = run_spec("""
        version: 1
        id: dgrader
        task: {prompt: answer}
        agent: {type: oracle}
        solution: ["echo right > answer.txt"]
        invariants:
          tamper:
            description: tries to leave things for the next check
            check:
              type: command_exit
              command: >-
                echo wrong > answer.txt 2>/dev/null; echo x > $HOME/left; echo y > $TMPDIR/left;
                test "$(id -u)" = 65533
          unchanged:
            description: the next check finds nothing of it
            check:
              type: command_exit
              command: >-
                grep -qx right answer.txt && test ! -e $HOME/left && test ! -e $TMPDIR/left &&
                ! touch answer.txt 2>/dev/null
          host:
            description: a host script in a local grader box
            check: {type: custom, script: checks/host.py, runs_in: host}
        """)
    t = trial(r)
    assert t["status"] == "pass", [c for c in t["checks"] if not c["passed"]]


def test_the_containers_keeper_is_out_of_the_agents_reach(run_spec):
    """The process that holds a container up is spared by every kill: an agent that could
    trace it could outlive the trial through it. It runs as root (the agent's uid cannot open
    its /proc entries, let alone trace it); the twin: the agent's own background process."""
    from tests.helpers.security import trial

    probe = ("sleep 300 & mine=$!; for p in /proc/[0-9]*; do "
             "[ \\\"$(cat $p/cmdline 2>/dev/null | tr '\\\\0' ' ')\\\" = 'sleep 2147483647 ' ] "
             "&& keeper=${p#/proc/}; done; echo keeper=$keeper > seen.txt; "
             "cat /proc/$keeper/environ >/dev/null 2>&1 && echo keeper-environ >> seen.txt; "
             "ls /proc/$keeper/root/ >/dev/null 2>&1 && echo keeper-root >> seen.txt; "
             "cat /proc/$mine/environ >/dev/null 2>&1 && echo own-environ >> seen.txt; true")
    r = run_spec(f"""
        cli: sh
        tasks:
          - id: keeper
            intent: reach the keeper
            solution: ["{probe}"]
            assert:
              - file_contains: {{path: seen.txt, text: own-environ}}
              - verify: {{run: "grep -q 'keeper=[0-9]' seen.txt && ! grep -q 'keeper-' seen.txt"}}
        """)
    assert trial(r)["status"] == "pass", trial(r)
