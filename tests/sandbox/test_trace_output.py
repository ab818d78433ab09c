"""The tracer's output capture (exectrace -w): what a command tree wrote to its stdout and
stderr, rebuilt from the trace, is byte for byte what its pipes carried; writes elsewhere
are not output; limits drop bytes and say how many; a killed tracer keeps what it saw."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from proctor.sandbox.trace import parse_trace, tracer_argv

SCRIPT = textwrap.dedent("""\
    echo out-1
    ls /nonexistent-dir
    echo err-1 >&2
    printf '\\377\\000\\001 binary\\n'
    x=$(echo captured-by-the-shell); echo "$x" | cat
    (echo from-a-subshell)
    echo to-a-file > f.txt
    cat f.txt >&2
    exit 3
""")


def traced(tmp_path, argv, limit=1 << 20, stderr=subprocess.PIPE):
    out = tmp_path / "trace"
    res = subprocess.run(tracer_argv(out, capture=limit) + argv, stdout=subprocess.PIPE,
                         stderr=stderr, timeout=60, cwd=tmp_path)
    return res, parse_trace(out)


def test_stdout_and_stderr_are_exactly_what_the_pipes_got(tmp_path):
    res, t = traced(tmp_path, ["sh", "-c", SCRIPT])
    assert res.returncode == 3 and t.complete
    stdout, stderr, dropped = t.output(0)
    assert (stdout, stderr, dropped) == (res.stdout, res.stderr, 0)
    assert b"\xff\x00\x01 binary" in stdout and b"captured-by-the-shell" in stdout
    # A redirected write is not output; the file's content reaches stderr through cat.
    assert b"to-a-file" not in stdout and stderr.endswith(b"to-a-file\n")
    # Each program's own share, and how it ended
    ls = next(i for i, p in enumerate(t.programs) if p.argv[0] == "ls")
    assert t.output(ls)[0] == b"" and b"nonexistent-dir" in t.output(ls)[1]
    assert t.exit_of(ls)[0] == 2 and t.exit_of(0)[0] == 3


@pytest.mark.parametrize("shell", ["sh", "bash"])
def test_one_target_for_both_splits_as_two_would(shell, tmp_path):
    """Where fd 1 and 2 point to one place (a merged pipe, as mini-swe-agent and Claude Code
    run commands), stdout and stderr are told apart as separate pipes would: `>&2` makes fd 1
    a copy of fd 2 (the dup is in the trace), `2>&1` the other way round."""
    script = ("echo a; echo b >&2; ls /nonexistent-dir; (exec 1>&2; echo c); "
              "sh -c 'echo d' 1>&2; ls /nonexistent-e 2>&1; echo f")
    res, separate = traced(tmp_path, [shell, "-c", script])
    assert separate.programs[0].fds[0] != separate.programs[0].fds[1]
    assert separate.output(0)[:2] == (res.stdout, res.stderr)
    merged_res, merged = traced(tmp_path, [shell, "-c", script], stderr=subprocess.STDOUT)
    assert merged.programs[0].fds[0] == merged.programs[0].fds[1]
    assert merged.output(0) == separate.output(0)
    assert merged.output(0)[0] == b"a\nls: cannot access '/nonexistent-e': No such file or " \
        b"directory\nf\n"
    assert merged_res.stdout.startswith(b"a\nb\n")


def test_every_write_family_call_and_every_thread(tmp_path):
    program = textwrap.dedent("""\
        import ctypes, os, threading
        os.writev(1, [b"vec-", b"tor\\n"])
        t = threading.Thread(target=os.write, args=(2, b"from a thread\\n"))
        t.start(); t.join()
        # the kernel reads an fd as 32 bits: 2**32 + 1 is fd 1
        libc = ctypes.CDLL(None, use_errno=True)
        libc.syscall(1, ctypes.c_long(2**32 + 1), b"high bits\\n", 10)
        os.pwrite(1, b"pwrite\\n", 0) if os.path.isfile("/proc/self/fd/1") else None
    """)
    res, t = traced(tmp_path, [sys.executable, "-c", program])
    assert res.returncode == 0, res.stderr
    assert t.output(0)[:2] == (res.stdout, res.stderr) == (b"vec-tor\nhigh bits\n",
                                                          b"from a thread\n")
    with open(tmp_path / "file-out", "wb") as f:  # stdout a regular file: pwrite works
        res = subprocess.run(tracer_argv(tmp_path / "t2", capture=1 << 20) +
                             [sys.executable, "-c", program], stdout=f, timeout=60)
    t = parse_trace(tmp_path / "t2")
    assert t.programs[0].fds[0].endswith("/file-out")
    assert b"pwrite\n" in t.output(0)[0]


def test_a_partial_write_counts_what_was_written(tmp_path):
    # A non-blocking pipe takes only part of a big write; the rest is written again later.
    program = textwrap.dedent("""\
        import fcntl, os, select
        fcntl.fcntl(1, fcntl.F_SETFL, fcntl.fcntl(1, fcntl.F_GETFL) | os.O_NONBLOCK)
        data = bytes(range(256)) * 4096
        while data:
            select.select([], [1], [])
            try:
                data = data[os.write(1, data):]
            except BlockingIOError:
                pass
    """)
    res, t = traced(tmp_path, [sys.executable, "-c", program], limit=4 << 20)
    assert len(res.stdout) == 1 << 20
    assert t.output(0) == (res.stdout, b"", 0)


def test_limits_keep_a_prefix_and_count_the_rest(tmp_path):
    res, t = traced(tmp_path, ["sh", "-c", "head -c 5000 /dev/zero; head -c 3000 /dev/zero >&2"],
                    limit=1000)
    stdout, stderr, dropped = t.output(0)
    assert len(res.stdout) == 5000 and stdout == b"\0" * 1000
    assert stderr == b"\0" * 1000 and dropped == 4000 + 2000


def test_a_killed_tracer_keeps_what_it_saw(tmp_path):
    """Hostile: a command that removes something, then hangs until it is killed: the trace
    already holds the removal (lines are written whenever the tracer waits). The honest
    twin: the same without the hang is complete."""
    out = tmp_path / "trace"
    proc = subprocess.Popen(tracer_argv(out, capture=1 << 20) +
                            ["sh", "-c", "rm -rf junk; echo removed; sleep 60"],
                            stdout=subprocess.PIPE, cwd=tmp_path, start_new_session=True)
    try:
        deadline = time.monotonic() + 30
        while b'["sleep","60"]' not in (out.read_bytes() if out.exists() else b""):
            assert time.monotonic() < deadline, "the trace never showed the sleep"
            time.sleep(0.05)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    t = parse_trace(out)
    assert not t.complete
    assert [p.argv for p in t.programs][1:] == [["rm", "-rf", "junk"], ["sleep", "60"]]
    assert t.output(0)[0] == b"removed\n"
    assert t.exit_of(1)[0] == 0 and t.exit_of(2) == (None, None)  # killed with the tracer
    res, t = traced(tmp_path, ["sh", "-c", "rm -rf junk; echo removed"])
    assert t.complete and t.output(0)[0] == b"removed\n"


def test_without_capture_nothing_stops_at_writes(tmp_path):
    out = tmp_path / "trace"
    subprocess.run(tracer_argv(out) + ["sh", "-c", "echo hi"], capture_output=True, timeout=60)
    t = parse_trace(out)
    assert t.complete and t.writes == [] and t.programs[0].fds is None


def test_zero_copy_output_falls_back_to_writes_that_are_seen(tmp_path):
    """cat copies a file to a regular-file stdout with copy_file_range, whose bytes never
    pass through its memory: under capture that call fails (ENOSYS) and cat writes."""
    (tmp_path / "data.txt").write_text("copied by cat\n")
    with open(tmp_path / "out", "wb") as f:
        subprocess.run(tracer_argv(tmp_path / "t", capture=1 << 20) + ["cat", "data.txt"],
                       stdout=f, timeout=60, cwd=tmp_path, check=True)
    assert (tmp_path / "out").read_text() == "copied by cat\n"
    assert parse_trace(tmp_path / "t").output(0)[0] == b"copied by cat\n"
