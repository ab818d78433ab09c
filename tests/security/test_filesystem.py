"""Filesystem: the agent writes only its own workspace, HOME and TMPDIR, and sees nothing of
the host beyond the system directories."""

from __future__ import annotations

import json
import os
import tempfile
import uuid
from pathlib import Path

import pytest

import proctor
from tests.helpers.security import run_texts, trial

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


@pytest.fixture
def root_only_file():
    """A 0600 root-owned file under /opt, which the box shows read-only (like a host's
    licence key or service credential): the agent's uid cannot read it."""
    if os.geteuid() != 0:
        pytest.skip("needs root to make a root-only file under /opt")
    fd, path = tempfile.mkstemp(prefix="proctor-root-only-", dir="/opt")
    os.write(fd, b"ROOT-ONLY-VALUE\n")
    os.close(fd)
    os.chmod(path, 0o600)
    yield path
    os.unlink(path)


def test_proctor_reads_the_agents_files_with_the_agents_rights(run_spec, tmp_path,
                                                                root_only_file):
    """Issue 25.2: a link to a root-only file under /opt was resolved inside the box but
    opened by proctor as root, and file_contains quoted it into results.json, the store and
    the trace. Now proctor opens it as the agent would, and is refused as the agent is; the
    honest twin reads a world-readable system file through a link."""
    r = run_spec(f"""
        cli: sh
        tasks:
          - id: link
            intent: link out
            solution: ["cat {root_only_file} > got.txt 2>&1; ln -s {root_only_file} answer.txt; ln -s {root_only_file} other.txt"]
            assert:
              - file_contains: {{path: answer.txt, text: ROOT-ONLY-VALUE}}
              - file_contains: {{path: got.txt, text: Permission denied}}
              - file_contains: {{path: other.txt, text: ROOT}}
        """)
    t = trial(r)
    assert t["status"] == "fail", t
    assert "ROOT-ONLY-VALUE" not in run_texts(tmp_path / "run0")
    backend = json.loads((tmp_path / "run0" / "run.json").read_text())["options"]["backend"]
    if backend == "local":  # a container has the image's /opt: no such file there
        assert "ermission denied" in t["checks"][0]["message"], t["checks"][0]
        assert t["checks"][1]["passed"], t["checks"][1]  # the agent was refused too
    honest = run_spec("""
        cli: sh
        tasks:
          - id: link
            intent: link to a readable file
            solution: ["ln -s /etc/os-release answer.txt"]
            assert:
              - file_contains: {path: answer.txt, text: "ID="}
              - file_exists: answer.txt
        """)
    assert trial(honest)["status"] == "pass", trial(honest)


def test_a_locked_directory_does_not_make_a_file_absent(run_spec):
    """With the agent's rights, a path under a directory the agent made unsearchable cannot
    be seen; that is never taken for "absent" (file_absent would pass on a planted file)."""
    spec = """
        version: 1
        id: locked
        task: {{prompt: x}}
        agent: {{type: oracle}}
        solution: ["mkdir d && {make} && chmod 000 d"]
        invariants:
          gone: {{description: x, check: {{type: file_absent, path: d/forbidden.txt}}}}
        """
    t = trial(run_spec(spec.format(make="echo x > d/forbidden.txt")))
    assert t["status"] == "fail", t
    assert "cannot tell whether d/forbidden.txt exists" in t["checks"][0]["message"]
    honest = trial(run_spec(spec.format(make="true").replace(" && chmod 000 d", "")))
    assert honest["status"] == "pass", honest
