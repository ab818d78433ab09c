"""Limits: a memory hog or a fork bomb costs its own trial (`error`, with the cause), never the
run or the machine."""

from __future__ import annotations

import pytest

from tests.helpers.security import trial


def test_a_memory_hog_is_stopped_by_the_default_limit(run_spec):
    r = run_spec("""
        cli: sh
        tasks:
          - id: hog
            intent: use memory
            solution: ["python3 -c 'b = bytearray(2 * 1024**3); print(len(b))' > n.txt"]
            assert: [{exit_code: 0}]
          - id: modest
            intent: use memory
            solution: ["python3 -c 'b = bytearray(50 * 1024**2); print(len(b))' > n.txt"]
            assert: [{file_contains: {path: n.txt, text: "52428800"}}]
        """)
    hog = trial(r, "hog")
    assert hog["status"] == "error" and "out of memory" in hog["error"], hog
    assert trial(r, "modest")["status"] == "pass"


def test_resources_memory_sets_the_limit(run_spec):
    r = run_spec("""
        version: 1
        id: small
        task: {prompt: use memory}
        agent: {type: oracle}
        resources: {memory: 64m}
        solution: ["python3 -c 'b = bytearray(200 * 1024**2)'"]
        invariants:
          ran: {description: x, check: {type: command_exit, command: "true"}}
        """)
    t = trial(r)
    assert t["status"] == "error" and "64 MiB" in t["error"], t


def test_a_fork_bomb_costs_only_its_trial(run_spec):
    r = run_spec("""
        cli: sh
        tasks:
          - id: bomb
            intent: fork
            timeout: 4
            solution: ["b() { b | b & }; b; sleep 3"]
            assert: [{exit_code: 0}]
          - id: after
            intent: still works
            solution: ["echo fine > f.txt"]
            assert: [{file_contains: {path: f.txt, text: fine}}]
        """, "--concurrency", "1")
    bomb = trial(r, "bomb")
    assert bomb["status"] == "error" and "process limit" in bomb["error"], bomb
    assert trial(r, "after")["status"] == "pass"


DISK = """
    version: 1
    id: disk
    task: {{prompt: fill the disk}}
    agent: {{type: oracle}}
    {resources}
    solution: ["fallocate -l {size} \\"$TMPDIR/big\\"; rc=$?; rm -f \\"$TMPDIR/big\\"; [ $rc = 0 ] && echo granted > got.txt || echo refused > got.txt"]
    invariants:
      answer: {{description: x, check: {{type: file_content, path: got.txt, contains: {expect}}}}}
    """


@pytest.mark.parametrize("resources,size,expect", [
    ("", "4G", "refused"),  # the default limit, 2 GiB
    ("", "100M", "granted"),  # the honest twin
    ("resources: {disk: 64m}", "100M", "refused"),
    ("resources: {disk: 64m}", "16M", "granted"),
])
def test_a_trial_cannot_take_more_disk_than_its_limit(run_spec, resources, size, expect):
    """Issue 25.4: there was no per-trial disk limit (`fallocate -l 4G` in $TMPDIR was granted
    by the host's file system)."""
    r = run_spec(DISK.format(resources=resources, size=size, expect=expect))
    t = trial(r)
    assert t["status"] == "pass", t
