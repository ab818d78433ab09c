"""A box's processes are SCHED_BATCH (sandbox/spawner.c): the same share of the CPU as any
process, but one woken by proctor's request or a pipe never preempts proctor's event loop,
which runs every trial. The spawner and the commands it starts, traced or not, inherit it."""

from __future__ import annotations

import os

PATH = {"PATH": "/usr/bin:/bin"}
SCHED_BATCH = 3  # linux/sched.h
POLICY = "sed 's/.*) //' /proc/self/stat | cut -d' ' -f39"  # field 41: the policy


def _policy(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[38])


async def test_the_box_and_its_commands_are_sched_batch(box):
    assert _policy(os.getpid()) != SCHED_BATCH  # proctor itself is not
    assert _policy(box.spawner_pid) == SCHED_BATCH
    await box.spawner.new_trial()
    plain = await box.spawner.run(["/bin/sh", "-c", POLICY], env=PATH, cwd="/", timeout=10)
    assert (plain.exit_code, plain.stdout.strip()) == (0, str(SCHED_BATCH)), plain
    trace = os.memfd_create("trace", os.MFD_CLOEXEC)
    try:
        traced = await box.spawner.run(["/bin/sh", "-c", POLICY], env=PATH, cwd="/",
                                       timeout=10, trace_fd=trace)
    finally:
        os.close(trace)
    assert (traced.exit_code, traced.stdout.strip()) == (0, str(SCHED_BATCH)), traced
