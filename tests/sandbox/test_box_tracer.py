"""Traced commands in a box go through its spawner, under exectrace's own code (spawner.c
includes it): the same trace format as the standalone tracer, output capture included, and
the command returns when its top process ends while what it left running stays traced."""

from __future__ import annotations

import asyncio
import os

import pytest

from proctor.sandbox.trace import capture_limits, parse_trace
from tests.helpers.box import comm, new_sandbox, run_traced


@pytest.fixture
async def box_sandbox(tmp_path):
    sb = await new_sandbox(tmp_path / "sb")
    yield sb
    await sb.close()


async def _traced(sb, command: str, path, capture: int | None = None, timeout: float = 10):
    res = await run_traced(sb, ["/bin/sh", "-c", command], path, timeout=timeout,
                           capture=capture_limits(capture) if capture else None)
    return res, parse_trace(path)


async def test_output_capture_is_what_the_pipes_got(box_sandbox, tmp_path):
    res, t = await _traced(box_sandbox, "echo out; ls /nonexistent; echo err >&2; exit 3",
                           tmp_path / "t", capture=1 << 16)
    assert res.exit_code == 3 and t.complete and t.finished
    stdout, stderr, dropped = t.output(0)
    assert (stdout.decode(), stderr.decode(), dropped) == (res.stdout, res.stderr, 0)
    assert "nonexistent" in res.stderr
    ls = next(i for i, p in enumerate(t.programs) if p.argv[0] == "ls")
    assert t.exit_of(ls)[0] == 2 and t.exit_of(0)[0] == 3


async def test_a_captured_trace_says_where_fd_1_and_2_point(box_sandbox, tmp_path):
    """The O line names the command's two pipes, and each W line the one it wrote to: as
    root too, where the agent's /proc/PID/fd is its own only (the tracer reads it with the
    agent's file system ids)."""
    res, t = await _traced(box_sandbox, "echo out; echo err >&2", tmp_path / "t",
                           capture=1 << 16)
    assert res.exit_code == 0 and t.complete and t.finished
    fds = t.programs[0].fds
    assert fds is not None and fds[0] != fds[1], fds
    assert all(fd.startswith("pipe:[") for fd in fds), fds
    assert [(w.fd, w.target, w.data) for w in t.writes] == [
        (1, fds[0], b"out\n"), (1, fds[1], b"err\n")]  # `>&2`: its fd 1, a copy of fd 2


async def test_a_traced_command_returns_when_its_top_ends(box_sandbox, tmp_path):
    # The background waits for `go`, written only once the command has returned.
    res, t = await _traced(box_sandbox, "(while [ ! -e go ]; do sleep 0.05; done; echo late)"
                           " > /dev/null & exit 4", tmp_path / "t", timeout=30)
    assert res.exit_code == 4, res
    assert t.complete and not t.finished  # the loop is still being traced
    await box_sandbox.write_file("go", b"")
    for _ in range(100):
        t = parse_trace(tmp_path / "t")
        if t.finished:
            break
        await asyncio.sleep(0.05)
    assert t.finished and any(p.argv[0] == "sleep" for p in t.programs), t.programs


async def test_a_signal_that_kills_the_command_is_its_status(box_sandbox, tmp_path):
    res, t = await _traced(box_sandbox, "kill -TERM $$", tmp_path / "t")
    assert res.exit_code == -15 and t.complete


async def test_a_timeout_kills_the_traced_tree(box_sandbox, tmp_path):
    res, _ = await _traced(box_sandbox, "sleep 60 & sleep 60", tmp_path / "t", timeout=0.5)
    assert res.timed_out
    for _ in range(100):  # the kernel kills every traced process when the tracer goes
        ps = await box_sandbox.exec("ps -eo comm=", timeout=10)
        if "sleep" not in ps.stdout:
            break
        await asyncio.sleep(0.02)
    assert "sleep" not in ps.stdout, ps.stdout


async def test_a_command_that_leaves_nothing_running_returns_with_its_whole_trace(
        box_sandbox, tmp_path):
    """The tracer tells the spawner how the command ended only after the trace's last line
    when nothing else is traced: proctor reads each trace once."""
    for i in range(20):
        res, t = await _traced(box_sandbox, f"echo {i} | cat > f{i}", tmp_path / f"t{i}")
        assert res.exit_code == 0 and t.complete and t.finished, (i, res)
        assert [p.argv[0] for p in t.programs] == ["/bin/sh", "cat"], t.programs


async def test_a_tracer_killed_before_the_command_ends_is_not_an_exit_status(
        box_sandbox, tmp_path):
    """Without the tracer's word on how the command ended (it was killed), the command's
    end is the tracer's: killed, never a clean exit; the trace says it is incomplete."""
    spawner = box_sandbox.box.spawner_pid
    task = asyncio.create_task(_traced(box_sandbox, "sleep 30", tmp_path / "t", timeout=30))
    for _ in range(200):
        with open(f"/proc/{spawner}/task/{spawner}/children") as f:  # its init, its tracer
            tracers = [int(pid) for pid in f.read().split() if comm(pid) == "tracer"]
        if tracers:
            break
        await asyncio.sleep(0.02)
    assert len(tracers) == 1, tracers  # the spawner's child; the command is the tracer's
    os.kill(tracers[0], 9)
    res, t = await task
    assert res.exit_code == -9 and not t.complete, res


def _open_fds() -> set[int]:
    return {int(n) for n in os.listdir("/proc/self/fd")}


async def test_a_box_trace_is_a_memfd_read_whole_and_released_once(box_sandbox, tmp_path):
    """Through `exec`, a box's tracer writes to a memfd proctor made (no trace file in the
    box's private directory): a finished trace is read and its memfd, emptied, kept for the
    box's next command; one whose command left something running stays open, is read again
    to its end, and is released when the sandbox closes, however many times it is released
    (an agent's settle, then the sandbox)."""
    from proctor.sandbox.trace import reread

    before = _open_fds()
    res = await box_sandbox.exec("sh -c /bin/true; ls /", timeout=10, trace=True)
    assert res.trace.finished and res.trace.source is None
    assert [p.argv[0] for p in res.trace.programs] == ["/bin/sh", "sh", "/bin/true", "ls"]
    (spare,) = box_sandbox.box.spare_traces  # the box's, for its next command
    now = _open_fds()
    tracers = box_sandbox.box.spawner.tracers  # its tracer, idle: the socket it is told on
    assert tracers == 1
    assert spare.fd in now and len(now) == len(before) + 1 + tracers  # read, then emptied
    assert not list((box_sandbox.private).glob("trace-*"))
    left = await box_sandbox.exec("(sleep 0.3; echo late) > /dev/null & exit 2",
                                  timeout=10, trace=True)
    assert left.exit_code == 2 and left.trace.complete and not left.trace.finished
    assert box_sandbox.box.spawner.tracers == 1  # the same one, busy with what is left
    assert len(_open_fds()) == len(before) + 1 + 1  # kept, to be read to its end (the spare)
    assert box_sandbox.box.spare_traces == []
    final = await reread(left.trace, wait=10)
    assert final.finished and "sleep" in [p.argv[0] for p in final.programs]
    await box_sandbox.close()  # releases it again: no error, nothing closed twice
    assert _open_fds() <= before


_PRIVILEGES = "grep -E '^(Uid|Gid|Groups|Cap[A-Za-z]+|NoNewPrivs|Seccomp):' /proc/self/status"


@pytest.mark.parametrize("traced", [True, False])
async def test_a_command_starts_with_no_privilege_whichever_way_it_starts(
        box_sandbox, tmp_path, traced):
    """A traced command's top is a clone sharing its tracer's memory until it execs, an
    untraced one a fork of the spawner, and the spawner empties the bounding and ambient
    sets once for every process of the box: either way the command gets no capability in
    any set, no group, no-new-privs and a seccomp filter (as root: the agent's uid and gid
    in all four slots)."""
    if traced:
        res, t = await _traced(box_sandbox, _PRIVILEGES, tmp_path / "t")
        assert t.complete and [p.argv[0] for p in t.programs] == ["/bin/sh", "grep"]
    else:
        res = await box_sandbox.exec(_PRIVILEGES, timeout=10)
    assert res.exit_code == 0, res
    status = dict(line.split(":", 1) for line in res.stdout.splitlines())
    status = {k: v.split() for k, v in status.items()}
    for cap in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):
        assert status[cap] == ["0000000000000000"], (cap, status)
    assert status["NoNewPrivs"] == ["1"] and status["Seccomp"] == ["2"], status
    assert status.get("Groups", []) == [], status
    if os.geteuid() == 0:  # a user namespace's root keeps its uid (no capabilities)
        uid, gid = box_sandbox.box.uid, box_sandbox.box.gid
        assert status["Uid"] == [str(uid)] * 4 and status["Gid"] == [str(gid)] * 4, status


async def test_a_traced_command_that_cannot_exec_says_why(box_sandbox, tmp_path):
    """The top's failed exec (after the tracer saw the attempt) ends it with 127 and the
    reason on its stderr; the tracer and the spawner carry on."""
    res = await run_traced(box_sandbox, ["/no/such/program"], tmp_path / "t")
    assert res.exit_code == 127 and "/no/such/program" in res.stderr, res
    t = parse_trace(tmp_path / "t")
    assert t.complete and t.programs == [], t.programs
    again, _ = await _traced(box_sandbox, "echo fine", tmp_path / "t2")
    assert again.exit_code == 0 and again.stdout == "fine\n", again


async def test_one_trace_memfd_serves_a_boxs_commands_but_never_one_still_written(
        box_sandbox):
    """A finished trace's memfd (its Z line read: its tracer writes no more) is emptied and
    given to the box's next traced command, which starts at offset 0 (what lies past it,
    of a longer trace before, is never read: a trace ends at the tracer's offset); one
    whose command left something running is never given to another: what its tracer writes
    later lands in its own trace only, not in the next command's, even while both run."""
    from proctor.sandbox.trace import reread

    sb = box_sandbox
    inodes = []
    long = await sb.exec("/bin/true 1; /bin/true 2; /bin/true 3; /bin/true 4", timeout=10, trace=True)
    assert [p.argv[0] for p in long.trace.programs] == ["/bin/sh"] + ["/bin/true"] * 4, long
    for n in range(3):
        res = await sb.exec(f"echo {n}", timeout=10, trace=True)
        assert res.exit_code == 0 and res.trace.finished, res
        assert [p.argv for p in res.trace.programs] == [["/bin/sh", "-c", f"echo {n}"]]
        (spare,) = sb.box.spare_traces
        inodes.append(os.fstat(spare.fd).st_ino)
        assert os.lseek(spare.fd, 0, os.SEEK_CUR) == 0
    assert len(set(inodes)) == 1  # one memfd for all three
    # A tree left running, writing to its trace while the next commands run: the
    # background execs `true late` once `go` exists, i.e. after the next command started.
    left = await sb.exec("(while [ ! -e go ]; do sleep 0.02; done; /bin/true late) "
                         "> /dev/null 2>&1 & exit 3", timeout=10, trace=True)
    assert left.exit_code == 3 and left.trace.complete and not left.trace.finished, left
    assert sb.box.spare_traces == []  # the spare went to it ...
    held = left.trace.source
    assert held is not None and os.fstat(held.fd).st_ino == inodes[0]
    nxt = await sb.exec("touch go; sleep 0.5; echo next", timeout=10, trace=True)
    after = await sb.exec("echo after", timeout=10, trace=True)
    final = await reread(left.trace, wait=10)
    assert final.finished and ["/bin/true", "late"] in [p.argv for p in final.programs]
    for res, argvs in ((nxt, [["/bin/sh", "-c", "touch go; sleep 0.5; echo next"],
                              ["touch", "go"], ["sleep", "0.5"]]),
                       (after, [["/bin/sh", "-c", "echo after"]])):
        assert res.exit_code == 0 and res.trace.finished, res
        assert [p.argv for p in res.trace.programs] == argvs  # nothing of the other tree's
    # ... and the next ones a new memfd (the held one was never a spare); reread closed it
    (spare,) = sb.box.spare_traces
    assert os.fstat(spare.fd).st_ino != inodes[0] and held.fd == -1
