"""A trial's init (PID 1 of its PID namespace) is a clone of the box's spawner that shares its
memory (spawner.c, `init_start`), not a fork: no page tables copied per trial, no copy-on-write
faults after. Trial after trial (its stack is free again once the last init is reaped), and
a trial still gets its own /proc and PID namespace, its processes killed whole with it."""

from __future__ import annotations

import ctypes
import os

import pytest

from tests.helpers.box import comm, trial_inits

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


def _areas(pid: int, flag: str | None = None) -> list[tuple[int, int]]:
    """Its memory areas (start, end), those whose VmFlags hold `flag` if given (smaps)."""
    found, area = [], None
    with open(f"/proc/{pid}/smaps") as f:
        for line in f:
            head = line.split(None, 1)[0]
            if "-" in head and not head.endswith(":"):
                start, end = head.split("-")
                area = (int(start, 16), int(end, 16))
                if flag is None:
                    found.append(area)
            elif head == "VmFlags:" and flag is not None and flag in line.split()[1:]:
                found.append(area)
    return found


async def test_the_init_stacks_are_not_copied_into_the_spawners_forks(box, tmp_path):
    """A tracer is a fork of the spawner made while the trial's init lives on one of the
    spawner's init stacks: those are marked do-not-copy (VmFlags `dc`, MADV_DONTFORK), so
    the tracer has no copy of them and the init's stack pages never become copy-on-write."""
    spawner = box.spawner_pid
    await box.spawner.new_trial()
    fd = os.open(tmp_path / "t", os.O_WRONLY | os.O_CREAT, 0o600)
    try:  # its tracer stays, idle, for the trial's next command
        res = await box.spawner.run(["/bin/true"], env={}, cwd="/", timeout=10, trace_fd=fd)
    finally:
        os.close(fd)
    assert res.exit_code == 0, res
    (init,) = trial_inits(spawner)
    with open(f"/proc/{spawner}/task/{spawner}/children") as f:
        tracers = [int(p) for p in f.read().split() if comm(p) == "tracer"]
    assert tracers, "no idle tracer"
    stacks = sum(end - start for start, end in _areas(spawner, "dc"))
    assert stacks >= 4 * 64 * 1024  # INIT_STACKS x INIT_STACK_SIZE
    try:
        with open(f"/proc/{init}/syscall") as f:  # ... SP PC: where the init's stack is
            sp = int(f.read().split()[-2], 16)
    except (OSError, ValueError, IndexError):
        sp = None
    if sp is not None:
        assert any(start <= sp < end for start, end in _areas(spawner, "dc")), hex(sp)
    for tracer in tracers:
        assert not [a for a in _areas(tracer) for s, e in _areas(spawner, "dc")
                    if a[0] < e and s < a[1]]  # nothing of them in the fork
