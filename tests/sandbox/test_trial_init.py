"""A trial's init (PID 1 of its PID namespace) is a clone of the box's spawner that shares its
memory (spawner.c, `init_start`), not a fork: no page tables copied per trial, no copy-on-write
faults after. Trial after trial (its stack is free again once the last init is reaped), and
a trial still gets its own /proc and PID namespace, its processes killed whole with it."""

from __future__ import annotations

import ctypes
import os

import pytest

from tests.helpers.box import trial_inits

SYS_KCMP = {"x86_64": 312, "aarch64": 272}.get(os.uname().machine)
KCMP_VM = 1


def _same_memory(a: int, b: int) -> bool:
    libc = ctypes.CDLL(None, use_errno=True)
    res = libc.syscall(SYS_KCMP, a, b, KCMP_VM, 0, 0)
    if res < 0:
        pytest.skip(f"kcmp: {os.strerror(ctypes.get_errno())}")
    return res == 0


async def test_each_trials_init_shares_the_spawners_memory(box):
    if SYS_KCMP is None:
        pytest.skip("kcmp's number unknown here")
    spawner = box.spawner_pid
    seen, namespaces = set(), set()
    for _ in range(10):  # more trials than the spawner has stacks for its inits
        await box.spawner.new_trial()
        await box.spawner.ping(10)  # its PID namespace made (right after the answer)
        (init,) = trial_inits(spawner)  # the last trial's is reaped (kill_all below waits)
        assert init not in seen
        seen.add(init)
        assert _same_memory(spawner, init)
        left = "sleep 30 & " if len(seen) % 5 == 0 else ""  # (killing a sleep: 0.2 s)
        res = await box.spawner.run(["/bin/sh", "-c", "echo $$; readlink /proc/self/ns/pid; "
                                     f"{left}echo started"],
                                    env={"PATH": "/usr/bin:/bin"}, cwd="/", timeout=10)
        pid, ns, started = res.stdout.split()
        assert res.exit_code == 0 and started == "started", res
        assert int(pid) == 2  # the first process after its init, in a namespace of its own
        namespaces.add(ns)
        assert await box.spawner.kill_all(10) == (1 if left else 0)  # killed with the trial
    assert len(namespaces) == 10
