"""proctor itself never loses user data or results, whatever the spec says."""

from __future__ import annotations

import json
import os
import textwrap

import pytest

from tests.helpers.security import trial


@pytest.mark.parametrize("isolation", ["auto", "none"])
def test_workdir_dot_never_deletes_the_spec_directory(run_spec, tmp_path, isolation):
    (tmp_path / "precious.txt").write_text("keep me\n")
    r = run_spec("""
        cli: sh
        workdir: .
        tasks:
          - id: t
            intent: work here
            solution: ["echo hi > made.txt"]
            assert: [{file_contains: {path: made.txt, text: hi}}]
        """, "--isolation", isolation)
    assert (tmp_path / "precious.txt").read_text() == "keep me\n"
    assert (tmp_path / "spec.yaml").exists()
    t = trial(r)
    if isolation == "auto":  # a private directory mounted at that path: the trial runs
        assert t["status"] == "pass", t
    else:  # proctor will not use (and later delete) a directory it did not create
        assert t["status"] == "error" and "already exists" in t["error"], t


def test_task_ids_that_look_alike_get_their_own_trials(run_spec):
    r = run_spec("""
        cli: sh
        tasks:
          - id: build app
            intent: one
            solution: ["echo one > f.txt"]
            assert: [{file_contains: {path: f.txt, text: one}}]
          - id: build/app
            intent: two
            solution: ["echo two > f.txt"]
            assert: [{file_contains: {path: f.txt, text: two}}]
        """)
    ids = [t["id"] for t in r["trials"]]
    assert len(ids) == 2 and len(set(ids)) == 2, ids
    assert [t["status"] for t in r["trials"]] == ["pass", "pass"]


BAD_NAME = """
    version: 1
    id: {id}
    task: {{prompt: x}}
    agent: {{type: oracle}}
    solution:
      - "{make}echo {answer} > answer.txt"
    invariants:
      answer:
        description: the answer file says yes
        check: {{type: file_content, path: answer.txt, contains: "yes"}}
      listed:
        description: a missing file (its message lists the workspace)
        check: {{type: file_exists, path: missing.txt}}
      tested:
        description: a command over the names
        check: {{type: command_exit, command: "ls"}}
    forbidden:
      file_writes_outside: [answer.txt]
    """


def test_a_name_that_is_not_utf8_costs_nothing_but_its_own_verdict(run_spec, cli, tmp_path):
    """Issue 25.6: a file named b"bad\\xff\\xfe" plus failing checks once made signing the
    result raise, which took the whole run down (no results.json) and `--resume` with it.
    Now that trial is judged like any other, its name shown byte for byte, and the honest
    trial beside it passes; every report is written and --resume finishes."""
    (tmp_path / "specs").mkdir()
    (tmp_path / "specs" / "hostile.yaml").write_text(textwrap.dedent(BAD_NAME.format(
        id="hostile", make="printf x > \\\"$(printf 'bad\\\\377\\\\376')\\\"; ", answer="no")))
    (tmp_path / "specs" / "honest.yaml").write_text(textwrap.dedent(BAD_NAME.format(
        id="honest", make="", answer="yes")).replace("missing.txt", "answer.txt"))
    proc = cli("run", "specs", "--agent", "oracle", "--output-dir", "run", "-q",
               "--format", "md,html,junit", "--concurrency", "1", timeout=180)
    assert "Traceback" not in proc.stderr, proc.stderr
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    by = {t["task_id"]: t for t in results["trials"]}
    assert by["honest"]["status"] == "pass", by["honest"]
    hostile = by["hostile"]
    assert hostile["status"] == "fail", hostile
    [rule] = hostile["forbidden"]
    assert "bad\\xff\\xfe" in rule["details"], rule
    listed = [c for c in hostile["checks"] if c["name"] == "listed"][0]
    assert "bad\\xff\\xfe" in listed["message"], listed
    for report in ("summary.md", "report.html", "junit.xml"):
        assert (tmp_path / "run" / report).exists(), report
    audit = (tmp_path / "run" / "trials" / hostile["id"] / "audit.jsonl").read_text()
    # The audit log keeps the name itself: its bytes come back with os.fsencode.
    paths = [json.loads(line)["details"].get("path") for line in audit.splitlines()]
    assert any(p is not None and os.fsencode(p) == b"bad\xff\xfe" for p in paths), paths
    again = cli("run", "--resume", "run", "-q", timeout=180)
    assert "Traceback" not in again.stderr and again.returncode == 1, again.stderr
    shown = cli("show", "run", hostile["id"])
    assert shown.returncode == 0 and "bad\\xff\\xfe" in shown.stdout, shown.stdout + shown.stderr
