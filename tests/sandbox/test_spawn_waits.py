"""How a box's command is waited for (spawn.py Spawner.run): its exit (the one reply) is
awaited directly, bounded by a timeout scope and a timer at the deadline, not through
wait_for(shield(...)). Whichever way the wait ends, nothing the command started is left:
killed at the deadline (and reported so), killed when the caller is cancelled."""

from __future__ import annotations

import asyncio
import os
import signal
import types

import pytest

from proctor.sandbox.spawn import START_GRACE_S
from tests.helpers.box import new_sandbox


@pytest.fixture
async def box_sandbox(tmp_path):
    sb = await new_sandbox(tmp_path / "sb")
    yield sb
    await sb.close()


async def _sleeps(sb) -> str:
    """The sleep processes in the box (`ps` run by its spawner, untraced)."""
    res = await sb.box.spawner.run(["/bin/sh", "-c", "ps -eo comm= | grep -c '^sleep' || :"],
                                   env=sb.env, cwd=sb.workdir, timeout=10)
    return res.stdout.strip()


async def _gone(sb) -> bool:
    for _ in range(100):
        if await _sleeps(sb) == "0":
            return True
        await asyncio.sleep(0.02)
    return False


async def test_a_command_cancelled_while_it_runs_is_killed(box_sandbox):
    sb = box_sandbox
    task = asyncio.ensure_future(sb.box.spawner.run(
        ["/bin/sh", "-c", "exec sleep 60"], env=sb.env, cwd=sb.workdir,
        timeout=120))
    for _ in range(200):
        if await _sleeps(sb) == "1":
            break
        await asyncio.sleep(0.02)
    assert await _sleeps(sb) == "1"
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await _gone(sb)
    assert not sb.box.spawner.busy  # nothing of it is waited for any more


async def test_a_command_past_its_deadline_is_killed_and_says_so(box_sandbox):
    sb = box_sandbox
    res = await sb.box.spawner.run(["/bin/sh", "-c", "echo before; exec sleep 60"],
                                   env=sb.env, cwd=sb.workdir, timeout=0.3)
    assert res.timed_out and res.exit_code is None and res.stdout == "before\n", res
    assert "timed out after 0.3s" in res.stderr
    assert await _gone(sb)


async def test_a_command_that_ends_in_time_is_not_timed_out(box_sandbox):
    sb = box_sandbox
    for _ in range(20):  # each start and exit answered before its deadline
        res = await sb.box.spawner.run(["/bin/sh", "-c", "echo out; echo err >&2; exit 3"],
                                       env=sb.env, cwd=sb.workdir, timeout=30)
        assert (res.exit_code, res.timed_out, res.stdout, res.stderr) == (3, False, "out\n",
                                                                          "err\n"), res
    assert not sb.box.spawner.busy


async def test_concurrent_commands_get_all_their_output_and_leave_no_pipe_watched(box_sandbox):
    """Each command's pipes are read while it runs (more than a pipe holds), through the
    box's own epoll of pipes (outpipes.py Pipes), and are no longer watched once it ended."""
    sb = box_sandbox
    script = ("head -c {n} /dev/zero | tr '\\0' {c}; head -c 100000 /dev/zero | tr '\\0' e >&2;"
              " exit {code}")
    sizes = [300_000, 200_001, 65_537, 1]
    results = await asyncio.gather(*(
        sb.box.spawner.run(["/bin/sh", "-c", script.format(n=n, c="abcd"[i], code=i)],
                           env=sb.env, cwd=sb.workdir, timeout=60)
        for i, n in enumerate(sizes)))
    for i, (n, res) in enumerate(zip(sizes, results, strict=True)):
        assert res.exit_code == i and not res.timed_out, res.stderr[-200:]
        assert res.stdout == "abcd"[i] * n and res.stderr == "e" * 100_000
    assert sb.box.spawner._pipes.readers == {}
    assert not sb.box.spawner.busy


async def test_a_short_commands_pipes_are_read_at_its_end_a_long_ones_as_it_runs(
        box_sandbox, monkeypatch):
    """A command that ends before WATCH_AFTER_S has its pipes read to their end at its exit
    (never added to the epoll of pipes); a longer one's are watched from then on, so its
    output streams to `feed` while it runs, and it is never held up by a full pipe."""
    from proctor.sandbox import outpipes, spawn

    sb = box_sandbox
    watched = []
    add = outpipes.Pipes.add
    monkeypatch.setattr(outpipes.Pipes, "add", lambda self, r: (watched.append(r), add(self, r)))
    monkeypatch.setattr(spawn, "WATCH_AFTER_S", 30.0)  # "short", however loaded the machine
    res = await sb.box.spawner.run(["/bin/sh", "-c", "echo out; echo err >&2"],
                                   env=sb.env, cwd=sb.workdir, timeout=30)
    assert (res.exit_code, res.stdout, res.stderr) == (0, "out\n", "err\n") and watched == []
    monkeypatch.setattr(spawn, "WATCH_AFTER_S", 0.01)
    fed = []
    res = await sb.box.spawner.run(
        ["/bin/sh", "-c", "echo early; head -c 200000 /dev/zero; sleep 0.5; echo late"],
        env=sb.env, cwd=sb.workdir, timeout=30, feed=lambda fd, data: fed.append(data))
    assert res.exit_code == 0 and res.stdout == "early\n" + "\0" * 200000 + "late\n"
    assert len(watched) == 2 and b"".join(fed) == res.stdout.encode()
    assert sb.box.spawner._pipes.readers == {}


async def test_a_short_commands_background_writer_does_not_hold_the_loop(box_sandbox,
                                                                        monkeypatch):
    """Hostile twin of the test above: a short command leaves `yes` writing into its pipes.
    Reading them at its exit takes a few reads at most, then the loop reads them as it does
    a long command's (other work goes on: a timer fires meanwhile); the output is cut at
    the limit and the command ends after the pipes' grace, the writer killed with it."""
    from proctor.sandbox import spawn

    sb = box_sandbox
    monkeypatch.setattr(spawn, "WATCH_AFTER_S", 30.0)
    ticks = []

    def tick() -> None:
        ticks.append(1)
        if len(ticks) < 1000:
            asyncio.get_running_loop().call_later(0.001, tick)
    tick()
    res = await sb.box.spawner.run(["/bin/sh", "-c", "yes & echo started"], env=sb.env,
                                   cwd=sb.workdir, timeout=30, limit=100_000)
    assert res.stdout.startswith("started\ny\n") or res.stdout.startswith("y\n")
    assert res.truncated and len(ticks) > 10
    assert sb.box.spawner._pipes.readers == {}
    await sb.kill_processes()


def test_reading_a_pipe_at_the_commands_end_is_bounded(monkeypatch):
    """A pipe that never runs dry (a writer faster than proctor) is read a few times at the
    command's exit, then left to the loop: `drain_all` always returns."""
    from proctor import proc
    from proctor.sandbox.outpipes import PipeReader, Pipes

    loop = asyncio.new_event_loop()
    r, w = os.pipe()
    try:
        pipes = Pipes(loop)
        cap = proc.Capture(loop, 1_000_000, None)
        reader = PipeReader(pipes, r, 1, cap)
        calls = []
        monkeypatch.setattr(os, "read", lambda fd, n: calls.append(fd) or b"y\n" * 100)
        reader.drain_all()
        assert 1 <= len(calls) <= 8 and reader.watched and reader.open
        monkeypatch.undo()
        reader.close()
        pipes.close()
    finally:
        os.close(w)
        loop.close()


async def test_a_command_that_cannot_start_says_why_at_once(tmp_path):
    """The spawner cannot fork (the box's process limit is reached): its E reply ends the
    wait with the error, not the deadline (the start is not awaited on its own)."""
    sb = await new_sandbox(tmp_path / "sb", pids=24)
    try:
        if sb.cgroup is None or "pids" not in sb.cgroup.dirs:
            pytest.skip("no pids cgroup here")
        current = sb.cgroup.dirs["pids"] / "pids.current"
        await sb.box.spawner.run(["/bin/true"], env=sb.env, cwd=sb.workdir, timeout=30)
        held = 24 - int(current.read_text()) - 1  # the filler itself takes one
        filler = asyncio.ensure_future(sb.box.spawner.run(
            ["/bin/sh", "-c", f"for i in $(seq {held}); do sleep 60 & done; exec sleep 60"],
            env=sb.env, cwd=sb.workdir, timeout=60))
        for _ in range(500):
            if int(current.read_text()) >= 24:
                break
            await asyncio.sleep(0.01)
        assert int(current.read_text()) == 24  # the spawner, the trial's init, the filler's
        t0 = asyncio.get_running_loop().time()
        res = await sb.box.spawner.run(["/bin/true"], env=sb.env, cwd=sb.workdir, timeout=60)
        waited = asyncio.get_running_loop().time() - t0
        assert res.exit_code is None and not res.timed_out, res
        assert res.stderr.startswith("proctor: could not start /bin/true: "), res.stderr
        assert waited < 30, waited  # the error, not the deadline (60 s)
        assert await sb.kill_processes() > 0
        assert (await filler).exit_code == -9
        assert not sb.box.spawner.busy
        res = await sb.box.spawner.run(["/bin/sh", "-c", "echo again"], env=sb.env,
                                       cwd=sb.workdir, timeout=30)
        assert res.stdout == "again\n" and res.exit_code == 0, res
    finally:
        await sb.close()


async def test_a_command_wakes_its_caller_once(box_sandbox):
    """A command wakes the task that runs it once, at its end (the X reply, the only one)."""
    sb = box_sandbox
    steps = 0

    @types.coroutine
    def stepped(coro):  # `coro` driven by hand: each future it waits on counted
        nonlocal steps
        value = None
        while True:
            try:
                fut = coro.send(value)
            except StopIteration as stop:
                return stop.value
            steps += 1
            value = yield fut

    # Its output pipes closed long before it ends: read to their end when the X comes.
    res = await stepped(sb.box.spawner.run(
        ["/bin/sh", "-c", "exec >&- 2>&-; sleep 0.3"], env=sb.env, cwd=sb.workdir, timeout=30))
    assert res.exit_code == 0 and not res.timed_out, res
    assert steps == 1, steps


def _replies(sb) -> list[tuple[str, int]]:
    """Every reply the box's spawner sends from now on, (kind, job), as proctor takes it."""
    seen: list[tuple[str, int]] = []
    spawner = sb.box.spawner
    deliver = spawner._deliver

    def recorded(kind, job, value, err, fd):
        seen.append((kind, job))
        deliver(kind, job, value, err, fd)
    spawner._deliver = recorded
    return seen


async def test_a_command_sends_one_reply_its_end(box_sandbox):
    """spawner.c: a RUN is answered once, by its X (its start is not said): one reply for
    proctor's loop to read per command, quick or not."""
    sb = box_sandbox
    seen = _replies(sb)
    for argv in (["/bin/true"], ["/bin/sh", "-c", "sleep 0.2; echo done"]):
        seen.clear()
        res = await sb.box.spawner.run(argv, env=sb.env, cwd=sb.workdir, timeout=30)
        assert res.exit_code == 0, res
        assert [k for k, _ in seen] == ["X"], seen
    assert res.stdout == "done\n"
    assert not sb.box.spawner.busy


async def test_a_deadline_soon_after_the_start_still_kills_and_waits(box_sandbox):
    """A deadline that passes right after the command was sent (1 ms): the command is killed
    and its end awaited (its X, well within the grace for a spawner that never took it)."""
    sb = box_sandbox
    seen = _replies(sb)
    t0 = asyncio.get_running_loop().time()
    res = await sb.box.spawner.run(["/bin/sh", "-c", "echo before; exec sleep 60"],
                                   env=sb.env, cwd=sb.workdir, timeout=0.001)
    assert asyncio.get_running_loop().time() - t0 < 0.9  # its X, not the start's grace (1 s)
    assert res.timed_out and res.exit_code is None, res
    assert "X" in [k for k, _ in seen], seen
    assert await _gone(sb)
    assert not sb.box.spawner.busy


async def test_a_command_the_spawner_never_read_is_given_up_at_its_deadline(box_sandbox):
    """A stopped spawner never reads the RUN: at the deadline the socket shows it unread, so
    the command is given up at once (not START_GRACE_S later), timed out; the spawner serves
    the next command once it runs again."""
    sb = box_sandbox
    spawner = sb.box.spawner
    pid = sb.box.spawner_pid
    os.kill(pid, signal.SIGSTOP)
    try:
        t0 = asyncio.get_running_loop().time()
        res = await spawner.run(["/bin/sh", "-c", "echo never"], env=sb.env, cwd=sb.workdir,
                                timeout=0.3)
        waited = asyncio.get_running_loop().time() - t0
    finally:
        os.kill(pid, signal.SIGCONT)
    assert res.timed_out and res.exit_code is None and res.stdout == "", res
    assert waited < 0.3 + START_GRACE_S * 0.8, waited  # at the deadline, not after the grace
    again = await spawner.run(["/bin/sh", "-c", "echo again"], env=sb.env, cwd=sb.workdir,
                              timeout=30)
    assert (again.exit_code, again.stdout) == (0, "again\n"), again
