"""One `docker build`, watched: its steps as progress, its log kept for when it fails.

A Harbor task's image can take minutes (a compiler, a TeX installation); one "building …"
line for all of it says nothing. The classic builder prints `Step 3/12 : RUN …` as it goes;
on a terminal that becomes one live line (`proctor: building the image of task 2 of 5: step
3/12 RUN apt-get … · 0:42`), elsewhere (CI logs, `proctor check`) a line when the build starts, one
every HEARTBEAT_S while a step runs, and one when it ends. The log is kept (its tail is the
error when the build fails), with terminal escapes removed.
"""

from __future__ import annotations

import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import IO

from proctor import proc
from proctor.text import plain

HEARTBEAT_S = 30.0
KEPT_LINES = 400  # of the log, its end: what a failure shows is the last few
_STEP = re.compile(r"^Step (\d+)/(\d+) : (.*)$")


@dataclass
class Built:
    """How an image build ended: its exit code, the end of its log, its time."""
    exit_code: int | None  # None: timed out
    log: str  # the end of the build's output (stdout and stderr), plain text
    seconds: float


class Status:
    """Where the image builds of a run are: `image N of M`, the current step, elapsed."""

    def __init__(self, total: int, *, quiet: bool = False, stream: IO[str] | None = None):
        self.total, self.n, self.quiet = total, 1, quiet  # n: the task being prepared
        self.stream = stream or sys.stderr
        self.live = not quiet and self.stream.isatty()
        self.what, self.step, self.t0, self.last = "", "", 0.0, 0.0
        self._lock = threading.Lock()

    def begin(self, what: str) -> None:
        """A build starts: `what` is the task and why it is built."""
        self.what, self.step, self.t0 = what, "", time.monotonic()
        self.last = self.t0
        self._say(f"building the image of task {self.n} of {self.total}: {what}", keep=True)

    def at(self, step: str) -> None:
        self.step = step
        self.tick()

    def end(self, ok: bool, seconds: float) -> None:
        word = "built" if ok else "failed"
        self._say(f"task {self.n} of {self.total}: image {word} in {_clock(seconds)}: {self.what}",
                  keep=True)

    def tick(self) -> None:
        now = time.monotonic()
        if not self.live and now - self.last < HEARTBEAT_S:  # a log: a line now and then
            return
        self.last = now
        step = f": {self.step}" if self.step else ""
        self._say(f"building the image of task {self.n} of {self.total}{step} · "
                  f"{_clock(now - self.t0)}",
                  keep=not self.live)

    def _say(self, text: str, *, keep: bool) -> None:
        if self.quiet:
            return
        with self._lock:
            if self.live:
                # COLUMNS, else the terminal's width, else 100 (a pty that says 0)
                width = shutil.get_terminal_size((100, 24)).columns
                line = f"proctor: {text}"[:max(40, width - 1)]
                print(f"\r\x1b[2K{line}", end="\n" if keep else "", file=self.stream, flush=True)
            else:
                print(f"proctor: {text}", file=self.stream, flush=True)


def build(argv: list[str], *, stdin: bytes | None, timeout: float,
          status: Status | None = None) -> Built:
    """`docker build ARGS` (no `-q`: its steps are the progress), killed at `timeout`."""
    t0 = time.monotonic()
    try:
        p = subprocess.Popen(["docker", "build", *argv], start_new_session=True,
                             stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    except OSError as e:
        return Built(1, f"could not start docker: {e}", 0.0)
    kept: deque[str] = deque(maxlen=KEPT_LINES)
    timed_out = threading.Event()

    def kill() -> None:
        timed_out.set()
        proc.kill_group(p.pid, signal.SIGKILL)

    timer = threading.Timer(timeout, kill)
    timer.daemon = True
    timer.start()
    ticker = _Ticker(status)
    try:
        if stdin is not None and p.stdin is not None:
            try:
                p.stdin.write(stdin)
                p.stdin.close()
            except BrokenPipeError:
                pass
        assert p.stdout is not None
        for raw in p.stdout:
            line = plain(raw.decode("utf-8", errors="replace")).rstrip()
            if not line:
                continue
            kept.append(line)
            if status is not None and (m := _STEP.match(line)):
                status.at(f"step {m.group(1)}/{m.group(2)} {m.group(3)[:60]}")
        p.wait()
    except BaseException:  # interrupted: no build left running
        proc.kill_group(p.pid, signal.SIGKILL)
        p.wait()
        raise
    finally:
        timer.cancel()
        ticker.stop()
        proc.kill_group(p.pid, signal.SIGKILL)
    seconds = time.monotonic() - t0
    if timed_out.is_set():
        return Built(None, "\n".join(kept), seconds)
    return Built(p.returncode, "\n".join(kept), seconds)


class _Ticker:
    """Calls `status.tick()` every second while a build runs (a long step still shows its
    elapsed time)."""

    def __init__(self, status: Status | None):
        self.status = status
        self.done = threading.Event()
        if status is not None:
            threading.Thread(target=self._run, daemon=True).start()

    def _run(self) -> None:
        assert self.status is not None
        while not self.done.wait(1.0):
            self.status.tick()

    def stop(self) -> None:
        self.done.set()


def _clock(seconds: float) -> str:
    m, s = divmod(int(round(seconds)), 60)
    return f"{m}:{s:02d}"
