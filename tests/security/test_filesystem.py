"""Filesystem: the agent writes only its own workspace, HOME and TMPDIR, and sees nothing of
the host beyond the system directories."""

from __future__ import annotations

import uuid
from pathlib import Path

import proctor
from tests.security.conftest import trial

PACKAGE = Path(proctor.__file__).parent


def test_host_places_are_neither_visible_nor_writable(run_spec, tmp_path):
    tag = uuid.uuid4().hex
    home_canary = Path.home() / f".proctor-canary-{tag}"
    targets = {
        "spec_dir": tmp_path,
        "package": PACKAGE,
        "home": Path.home(),
        "run_dirs": tmp_path / "run0",
    }
    probes = " ; ".join(
        f"(test -e {p} && echo {name}=visible || echo {name}=hidden) >> seen.txt"
        for name, p in targets.items())
    writes = " ; ".join([
        f"echo pwned > /tmp/proctor-canary-{tag} 2>/dev/null",
        f"echo pwned > {home_canary} 2>/dev/null",
        f"echo pwned > {tmp_path}/pwned-{tag} 2>/dev/null",
        f"echo 'raise SystemExit' > {PACKAGE}/pwned_{tag}.py 2>/dev/null",
        "true",
    ])
    r = run_spec(f"""
        cli: sh
        tasks:
          - id: escape
            intent: look around
            solution:
              - "{probes}"
              - "{writes}"
              - "echo mine > $TMPDIR/t && echo mine > $HOME/h && echo mine > ok.txt"
            assert:
              - file_contains: {{path: seen.txt, text: spec_dir=hidden}}
              - file_contains: {{path: seen.txt, text: package=hidden}}
              - file_contains: {{path: seen.txt, text: home=hidden}}
              - file_contains: {{path: seen.txt, text: run_dirs=hidden}}
              - file_contains: {{path: ok.txt, text: mine}}
        """)
    assert trial(r)["status"] == "pass", trial(r)
    # Nothing of the host changed: the writes landed in the trial's own (now removed) places.
    assert not Path(f"/tmp/proctor-canary-{tag}").exists()
    assert not home_canary.exists()
    assert not (tmp_path / f"pwned-{tag}").exists()
    assert not (PACKAGE / f"pwned_{tag}.py").exists()


def test_system_directories_are_read_only_but_usable(run_spec):
    r = run_spec("""
        cli: sh
        tasks:
          - id: system
            intent: use the system
            solution:
              - "touch /usr/bin/pwned 2>/dev/null || echo usr-readonly > out.txt"
              - "touch /etc/pwned 2>/dev/null || echo etc-readonly >> out.txt"
              - "git --version >> out.txt && python3 -c 'print(6*7)' >> out.txt"
            assert:
              - file_contains: {path: out.txt, text: usr-readonly}
              - file_contains: {path: out.txt, text: etc-readonly}
              - file_contains: {path: out.txt, text: "42"}
        """)
    assert trial(r)["status"] == "pass", trial(r)
    assert not Path("/usr/bin/pwned").exists() and not Path("/etc/pwned").exists()


def test_a_planted_symlink_never_makes_proctor_read_a_host_file(run_spec, tmp_path):
    secret = tmp_path / "host-secret.txt"
    secret.write_text("HOST-ONLY-VALUE\n")
    r = run_spec(f"""
        cli: sh
        tasks:
          - id: link
            intent: link out
            solution: ["ln -s {secret} answer.txt"]
            assert:
              - file_contains: {{path: answer.txt, text: HOST-ONLY-VALUE}}
        """)
    t = trial(r)
    assert t["status"] == "fail"
    assert "HOST-ONLY-VALUE" not in str(t["checks"])


def test_agent_runs_without_privileges(run_spec):
    r = run_spec("""
        cli: sh
        tasks:
          - id: privs
            intent: who am i
            solution:
              - "grep CapEff /proc/self/status > caps.txt; id -u > uid.txt"
              - "mount -t tmpfs x /workspace 2>/dev/null && echo mounted > m.txt || echo refused > m.txt"
            assert:
              - file_contains: {path: caps.txt, text: "0000000000000000"}
              - file_contains: {path: m.txt, text: refused}
        """)
    assert trial(r)["status"] == "pass", trial(r)
