"""Issue 38: `proctor check examples/` printed nothing for 7 s, even on a terminal. Each pass
(oracle, nop, the attacks) is progress: on a terminal rich's live bar, elsewhere a plain line
per task (per task × attack) saying which and how it went, with the counts and elapsed time;
all of it on stderr, stdout only the findings."""

from __future__ import annotations

import os
import pty
import re
import select
import subprocess
import time

from tests.helpers import PROCTOR

SPEC = """
cli: sh
tasks:
  - id: alpha
    intent: write a file
    solution: ["echo hi > f"]
    assert: [{file_exists: f}]
  - id: beta
    intent: write another file
    solution: ["echo hi > g"]
    assert: [{file_exists: g}]
  - id: broken
    intent: write a third file
    solution: ["echo hi > wrong"]
    assert: [{file_exists: h}]
"""
COUNTS = r"\d pass \d fail \d error · 0:\d\d elapsed · eta \S+"


def test_check_without_a_terminal_says_each_task_as_it_goes(cli, spec):
    spec(SPEC)
    out = cli("check", "spec.yaml")
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert "\x1b" not in out.stderr + out.stdout  # a log, not a terminal: no escape codes
    lines = out.stderr.splitlines()
    for agent, statuses in (("oracle", {"alpha": "pass", "beta": "pass", "broken": "fail"}),
                            ("nop", {"alpha": "fail", "beta": "fail", "broken": "fail"})):
        mine = [x for x in lines if re.match(rf"proctor: check: {agent} \d", x)]
        assert len(mine) == 3, lines
        seen = {}
        for n, line in enumerate(mine, 1):
            m = re.fullmatch(rf"proctor: check: {agent} {n}/3 tasks · {COUNTS} · (\S+): (\w+)",
                             line)
            assert m, line
            seen[m.group(1)] = m.group(2)
        assert seen == statuses
    # the last line of each pass counts them all
    assert [x for x in lines if x.startswith("proctor: check: oracle 3/3 tasks · 2 pass 1 fail "
                                             "0 error")]
    # stdout: the findings' summary only, never progress
    assert "proctor:" not in out.stdout and out.stdout.strip().endswith(
        "1 problem(s): 3 task(s) checked with oracle and nop")


def test_check_attacks_without_a_terminal_says_each_task_and_attack(cli, spec):
    spec(SPEC)
    out = cli("check", "spec.yaml", "--attack", "trojan-shell", "--attack", "conftest",
              "--output-dir", "attacks", timeout=300)
    assert "Traceback" not in out.stderr and "\x1b" not in out.stderr
    mine = [x for x in out.stderr.splitlines() if x.startswith("proctor: check: attacks ")]
    assert len(mine) == 6, out.stderr
    pairs = set()
    for n, line in enumerate(mine, 1):
        m = re.fullmatch(rf"proctor: check: attacks {n}/6 attack trials · \d won \d contained · "
                         r"0:\d\d elapsed · eta \S+ · (\S+) × (\S+): (won|contained)", line)
        assert m, line
        pairs.add((m.group(1), m.group(2)))
    assert pairs == {(t, a) for t in ("alpha", "beta", "broken")
                     for a in ("trojan-shell", "conftest")}


def _on_a_terminal(*args: str, cwd, timeout: float = 120) -> tuple[int, str]:
    """The proctor CLI with stdout and stderr on a pseudo-terminal: (exit code, all it wrote)."""
    master, slave = pty.openpty()
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "120"}
    env.pop("NO_COLOR", None)
    p = subprocess.Popen([PROCTOR, *args], cwd=cwd, stdin=subprocess.DEVNULL, stdout=slave,
                         stderr=slave, env=env, close_fds=True)
    os.close(slave)
    chunks: list[bytes] = []
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.5)
            if ready:
                try:
                    data = os.read(master, 65536)
                except OSError:  # the other side closed: everything was read
                    break
                if not data:
                    break
                chunks.append(data)
            elif p.poll() is not None:
                break
    finally:
        os.close(master)
        p.wait(timeout=30)
    return p.returncode, b"".join(chunks).decode("utf-8", errors="replace")


def test_check_on_a_terminal_draws_rich_live_progress(spec, tmp_path):
    spec(SPEC)
    code, text = _on_a_terminal("check", "spec.yaml", cwd=tmp_path)
    assert code == 1, text
    # rich's live display: cursor control and the bar, for each pass
    assert "\x1b[?25l" in text  # the cursor hidden while the live display is drawn
    assert "━" in text  # the bar
    for agent in ("oracle", "nop"):
        assert re.search(rf"check: {agent}.*?\d/3", text), text
    # not the plain lines a log gets
    assert not re.search(r"^proctor: check: oracle \d/3 tasks", text, re.MULTILINE)
