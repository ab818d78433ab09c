"""The event loop never waits on a box's processes: a spawner that stops reading (stopped,
or busy) makes requests queue, not the loop stall. The loop-lag monitor (tests/looplag.py)
times every loop callback by the loop thread's own scheduler counters (on a CPU or blocked,
not waiting for one); none may hold the loop 50 ms, and once the spawner goes on, what is
still wanted is answered."""

from __future__ import annotations

import asyncio
import gc
import os
import signal
import socket

import pytest

from tests.helpers.box import new_sandbox
from tests.looplag import LoopStalls

STALL_MS = 50  # issue 28
REQUESTS = 60  # more than a stopped spawner's socket holds (made small): the rest wait


@pytest.fixture
async def sandbox(tmp_path):
    if os.geteuid() != 0 or not LoopStalls.available():
        pytest.skip("stops the box's spawner (needs root) and reads schedstat")
    sb = await new_sandbox(tmp_path / "sb", "lag.r0", pids=4096)
    gc.freeze()  # the test session's objects: a full collection of them is not proctor's
    yield sb
    gc.unfreeze()
    await sb.close()


async def test_a_stopped_spawner_never_stalls_the_loop(sandbox):
    spawner = sandbox.box.spawner_pid
    # A small send buffer fills after a few requests, as the default one does after a few
    # hundred: fewer commands, the same path.
    sandbox.box.spawner.sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
    os.kill(spawner, signal.SIGSTOP)
    try:
        with LoopStalls() as stalls:
            runs = []
            for _ in range(REQUESTS):  # a busy run's commands, one after another
                runs.append(asyncio.ensure_future(sandbox.exec("true", timeout=1.5)))
                await asyncio.sleep(0.001)
            assert sandbox.box.spawner._outbox, "the spawner's socket never filled"
            results = await asyncio.gather(*runs)
            os.kill(spawner, signal.SIGCONT)
            # Nothing was answered while it was stopped (the commands timed out; those still
            # queued were never sent) ...
            assert all(r.timed_out for r in results), {
                (r.exit_code, r.stderr[:80], r.error) for r in results if not r.timed_out}
            after = await sandbox.exec("echo still here", timeout=60)  # ... then all of it
    finally:
        os.kill(spawner, signal.SIGCONT)
    assert stalls.worst_ms < STALL_MS, f"the loop was held {stalls.worst_ms:.0f} ms by {stalls.where}"
    assert after.stdout == "still here\n" and sandbox.box.spawner.lost is None
    assert not sandbox.box.spawner._outbox
    assert sandbox.box.alive()


@pytest.mark.parametrize("isolation", ["auto", "none"])
async def test_killing_a_trials_processes_never_stalls_the_loop(isolation, tmp_path):
    # A box's processes die with its trial's PID namespace (the spawner kills it); an
    # unisolated trial's are killed from its cgroup, off the loop.
    if not LoopStalls.available():
        pytest.skip("reads schedstat")
    sb = await new_sandbox(tmp_path / "sb", "kill.r0", isolation, pids=4096)
    try:
        if isolation == "none" and sb.cgroup is None:
            pytest.skip("no cgroup here for an unisolated trial")
        await sb.exec("for i in $(seq 300); do sleep 600 & done", timeout=60)
        with LoopStalls() as stalls:
            killed = await sb.kill_processes()
        assert killed >= 300
        assert stalls.worst_ms < STALL_MS, f"held {stalls.worst_ms:.0f} ms by {stalls.where}"
    finally:
        await sb.close()
