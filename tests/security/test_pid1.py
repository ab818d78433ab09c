"""A trial's PID 1 (its init) shares the box's spawner's memory (sandbox/spawner.c,
`init_start`): reaching into it would be reaching into the spawner. Hostile: the agent's
command opens PID 1's memory, environment and descriptors, and sends it SIGKILL, SIGTERM,
SIGSEGV and SIGSTOP: every open is refused, every signal is dropped, and the box goes on
serving the trial's next command and the next trial. Honest twin: that next trial, in the
same box, passes."""

from __future__ import annotations

from pathlib import Path

ATTACK = ("head -c 0 /proc/1/mem 2>/dev/null; echo mem=$? > out.txt; "
          "head -c 0 /proc/1/environ 2>/dev/null; echo environ=$? >> out.txt; "
          "ls /proc/1/fd >/dev/null 2>&1; echo fd=$? >> out.txt; "
          "kill -KILL 1; kill -TERM 1; kill -SEGV 1; kill -STOP 1; echo signalled >> out.txt")

SUITE = f"""cli: sh
tasks:
  - id: a-hostile
    intent: Reach into PID 1.
    solution: ["{ATTACK}", "echo next >> out.txt"]
    assert:
      - {{file_contains: {{path: out.txt, text: "mem=1"}}}}
      - {{file_contains: {{path: out.txt, text: "environ=1"}}}}
      - {{file_contains: {{path: out.txt, text: "fd=2"}}}}
      - {{file_contains: {{path: out.txt, text: "signalled"}}}}
      - {{file_contains: {{path: out.txt, text: "next"}}}}
  - id: b-honest
    intent: Write the file.
    solution: ["echo ok > out.txt"]
    assert: [{{file_contains: {{path: out.txt, text: ok}}}}]
"""


def test_pid_1_cannot_be_read_or_signalled_and_the_box_serves_on(tmp_path: Path):
    from tests.helpers.cli import Cli

    (tmp_path / "suite.yaml").write_text(SUITE)
    out = Cli(tmp_path)("run", "suite.yaml", "--agent", "oracle", "--concurrency", "1", "-q",
                        "--output-dir", "run")
    assert out.returncode == 0, out.stdout + out.stderr  # both tasks passed, in one box
    assert "2/2 passed" in out.stdout, out.stdout
