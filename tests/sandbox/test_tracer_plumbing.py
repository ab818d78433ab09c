"""What a traced command costs the spawner and its tracer besides the trace itself
(spawner.c, ORDER_FDS): the command's strings reach the tracer in its order (inline, or in
proctor's own request memfd when they are too long for that), never in a memfd the spawner
writes; the tracer says how the command's top ended on its socket, never on a pipe made per
command. Against a real box, through the spawner's own requests, with both ways a tracer
gets a command: at its fork, and as an order when it is idle."""

from __future__ import annotations

import asyncio
import os

import pytest

from proctor.sandbox.spawn import MAX_INLINE
from proctor.sandbox.trace import parse_trace

SCRIPT = 'printf "%s|%s|%s" "$1" "${#BIG}" "$(pwd)"'


def _children(spawner: int) -> list[int]:
    with open(f"/proc/{spawner}/task/{spawner}/children") as f:
        return [int(pid) for pid in f.read().split()]


def _comm(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except OSError:
        return ""  # gone meanwhile


def _targets(pid: int) -> list[str]:
    """What its descriptors point to."""
    found = []
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return []  # gone meanwhile
    for fd in fds:
        try:
            found.append(os.readlink(f"/proc/{pid}/fd/{fd}"))
        except OSError:
            continue
    return sorted(found)


def _pipes_and_memfds(pid: int) -> list[str]:
    return [t for t in _targets(pid) if t.startswith(("pipe:", "/memfd:"))]


def _write_calls(pid: int) -> int:
    """How many write system calls process `pid` made itself (write, pwrite, writev; not
    sendmsg; not its reaped children's, which /proc/PID/io adds)."""
    try:
        with open(f"/proc/{pid}/task/{pid}/io") as f:
            return next(int(line.split()[1]) for line in f if line.startswith("syscw:"))
    except FileNotFoundError:
        pytest.skip("no per-process I/O accounting in this kernel (/proc/PID/io)")


async def _run(box, argv: list[str], path, env: dict[str, str], timeout: float = 30):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        return await box.spawner.run(argv, env=env, cwd="/", timeout=timeout, trace_fd=fd)
    finally:
        os.close(fd)


async def test_a_traced_commands_strings_reach_its_tracer_inline_or_in_proctors_memfd(
        box, tmp_path):
    spawner = box.spawner_pid
    writes = _write_calls(spawner)
    # small: inline; big: more than fits inline (proctor's memfd); the first of a trial
    # goes with its tracer's fork, the next ones as orders to the idle tracer
    trials = [["small", "big", "small"], ["big", "small"]]
    n = 0
    for sizes in trials:
        await box.spawner.new_trial()
        for size in sizes:
            n += 1
            big = 10 if size == "small" else MAX_INLINE
            argv = ["/bin/sh", "-c", SCRIPT, "sh", f"arg é {n}"]
            env = {"PATH": "/usr/bin:/bin", "BIG": "b" * big}
            res = await _run(box, argv, tmp_path / f"t{n}", env)
            assert (res.exit_code, res.stdout) == (0, f"arg é {n}|{big}|/"), (size, res)
            trace = parse_trace(tmp_path / f"t{n}")
            assert trace.finished and trace.programs[0].argv == argv, (size, trace.programs)
    # nothing written per command: no memfd of the spawner's own for a tracer to read
    assert _write_calls(spawner) == writes


async def test_a_traced_command_adds_no_pipe_or_memfd_to_the_spawner_or_its_tracer(
        box, tmp_path):
    spawner = box.spawner_pid
    before = _pipes_and_memfds(spawner)  # its own (a stderr pipe from bubblewrap)
    env = {"PATH": "/usr/bin:/bin"}
    for first in ([], ["true"]):  # the tracer's first command, then one as an order
        await box.spawner.new_trial()
        for command in first:
            assert (await _run(box, ["/bin/sh", "-c", command], tmp_path / "f", env)) \
                .exit_code == 0
        path = tmp_path / f"sleep{len(first)}"
        running = asyncio.ensure_future(_run(box, ["/bin/sh", "-c", "sleep 30"], path, env))
        for _ in range(1000):  # until the sleep runs under its tracer
            if ["sleep", "30"] in [p.argv for p in parse_trace(path).programs]:
                break
            await asyncio.sleep(0.01)
        (tracer,) = [p for p in _children(spawner) if _comm(p) == "tracer" and
                     str(path) in _targets(p)]  # (not the last trial's, still going)
        assert _pipes_and_memfds(spawner) == before
        assert _pipes_and_memfds(tracer) == []  # the trace file, its socket, /proc
        assert not running.done()
        await box.spawner.kill_all(10)
        res = await running
        assert res.exit_code is not None and res.exit_code != 0, res  # killed with its trial
