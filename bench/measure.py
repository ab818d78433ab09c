"""Measuring a whole process: wall time, and the peak memory of its process tree.

Wall time is `time.perf_counter()` around start-to-reaped of the process, so interpreter
start, imports and teardown all count, as a user waiting at a prompt sees it.

Peak memory (only when asked, so the sampling never costs the timed runs anything): every
`interval` seconds a sampler thread walks /proc, finds every process descended from the one
started, and sums their resident set sizes (VmRSS); the peak of that sum is reported. Shared
pages (libc, a parent's pages a forked child has not yet touched) count once per process,
so the sum is an upper bound of what the tree really holds; a process living shorter than one
interval can be missed. The started process's own exact peak (ru_maxrss from wait4, kept by
the kernel) is reported alongside.
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Measurement:
    wall_s: float
    returncode: int
    tree_peak_rss_mb: float | None = None  # peak of the summed RSS of the process tree
    root_peak_rss_mb: float | None = None  # the started process's own peak (ru_maxrss)
    samples: int = 0  # how many times the tree was sampled
    stderr_tail: str = ""


def _children_map() -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            stat = Path(f"/proc/{name}/stat").read_bytes()
        except OSError:  # gone meanwhile
            continue
        # pid (comm) state ppid ...; comm may hold spaces and parentheses, so split after it
        ppid = int(stat[stat.rindex(b")") + 2:].split(None, 2)[1])
        children.setdefault(ppid, []).append(int(name))
    return children


def _rss_kb(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0  # gone, or a zombie (no VmRSS line)


def tree_rss_kb(root: int) -> int:
    """The summed VmRSS of `root` and all its descendants, in KiB."""
    children = _children_map()
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        total += _rss_kb(pid)
        todo.extend(children.get(pid, ()))
    return total


class _Sampler(threading.Thread):
    def __init__(self, pid: int, interval: float):
        super().__init__(daemon=True)
        self.pid, self.interval = pid, interval
        self.peak_kb, self.samples = 0, 0
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            self.peak_kb = max(self.peak_kb, tree_rss_kb(self.pid))
            self.samples += 1
            self.stop.wait(self.interval)


def run(argv: list[str], *, cwd: Path, env: dict[str, str] | None = None,
        memory: bool = False, interval: float = 0.02, timeout: float = 3600) -> Measurement:
    """Run `argv` to completion; stdout is discarded, the end of stderr kept for errors."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    sampler = None
    if memory:
        sampler = _Sampler(proc.pid, interval)
        sampler.start()
    # Drain stderr on a thread so a chatty process never blocks on a full pipe.
    err: list[bytes] = []
    reader = threading.Thread(target=lambda: err.append(proc.stderr.read()), daemon=True)
    reader.start()
    deadline = start + timeout
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if time.perf_counter() > deadline:
            proc.kill()
        time.sleep(0.002)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    reader.join()
    m = Measurement(wall_s=wall, returncode=proc.returncode,
                    stderr_tail=b"".join(err).decode(errors="replace")[-3000:])
    if sampler is not None:
        sampler.stop.set()
        sampler.join()
        m.tree_peak_rss_mb = round(sampler.peak_kb / 1024, 1)
        m.root_peak_rss_mb = round(usage.ru_maxrss / 1024, 1)
        m.samples = sampler.samples
    return m
