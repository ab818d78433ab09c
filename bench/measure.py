"""Measuring a whole process: wall time, and the peak memory of its process tree.

Wall time is `time.perf_counter()` around start-to-reaped of the process, so interpreter
start, imports and teardown all count, as a user waiting at a prompt sees it. CPU time is the
kernel's account of the process and every descendant it reaped (`wait4`'s user + system): on
a shared machine it shows the work a run did apart from what it waited for; the 1-minute
load average when it started says how shared the machine was, and `others_cpu_s` how much
CPU everything else on the machine used while it ran (all CPUs' busy time, from /proc/stat,
less the run's own): on a 2-core machine a run's wall tracks that, its CPU does not.

Peak memory (only when asked, so the sampling never costs the timed runs anything): every
`interval` seconds a sampler thread reads /proc/*/stat, finds every process descended from the
one started, and sums their resident set sizes; the peak of that sum is reported. A child
between fork and exec shows its parent's RSS (it shares the parent's memory) and is not
counted (see `tree_rss_kb`). Shared pages (libc) count once per process, so the sum slightly
overstates what the tree holds; a process living shorter than one interval can be missed.
The started process's own peak is reported alongside: its VmHWM (the kernel's high-water mark
of its resident set since it exec'd), read at every sample, so exact but for growth in its
last `interval` (ru_maxrss from wait4 would not do: it starts from the launcher's RSS).
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

PAGE_KB = os.sysconf("SC_PAGE_SIZE") // 1024


@dataclass
class Measurement:
    wall_s: float
    returncode: int
    cpu_s: float = 0.0  # user + system of the process and its reaped descendants
    load: float = 0.0  # the 1-minute load average when it started
    others_cpu_s: float = 0.0  # CPU the rest of the machine used meanwhile
    tree_peak_rss_mb: float | None = None  # peak of the summed RSS of the process tree
    root_peak_rss_mb: float | None = None  # the started process's own peak (VmHWM)
    samples: int = 0  # how many times the tree was sampled
    stderr_tail: str = ""


def _processes() -> dict[int, tuple[int, tuple[bytes, ...], int]]:
    """pid -> (ppid, program, rss pages) of every process, from /proc/PID/stat. `program` is
    (comm, startcode, endcode, startstack): it changes when a process execs."""
    procs = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            stat = Path(f"/proc/{name}/stat").read_bytes()
        except OSError:  # gone meanwhile
            continue
        # pid (comm) state ppid ...: comm may hold spaces and parentheses, so split after it
        close = stat.rindex(b")")
        f = stat[close + 2:].split()
        # after comm: state(0) ppid(1) ... rss(21) rsslim(22) startcode(23) endcode(24)
        # startstack(25)
        program = (stat[stat.index(b"(") + 1:close], f[23], f[24], f[25])
        procs[int(name)] = (int(f[1]), program, int(f[21]))
    return procs


def tree_rss_kb(root: int) -> int:
    """The summed RSS of `root` and all its descendants, in KiB. A child that has been forked
    (or vforked) but has not yet exec'd a program shows its parent's memory as its own (the
    same pages, shared or copy-on-write); it is recognised by the same name, code and stack
    addresses as its parent, and not counted."""
    procs = _processes()
    children: dict[int, list[int]] = {}
    for pid, (ppid, _program, _rss) in procs.items():
        children.setdefault(ppid, []).append(pid)
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        todo.extend(children.get(pid, ()))
        if pid not in procs:
            continue
        ppid, program, rss = procs[pid]
        parent = procs.get(ppid)
        if pid != root and parent is not None and parent[1] == program:
            continue
        total += rss * PAGE_KB
    return total


def _hwm_kb(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0  # gone, or a zombie


class _Sampler(threading.Thread):
    def __init__(self, pid: int, interval: float):
        super().__init__(daemon=True)
        self.pid, self.interval = pid, interval
        self.peak_kb, self.root_hwm_kb, self.samples = 0, 0, 0
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            self.peak_kb = max(self.peak_kb, tree_rss_kb(self.pid))
            self.root_hwm_kb = max(self.root_hwm_kb, _hwm_kb(self.pid))
            self.samples += 1
            self.stop.wait(self.interval)


def run(argv: list[str], *, cwd: Path, env: dict[str, str] | None = None,
        memory: bool = False, interval: float = 0.02, timeout: float = 3600) -> Measurement:
    """Run `argv` to completion; stdout is discarded, the end of stderr kept for errors."""
    load = os.getloadavg()[0]
    busy0 = _busy_s()
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
    busy = _busy_s() - busy0
    proc.returncode = os.waitstatus_to_exitcode(status)
    reader.join()
    m = Measurement(wall_s=wall, returncode=proc.returncode, load=round(load, 2),
                    cpu_s=round(usage.ru_utime + usage.ru_stime, 3),
                    others_cpu_s=round(max(0.0, busy - usage.ru_utime - usage.ru_stime), 2),
                    stderr_tail=b"".join(err).decode(errors="replace")[-3000:])
    if sampler is not None:
        sampler.stop.set()
        sampler.join()
        m.tree_peak_rss_mb = round(sampler.peak_kb / 1024, 1)
        m.root_peak_rss_mb = round(sampler.root_hwm_kb / 1024, 1)
        m.samples = sampler.samples
    return m


def settle(max_wait: float = 3.0, idle: float = 0.9, window: float = 0.1) -> bool:
    """Before a timed run: what the previous run left (its dirty pages, written back by the
    kernel's flusher threads up to 30 s later; anything it left running) is not the next
    run's cost. Writes back every dirty page now, then waits, up to `max_wait` seconds, for a
    `window` in which the machine's CPUs are `idle` (a fraction) idle. True if it settled;
    on a machine others keep busy it does not, and the run starts anyway."""
    os.sync()
    deadline = time.monotonic() + max_wait
    while True:
        before = _cpu_jiffies()
        time.sleep(window)
        after = _cpu_jiffies()
        total, spare = (b - a for a, b in zip(before, after, strict=True))
        if total and spare / total >= idle:
            return True
        if time.monotonic() >= deadline:
            return False


def _busy_s() -> float:
    """Seconds all CPUs have been busy since boot (neither idle nor waiting for I/O)."""
    total, spare = _cpu_jiffies()
    return (total - spare) / os.sysconf("SC_CLK_TCK")


def _cpu_jiffies() -> tuple[int, int]:
    """(all, idle + iowait) jiffies of every CPU since boot, from /proc/stat."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    return sum(fields), fields[3] + fields[4]
