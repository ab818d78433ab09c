"""A trial's traced commands share their tracers (spawner.c: a tracer serves one trial and
traces one command's tree at a time, then takes the trial's next command, given by proctor
on the tracer's own socket, spawn.py): each command's trace is still exactly its own, with
its own capture budget; a command that left something running keeps its tracer, recording
to the end, while the next gets another; killing one command leaves the other traced; a
tracer proctor sent a KILL for is never given another command, even when the command ended
first; a trial ended with a tracer busy lets it go; the next trial's commands get new
tracers, in its PID namespace (that a traced command holds no descriptor of its tracer's:
tests/security/test_tracer_memory.py). Against a real box, through the spawner's own
requests."""

from __future__ import annotations

import asyncio
import os
import signal
import time

from proctor.sandbox.trace import parse_trace

PATH = {"PATH": "/usr/bin:/bin"}


def _children_named(spawner: int, name: str) -> set[int]:
    """The spawner's children of that name (tracer, init)."""
    with open(f"/proc/{spawner}/task/{spawner}/children") as f:
        children = [int(pid) for pid in f.read().split()]
    found = set()
    for pid in children:
        try:
            with open(f"/proc/{pid}/comm") as f:
                if f.read().strip() == name:
                    found.add(pid)
        except OSError:
            continue  # gone meanwhile
    return found


def _tracers(spawner: int) -> set[int]:
    return _children_named(spawner, "tracer")


async def _traced(box, command: str, path, timeout: float = 10,
                  capture: tuple[int, int] | None = None):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        return await box.spawner.run(["/bin/sh", "-c", command], env=PATH, cwd="/",
                                     timeout=timeout, trace_fd=fd, capture=capture)
    finally:
        os.close(fd)


def _argvs(path) -> list[list[str]]:
    return [p.argv for p in parse_trace(path).programs]


async def _finished(path) -> bool:
    for _ in range(500):
        if parse_trace(path).finished:
            return True
        await asyncio.sleep(0.01)
    return False


async def test_a_trials_commands_share_a_tracer_each_traced_as_its_own(box, tmp_path):
    await box.spawner.new_trial()
    budget = (100_000, 1000)  # 1,000 bytes kept in all, per command
    first = await _traced(box, "head -c 3000 /dev/zero | tr '\\0' a", tmp_path / "t1",
                          capture=budget)
    assert first.exit_code == 0 and len(first.stdout) == 3000, first
    tracers = _tracers(box.spawner_pid)
    assert len(tracers) == 1, tracers  # idle, kept for the trial's next command
    second = await _traced(box, "echo second", tmp_path / "t2", capture=budget)
    assert second.exit_code == 0, second
    assert _tracers(box.spawner_pid) == tracers  # the same tracer traced it

    one, two = parse_trace(tmp_path / "t1"), parse_trace(tmp_path / "t2")
    assert one.finished and two.finished
    assert sorted(a[0] for a in _argvs(tmp_path / "t1")) == ["/bin/sh", "head", "tr"]
    assert _argvs(tmp_path / "t2") == [["/bin/sh", "-c", "echo second"]]  # nothing of t1
    assert sum(len(w.data) for w in one.writes) == 1000  # the first used its whole budget
    # ... and the second has a whole one of its own
    assert [(w.data, w.size) for w in two.writes] == [(b"second\n", 7)], two.writes


async def test_a_tree_left_running_keeps_its_tracer_and_the_next_command_gets_another(
        box, tmp_path):
    await box.spawner.new_trial()
    left = await _traced(box, "sleep 0.5 & echo started", tmp_path / "left")
    assert left.exit_code == 0 and left.stdout == "started\n", left
    assert not parse_trace(tmp_path / "left").finished  # its sleep still traced
    before = _tracers(box.spawner_pid)
    nxt = await _traced(box, "echo next", tmp_path / "next")
    assert nxt.exit_code == 0 and nxt.stdout == "next\n", nxt
    assert len(_tracers(box.spawner_pid) - before) == 1  # another tracer: the first is busy
    assert _argvs(tmp_path / "next") == [["/bin/sh", "-c", "echo next"]]
    assert await _finished(tmp_path / "left")
    assert ["sleep", "0.5"] in _argvs(tmp_path / "left")  # recorded to its end
    assert ["sleep", "0.5"] not in _argvs(tmp_path / "next")


def _pipes_and_memfds(pid: int) -> list[str]:
    found = []
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith(("pipe:", "/memfd:")):
            found.append(target)
    return found


async def test_a_busy_tracer_holds_none_of_its_commands_descriptors(box, tmp_path):
    """Its output pipes close when the command's tree lets go of them (here: at once, the
    background sleep holds none), not when its tracer is done."""
    await box.spawner.new_trial()
    res = await _traced(box, "sleep 30 < /dev/null > /dev/null 2>&1 & echo hi", tmp_path / "t")
    assert res.exit_code == 0 and res.stdout == "hi\n", res
    busy = _tracers(box.spawner_pid)
    assert len(busy) == 1 and not parse_trace(tmp_path / "t").finished
    # Not even the pipe it reported the top's end on (written, closed): only its trace file
    assert _pipes_and_memfds(busy.pop()) == []
    await box.spawner.kill_all(10)


async def test_killing_one_command_leaves_another_running_at_once_traced(box, tmp_path):
    await box.spawner.new_trial()
    killed = asyncio.ensure_future(_traced(box, "sleep 30", tmp_path / "killed", timeout=1))
    kept = asyncio.ensure_future(_traced(box, "sleep 1.5; echo kept", tmp_path / "kept"))
    await asyncio.sleep(0.5)
    assert len(_tracers(box.spawner_pid)) >= 2  # one each
    res = await killed
    assert res.exit_code is None  # killed at its timeout
    ok = await kept
    assert ok.exit_code == 0 and ok.stdout == "kept\n", ok
    assert await _finished(tmp_path / "kept")
    assert _argvs(tmp_path / "kept") == [["/bin/sh", "-c", "sleep 1.5; echo kept"],
                                         ["sleep", "1.5"]]
    # The killed one's tracer went with it (its trace ends unfinished); nothing of the other's
    assert _argvs(tmp_path / "killed") == [["/bin/sh", "-c", "sleep 30"], ["sleep", "30"]]
    assert not parse_trace(tmp_path / "killed").finished


async def test_the_next_trials_commands_get_new_tracers_in_its_pid_namespace(box, tmp_path):
    await box.spawner.new_trial()
    first = await _traced(box, "readlink /proc/self/ns/pid", tmp_path / "t1")
    old = _tracers(box.spawner_pid)
    assert first.exit_code == 0 and old, first
    await box.spawner.new_trial()
    second = await _traced(box, "readlink /proc/self/ns/pid", tmp_path / "t2")
    assert second.exit_code == 0, second
    assert second.stdout != first.stdout  # its own trial's namespace
    for _ in range(300):  # the last trial's tracers go
        if not old & _tracers(box.spawner_pid):
            break
        await asyncio.sleep(0.01)
    assert not old & _tracers(box.spawner_pid)
    assert parse_trace(tmp_path / "t2").finished


async def test_an_idle_tracer_that_died_is_replaced(box, tmp_path):
    """Killed from outside between two commands (nothing of the trial can reach it) and
    reaped: the trial's next command gets another tracer and is traced whole. (A command
    handed over in the instant between such a death and its reaping ends as a command whose
    tracer was killed does: killed, its trace unfinished.)"""
    await box.spawner.new_trial()
    assert (await _traced(box, "true", tmp_path / "t1")).exit_code == 0
    (idle,) = _tracers(box.spawner_pid)
    os.kill(idle, signal.SIGKILL)
    for _ in range(500):  # reaped by the spawner: no longer its child
        if idle not in _tracers(box.spawner_pid):
            break
        await asyncio.sleep(0.01)
    res = await _traced(box, "echo again", tmp_path / "t2")
    assert res.exit_code == 0 and res.stdout == "again\n", res
    assert _argvs(tmp_path / "t2") == [["/bin/sh", "-c", "echo again"]]
    assert parse_trace(tmp_path / "t2").finished
    assert idle not in _tracers(box.spawner_pid)


async def test_a_tracer_killed_as_its_command_ended_is_never_given_another(box, tmp_path):
    """The race of a deadline with a command's end: its Z on its way (unread), proctor sends
    the KILL for a command it still counts as running. The tracer takes no other command
    (proctor lets it go at its Z), so the KILL, whenever the spawner takes it, kills nothing
    but a tracer nobody uses: the next command runs on another, and ends as it ends."""
    await box.spawner.new_trial()
    assert (await _traced(box, "true", tmp_path / "t0")).exit_code == 0  # a tracer, idle
    (tracer,) = _tracers(box.spawner_pid)
    fd = os.open(tmp_path / "t1", os.O_WRONLY | os.O_CREAT, 0o600)
    run = asyncio.ensure_future(box.spawner.run(["/bin/true"], env=PATH, cwd="/", timeout=10,
                                                trace_fd=fd))
    while not box.spawner.busy or tracer not in _tracers(box.spawner_pid):
        await asyncio.sleep(0)
    await asyncio.sleep(0)  # the order sent
    time.sleep(0.3)  # the loop held: the command ends, its Z waits unread
    box.spawner.kill(next(iter(box.spawner._tracers._busy)))  # as a deadline would, racing the Z
    res = await run
    os.close(fd)
    assert res.exit_code == 0, res  # it had ended: its Z says so
    for _ in range(500):  # killed (the KILL taken after the Z), or let go: gone either way
        if tracer not in _tracers(box.spawner_pid):
            break
        await asyncio.sleep(0.01)
    assert tracer not in _tracers(box.spawner_pid)
    nxt = await _traced(box, "echo next", tmp_path / "t2")
    assert nxt.exit_code == 0 and nxt.stdout == "next\n", nxt  # not killed: another tracer
    assert parse_trace(tmp_path / "t2").finished


async def test_a_trial_ended_with_its_tracer_busy_lets_it_go(box, tmp_path):
    """kill_all ends the trial's PID namespace while a tracer records what a command left
    running: that tracer is let go once the tree is gone (never given a command in a PID
    namespace that is no more), and the trial's next command runs on a new one, in the new
    namespace, traced whole."""
    await box.spawner.new_trial()
    left = await _traced(box, "sleep 30 & readlink /proc/self/ns/pid", tmp_path / "left")
    assert left.exit_code == 0, left
    busy = _tracers(box.spawner_pid)
    assert len(busy) == 1 and box.spawner.tracers == 1
    assert await box.spawner.kill_all(10) >= 1
    assert await _finished(tmp_path / "left")  # the sleep killed: the tree is gone
    for _ in range(500):
        if not busy & _tracers(box.spawner_pid):
            break
        await asyncio.sleep(0.01)
    assert not busy & _tracers(box.spawner_pid) and box.spawner.tracers == 0
    nxt = await _traced(box, "readlink /proc/self/ns/pid", tmp_path / "next")
    assert nxt.exit_code == 0 and nxt.stdout != left.stdout, (nxt, left)
    assert parse_trace(tmp_path / "next").finished


async def test_a_trial_whose_init_died_gets_new_tracers(box, tmp_path):
    """The trial's init killed from outside (only the kernel's OOM killer could: nothing of
    the trial can signal it) takes its PID namespace with it. The idle tracer, whose tops
    start there, cannot start the next command (126, said on its stderr) and is let go; the
    command after runs on a new tracer, in a new PID namespace, traced whole."""
    await box.spawner.new_trial()
    assert (await _traced(box, "true", tmp_path / "t0")).exit_code == 0
    (idle,) = _tracers(box.spawner_pid)
    (init,) = _children_named(box.spawner_pid, "init")
    os.kill(init, signal.SIGKILL)
    for _ in range(500):  # reaped by the spawner
        if init not in _children_named(box.spawner_pid, "init"):
            break
        await asyncio.sleep(0.01)
    lost = await _traced(box, "echo one", tmp_path / "t1")
    assert lost.exit_code == 126 and "cannot start" in lost.stderr, lost
    again = await _traced(box, "echo two", tmp_path / "t2")
    assert again.exit_code == 0 and again.stdout == "two\n", again
    assert parse_trace(tmp_path / "t2").finished
    for _ in range(500):  # the old tracer let go: it exits
        if idle not in _tracers(box.spawner_pid):
            break
        await asyncio.sleep(0.01)
    assert idle not in _tracers(box.spawner_pid)
