"""A trial's PID namespace (sandbox/spawner.c): made as soon as the trial begins (NEWTRIAL
answered), before its first command, and a new one for every trial; the last trial's
processes never share it. Against a real box, through the spawner's own requests."""

from __future__ import annotations

import asyncio
import os

from tests.helpers.box import trial_inits

PATH = {"PATH": "/usr/bin:/bin"}


async def _one_init(spawner: int, besides: list[int] | None = None) -> list[int]:
    """The one init there is once those in `besides` (killed) are reaped and a new one made
    (it is made just after NEWTRIAL is answered)."""
    for _ in range(300):
        inits = trial_inits(spawner)
        if len(inits) == 1 and inits[0] not in (besides or []):
            return inits
        await asyncio.sleep(0.01)
    return trial_inits(spawner)


async def test_a_trial_has_its_pid_namespace_before_its_first_command(box):
    spawner = box.spawner
    await spawner.new_trial()
    first = await _one_init(box.spawner_pid)
    assert len(first) == 1, first  # made with the trial, before any command
    ns = os.readlink(f"/proc/{first[0]}/ns/pid")
    res = await spawner.run(["/bin/sh", "-c", "echo $$; ls /proc | grep -c '^[0-9]'; "
                             "readlink /proc/self/ns/pid"], env=PATH, cwd="/", timeout=10)
    pid, count, seen = res.stdout.split()
    # The command is the namespace's second process; only the init, it and its ls (and grep)
    assert (res.exit_code, pid) == (0, "2"), res
    assert int(count) <= 4 and seen == ns, res.stdout
    await spawner.run(["/bin/sh", "-c", "sleep 300 &"], env=PATH, cwd="/", timeout=10)

    await spawner.new_trial()  # the next trial: the last one's init (and sleep) killed
    second = await _one_init(box.spawner_pid, first)
    assert len(second) == 1 and second != first, (first, second)
    assert os.readlink(f"/proc/{second[0]}/ns/pid") != ns
    res = await spawner.run(["/bin/sh", "-c", "echo $$; ps -eo comm= | sort | tr '\\n' ' '"],
                            env=PATH, cwd="/", timeout=10)
    assert res.stdout.split()[0] == "2" and "sleep" not in res.stdout, res.stdout


async def test_a_trial_that_ran_nothing_leaves_one_init(box):
    """Trials that start nothing (the nop agent) do not pile up namespaces."""
    for _ in range(5):
        await box.spawner.new_trial()
    assert len(await _one_init(box.spawner_pid)) == 1


async def test_each_trial_sees_its_own_proc_and_the_last_ones_are_unmounted_in_batches(box):
    """The last trial's /proc is moved onto a pile under the box's /proc, unmounted every 32
    trials (spawner.c PILE_SIZE): over 70 trials each command sees its own namespace's /proc,
    and the mounts at and under /proc rise by one a trial to at most 32 piled, then fall."""
    spawner = box.spawner
    counts, namespaces = [], []
    for _ in range(70):
        await spawner.new_trial()
        res = await spawner.run(
            ["/bin/sh", "-c", "echo $$; readlink /proc/$$/ns/pid; "
             "awk '$5 ~ \"^/proc(/|$)\"' /proc/self/mountinfo | wc -l; "
             "ls -a /proc/fs | grep -cx '[0-9]*' || :"],
            env=PATH, cwd="/", timeout=10)
        assert len(res.stdout.split()) == 4, res
        pid, own_ns, mounts, piled_seen = res.stdout.split()
        assert piled_seen == "0", res  # the pile is under the box's /proc, no path of ours
        # Its own namespace's /proc: in a last trial's, /proc/2 would be gone (or another's).
        assert (res.exit_code, pid) == (0, "2"), res
        namespaces.append(own_ns)
        counts.append(int(mounts))
    assert all(a != b for a, b in zip(namespaces, namespaces[1:], strict=False)), namespaces
    piled = [b - a for a, b in zip(counts, counts[1:], strict=False)]
    assert piled.count(1) >= 60 and max(counts) - min(counts) <= 33, counts
    assert sum(1 for step in piled if step < 0) == 2, counts  # unmounted twice, all at once
