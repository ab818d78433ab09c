"""Check messages and errors name paths relative to the workspace, never proctor's temp dir,
and read the same whether the trial ran in the box or not (record/paths.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from proctor.record.paths import PathNames
from tests.helpers.cli import results

SCENARIO = """
version: 1
id: paths
description: messages that could carry temp paths
setup:
  files:
    a.txt: "hello\\n"
task:
  prompt: do nothing
agent: {type: llm, model: mock/done}
invariants:
  missing:
    description: an absolute path into the workspace
    check: {type: file_exists, path: "{{workdir}}/sub/missing.txt"}
  content:
    description: a file read by its absolute path
    check: {type: file_content, path: "{{workdir}}/a.txt", contains: bye}
  ls:
    description: a command that prints the workspace's path
    check: {type: command_exit, command: "ls $PWD/nothing"}
  host:
    description: a host check whose traceback names the workspace
    check: {type: custom, script: crash.py, runs_in: host}
  box:
    description: a sandbox check (run from a temp copy)
    check: {type: custom, script: crash.py, runs_in: sandbox}
"""
CRASH = 'import os\nopen(os.path.join(os.environ["PROCTOR_WORKDIR"], "nope", "x.txt"))\n'


@pytest.mark.slow
def test_messages_are_the_same_in_the_box_and_out_of_it(cli, spec, tmp_path):
    spec(SCENARIO, "scenario.yaml")
    (tmp_path / "crash.py").write_text(CRASH)
    messages = {}
    for isolation in ("auto", "none"):
        out = cli("run", "scenario.yaml", "--isolation", isolation, "--output-dir", isolation,
                  "--format", "junit,md,html")
        assert out.returncode == 1, out.stderr
        run = tmp_path / isolation
        (trial,) = results(run)["trials"]
        messages[isolation] = {c["name"]: c["message"] for c in trial["checks"]}
        for path in [*run.glob("*.*"), *run.glob("trials/*/*.jsonl")]:
            assert "/proctor-" not in path.read_text(), path  # no temp dir anywhere
        assert ".proctor-check-" not in json.dumps(trial)
    assert messages["auto"] == messages["none"]
    m = messages["auto"]
    assert m["missing"] == "file not found: sub/missing.txt; the workspace holds: a.txt"
    assert m["content"].startswith("a.txt (6 bytes) does not contain 'bye'")
    assert m["ls"].endswith("ls: cannot access 'nothing': No such file or directory")
    assert m["host"].endswith("No such file or directory: 'nope/x.txt'")
    assert 'File "crash.py", line 2' in m["box"]  # the script, not its temp copy


def test_path_names():
    class Box:  # a sandbox's part PathNames reads (sandbox.base.Sandbox)
        from proctor.sandbox.base import Capabilities

        capabilities = Capabilities(host_files=True)
        env: dict[str, str] = {}
        workdir = "/workspace"
        places = [("/workspace", Path("/tmp/proctor-r-x/t.r0/work")),
                  ("/home/agent", Path("/tmp/proctor-r-x/t.r0/home"))]

    names = PathNames.for_trial(Path("/tmp/proctor-r-x/t.r0"), Box())
    assert names("cannot access '/workspace/a/b.txt'") == "cannot access 'a/b.txt'"
    assert names("cd /workspace && ls /workspace/") == "cd . && ls ./"
    assert names("/tmp/proctor-r-x/t.r0/work/x: denied") == "x: denied"
    assert names("HOME=/tmp/proctor-r-x/t.r0/home/.cache") == "HOME=$HOME/.cache"
    assert names("/tmp/proctor-r-x/t.r0/tmp/f /tmp/proctor-r-x/t.r0/private") == (
        "$TMPDIR/f <sandbox>/private")
    # only whole path components of these places: other paths are left alone
    for same in ("/workspace2/a", "/srv/workspace/a", "/tmp/proctor-r-x/t.r0.other/a",
                 "/home/agent/.gitconfig", "/tmp/other"):
        assert names(same) == same
    assert names(None) is None and names("") == ""
