"""A traced command's X comes from its tracer, on the box's reply socket (spawner.c: the far
end of a socket pair, sent to proctor with R; the tracers hold the near end), not through the
spawner: a command's end wakes proctor, not the spawner too, which reads the tracers' word
that they are done before its next request. The socket goes one way (proctor cannot send on
it), proctor takes from it only the X of a traced command it is waiting for, and no process
of the trial holds it."""

from __future__ import annotations

import asyncio
import errno
import os
import socket

import pytest

from proctor.sandbox.spawn import REPLY, Spawner
from tests.sandbox.test_trial_tracer import _traced, _tracers

PATH = {"PATH": "/usr/bin:/bin"}


def _switches(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        fields = dict(line.split(":", 1) for line in f if ":" in line)
    return int(fields["voluntary_ctxt_switches"]) + int(fields["nonvoluntary_ctxt_switches"])


async def test_a_traced_commands_end_does_not_wake_the_spawner(box, tmp_path):
    await box.spawner.new_trial()
    await _traced(box, "true", tmp_path / "warm")
    n = 40
    before = _switches(box.spawner_pid)
    for i in range(n):
        res = await _traced(box, f"echo {i}", tmp_path / f"t{i}")
        assert (res.exit_code, res.stdout) == (0, f"{i}\n"), res
    # Once per command (its RUN), not twice (the tracer's word used to wake it for the X).
    assert _switches(box.spawner_pid) - before < n * 3 // 2


async def test_a_command_that_leaves_something_running_gets_its_x_at_its_tops_end(
        box, tmp_path):
    await box.spawner.new_trial()
    res = await _traced(box, "sleep 2 < /dev/null > /dev/null 2>&1 & exit 3", tmp_path / "t")
    assert res.exit_code == 3 and res.duration_s < 1.5, res
    again = await _traced(box, "echo next", tmp_path / "t2")  # another tracer takes it
    assert (again.exit_code, again.stdout) == (0, "next\n"), again
    await box.spawner.kill_all(10)


async def test_the_reply_socket_goes_one_way_and_no_trial_process_holds_it(box, tmp_path):
    """Hostile: proctor's end cannot send (nothing reaches the tracers through it), and the
    agent's commands, traced or not, left running or not, hold no socket at all, while each
    tracer holds the reply socket besides its own."""
    said = box.spawner._said
    assert said is not None
    with pytest.raises(OSError) as e:
        said.send(REPLY.pack(ord("X"), 1, 0, 0))
    assert e.value.errno == errno.EPIPE
    await box.spawner.new_trial()
    # A shell's, and a child's it left running (it says its own, then the shell ends).
    show = "for f in /proc/$$/fd/* /proc/self/fd/*; do readlink $f; done; true"
    for trace in (True, False):
        command = f"sh -c '{show}; sleep 1' & sleep 0.2; {show}"
        if trace:
            res = await _traced(box, command, tmp_path / "t")
        else:
            res = await box.spawner.run(["/bin/sh", "-c", command], env=PATH, cwd="/",
                                        timeout=10)
        assert res.exit_code == 0 and res.stdout.count("pipe:") >= 8, res
        assert "socket:" not in res.stdout, res.stdout
    sockets = []
    for pid in _tracers(box.spawner_pid):
        targets = [os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")]
        sockets.append(sum(t.startswith("socket:") for t in targets))
    assert sockets and set(sockets) == {2}, sockets  # its own to the spawner, the reply socket
    await box.spawner.kill_all(10)


async def test_proctor_takes_only_a_running_traced_commands_x_from_the_reply_socket():
    """Hostile (a tracer says what it likes there): an X for a command that is not traced,
    not running or unknown, or anything not an X, is dropped; a traced command's X ends it."""
    loop = asyncio.get_running_loop()
    ctl, ctl_far = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    said_far, said = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    spawner = Spawner(ctl, loop)
    try:
        ctl_far.sendmsg([REPLY.pack(ord("R"), 0, 1, 0)],
                        [(socket.SOL_SOCKET, socket.SCM_RIGHTS, bytes(memoryview(
                            __import__("array").array("i", [said.fileno()]))))])
        said.close()
        assert await spawner.ready(5) == 1
        plain = asyncio.ensure_future(spawner.run(["/bin/true"], env={}, cwd="/", timeout=5))
        fd = os.open(os.devnull, os.O_WRONLY)
        traced = asyncio.ensure_future(spawner.run(["/bin/true"], env={}, cwd="/", timeout=5,
                                                   trace_fd=fd))
        await asyncio.sleep(0.05)
        os.close(fd)
        # jobs 1 (plain) and 2 (traced): the plain one's X, one for nobody, a non-X: dropped
        for kind, job in (("X", 1), ("X", 99), ("O", 2), ("E", 2)):
            said_far.send(REPLY.pack(ord(kind), job, 0, 0))
        await asyncio.sleep(0.1)
        assert not plain.done() and not traced.done()
        said_far.send(REPLY.pack(ord("X"), 2, 7 << 8, 0))
        assert (await asyncio.wait_for(traced, 5)).exit_code == 7
        assert not plain.done()
        ctl_far.send(REPLY.pack(ord("X"), 1, 0, 0))  # the spawner's own socket: any X
        assert (await asyncio.wait_for(plain, 5)).exit_code == 0
    finally:
        spawner.close()
        ctl_far.close()
        said_far.close()
