"""The process tree from strace: each exec knows the exec it descends from, even when a
child's execve is written before its parent's fork returns, and across a PID namespace."""

from __future__ import annotations

from proctor.sandbox.trace import parse_trace

TRACE = """\
100 execve("/usr/bin/sh", ["sh", "-c", "x"], 0x7ffd /* 3 vars */) = 0
100 vfork( <unfinished ...>
101 execve("/usr/bin/lsb_release", ["lsb_release", "-a"], 0x55 /* 3 vars */ <unfinished ...>
100 <... vfork resumed>)              = 101
101 <... execve resumed>)             = 0
101 clone(child_stack=NULL, flags=SIGCHLD, child_tidptr=0x7f) = 3 /* 102 in strace's PID NS */
102 clone(child_stack=NULL, flags=SIGCHLD, child_tidptr=0x7f) = 4 /* 103 in strace's PID NS */
103 execve("/usr/bin/cut", ["cut", "-c1"], 0x55 /* 3 vars */) = 0
100 clone3({flags=CLONE_VM, exit_signal=SIGCHLD}, 88) = 104
104 execve("/nope/wc", ["wc", "-l"], 0x55 /* 3 vars */) = -1 ENOENT (No such file or directory)
104 execve("/usr/bin/wc", ["wc", "-l"], 0x55 /* 3 vars */) = 0
104 +++ exited with 0 +++
100 +++ exited with 0 +++
"""


def test_every_exec_knows_its_parent_exec(tmp_path):
    path = tmp_path / "trace"
    path.write_text(TRACE)
    t = parse_trace(path)
    assert t.complete
    assert [a[0] for a in t.execs] == ["sh", "lsb_release", "cut", "wc"]
    # cut ran in a grandchild of lsb_release whose middle process never exec'd.
    assert t.parents == [-1, 0, 1, 0]
    t.drop_leading(1)
    assert [a[0] for a in t.execs] == ["lsb_release", "cut", "wc"] and t.parents == [-1, 0, -1]
