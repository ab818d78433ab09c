"""What a traced command can reach of its tracer. The first process of a traced command shares
its tracer's memory until it execs (spawner.c,
`top_main`: a clone, not a fork). An agent process left running in the trial watches for such a
process (its name is still the tracer's) and tries to open its memory and read its
environment while the tracer holds it at its exec: refused every time. The honest twin: the
same attacker opens the memory and reads the environment of a process of its own. And a
traced command holds no descriptor of its tracer's (its order socket, the spawner's control
socket it reports on): none to forge a reply on."""

from __future__ import annotations

import asyncio
import os
import signal

import pytest

from tests.helpers.box import comm, new_sandbox, run_traced

# Until `stop` exists: at each `go-N` the test writes (while it holds a command before its
# exec), tries every process still named "tracer"; writes what it saw and could open to
# `found`, then makes `done-N`.
ATTACKER = r"""
sleep 60 & own=$!
( exec 3</proc/$own/mem ) 2>/dev/null && echo own-mem >> found
cat /proc/$own/environ > /dev/null 2>&1 && echo own-env >> found
echo ready >> found
while [ ! -e stop ]; do
  for g in go-*; do
    n=${g#go-}
    [ -e "$g" ] && [ ! -e "done-$n" ] || continue
    for d in /proc/[0-9]*; do
      read -r c < $d/comm 2>/dev/null || continue
      [ "$c" = tracer ] || continue
      echo "seen $n" >> found
      ( exec 3<$d/mem ) 2>/dev/null && echo "mem $n ${d#/proc/}" >> found
      cat $d/environ > /dev/null 2>&1 && echo "env $n ${d#/proc/}" >> found
    done
    : > "done-$n"
  done
done
kill $own
"""


@pytest.fixture
async def box_sandbox(tmp_path):
    sb = await new_sandbox(tmp_path / "sb")
    yield sb
    await sb.close()


async def _traced(sb, argv: list[str], trace_path) -> int:
    return (await run_traced(sb, argv, trace_path, timeout=60)).exit_code


async def _exists(sb, path: str) -> bool:
    try:
        await sb.read_file(path)
        return True
    except FileNotFoundError:
        return False


async def _found(sb) -> list[str]:
    try:
        return (await sb.read_file("found")).decode().split("\n")
    except FileNotFoundError:
        return []


def _host_tops(uid: int) -> list[tuple[int, int]]:
    """(pid, parent) of every process named "tracer" running as `uid`: a traced command's
    first process after it took the agent's ids and before its exec."""
    tops = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/status") as f:
                status = dict(line.split(":", 1) for line in f if ":" in line)
        except OSError:
            continue
        if status["Name"].strip() == "tracer" and status["Uid"].split()[0] == str(uid):
            tops.append((int(pid), int(status["PPid"])))
    return tops


async def test_an_agent_cannot_open_a_traced_commands_memory_before_its_exec(
        box_sandbox, tmp_path):
    if os.geteuid() != 0:
        pytest.skip("the command takes the agent's ids only as root")
    sb = box_sandbox
    assert await _traced(sb, ["/bin/sh", "-c", f"({ATTACKER}) > /dev/null 2>&1 &"],
                         tmp_path / "attacker") == 0
    for _ in range(200):
        if "ready" in await _found(sb):
            break
        await asyncio.sleep(0.05)
    # A command's exec is held while its tracer reads its 4,000 arguments one by one
    # (milliseconds); the tracer stopped then (SIGSTOP, from here) holds its first process,
    # the tracer's clone with the agent's ids, before its exec for as long as the test wants.
    big = ["x" * 100] * 4000
    held = 0
    for i in range(20):
        run = asyncio.ensure_future(_traced(sb, ["/bin/true", *big], tmp_path / f"t{i}"))
        tracer = None
        try:
            while not run.done() and tracer is None:
                tops = _host_tops(sb.box.uid)
                if tops:
                    top, tracer = tops[0]
                    os.kill(tracer, signal.SIGSTOP)
                await asyncio.sleep(0)
            if tracer is not None:
                await asyncio.sleep(0.05)
                if comm(top) == "tracer":  # held before its exec: the attacker's turn
                    held += 1
                    await sb.write_file(f"go-{i}", b"")
                    for _ in range(500):
                        if await _exists(sb, f"done-{i}"):
                            break
                        await asyncio.sleep(0.01)
                    assert comm(top) == "tracer"  # still held: nothing raced the attempt
        finally:
            if tracer is not None:
                os.kill(tracer, signal.SIGCONT)
        assert await run == 0
        if held >= 3:
            break
    await sb.write_file("stop", b"")
    lines = await _found(sb)
    seen = [line for line in lines if line.startswith("seen ")]
    assert held >= 1 and len(seen) >= held, (held, lines)  # it tried each held command
    assert "own-mem" in lines and "own-env" in lines, lines  # the honest twin
    assert not [line for line in lines if line.startswith(("mem ", "env "))], lines


async def test_a_traced_command_holds_no_descriptor_of_its_tracer(box_sandbox, tmp_path):
    """The tracer holds its order socket and the spawner's control socket, on which it
    reports: a command it starts (the hostile side: one that would forge a reply on any
    descriptor it has) finds only its own 0-2; the honest twin, untraced, the same."""
    sb = box_sandbox
    forge = ("ls /proc/self/fd; for fd in 3 4 5 6 7 8 9; do"  # (sh: one digit)
             " (echo X >&$fd) 2>/dev/null && echo wrote $fd; done; true")
    traced = await run_traced(sb, ["/bin/sh", "-c", forge], tmp_path / "t")
    plain = await sb.box.spawner.run(["/bin/sh", "-c", forge], env=sb.env, cwd=sb.workdir,
                                     timeout=10)
    for res in (traced, plain):
        assert res.exit_code == 0, res
        assert res.stdout.split() == ["0", "1", "2", "3"], res  # 3: ls's own, of the directory
