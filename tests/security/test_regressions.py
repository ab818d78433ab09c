"""proctor itself never loses user data or results, whatever the spec says."""

from __future__ import annotations

import pytest

from tests.security.conftest import trial


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
