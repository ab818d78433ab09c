"""Nothing a sandbox does with a trial's files blocks the event loop (issue 28.1): snapshots,
reads, writes, copies and streaming run beside a loop-lag monitor over a 20,000-file
workspace, and no callback of the loop keeps it busy for more than 50 ms.

What is measured is the loop thread's own CPU time between two ticks of the monitor, not
wall time: on a loaded machine the operating system may pause the whole process for longer
than that, which says nothing about proctor; a callback that hashes or copies on the loop
shows as the loop thread computing for that long.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from proctor.sandbox import BACKENDS
from proctor.sandbox.base import Resources, SandboxSpec

pytestmark = pytest.mark.slow

FILES, DIRS = 20_000, 200
STALL_S = 0.05


class LagMonitor:
    """Ticks every 2 ms; keeps the longest stretch the loop thread spent computing between
    two ticks (its CPU time, user and system), and the longest wall-clock gap for context."""

    def __init__(self) -> None:
        self.worst_cpu = self.worst_wall = 0.0
        self._task: asyncio.Task | None = None

    async def _run(self) -> None:
        wall, cpu = time.monotonic(), time.thread_time()
        while True:
            await asyncio.sleep(0.002)
            now_wall, now_cpu = time.monotonic(), time.thread_time()
            self.worst_cpu = max(self.worst_cpu, now_cpu - cpu)
            self.worst_wall = max(self.worst_wall, now_wall - wall)
            wall, cpu = now_wall, now_cpu

    def __enter__(self) -> LagMonitor:
        self._task = asyncio.get_running_loop().create_task(self._run())
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._task is not None
        self._task.cancel()


def _scaffold(root: Path) -> Path:
    for d in range(DIRS):
        sub = root / f"d{d:03}"
        sub.mkdir(parents=True)
        for f in range(FILES // DIRS):
            (sub / f"f{f:03}.txt").write_text(f"file {d} {f}\n")
    with open(root / "big.bin", "wb") as f:
        f.write(b"x" * (64 << 20))
    return root


async def test_file_work_never_blocks_the_event_loop(tmp_path):
    scaffold = await asyncio.to_thread(_scaffold, tmp_path / "scaffold")
    backend = BACKENDS.get("local")(tmp_path / "scratch", 1)
    isolation = "auto"
    try:
        backend.preflight("auto")
    except Exception:
        isolation = "none"
    spec = SandboxSpec(trial_id="lag.r0", root=tmp_path / "sb", env={}, isolation=isolation,
                       resources=Resources(memory_bytes=1 << 30, pids=512, disk_bytes=1 << 30))
    sandbox = await backend.create(spec)
    try:
        with LagMonitor() as monitor:
            await sandbox.copy_in(scaffold, ".")
            before = await sandbox.snapshot()
            assert len(before) >= FILES
            await sandbox.write_file("written.bin", b"y" * (8 << 20))
            res = await sandbox.exec("for d in d0*; do echo more > $d/new.txt; done; "
                                     "head -c 50000000 /dev/zero > /tmp/zeros", timeout=60)
            assert res.exit_code == 0, res.stderr
            after = await sandbox.snapshot()
            assert len(after) > len(before)
            data = await sandbox.read_file("big.bin")
            assert len(data) == 64 << 20
            assert (await sandbox.stat("d000/f000.txt")).kind == "file"
            assert len(await sandbox.list_dir("d000")) == FILES // DIRS + 1  # new.txt
            seen = 0

            def sink(path: str, offset: int, chunk: bytes) -> None:
                nonlocal seen
                seen += len(chunk)

            await sandbox.stream_files(["big.bin", "written.bin", "/tmp/zeros"], sink)
            assert seen >= (64 << 20) + (8 << 20)
            graded = await sandbox.grade(["/bin/sh", "-c", "ls | wc -l"], timeout=60)
            assert graded.exit_code == 0, graded.stderr
    finally:
        await sandbox.close()
        await backend.close()
    assert monitor.worst_cpu < STALL_S, (
        f"the event loop's thread computed for {monitor.worst_cpu * 1000:.0f} ms without "
        f"yielding (longest wall-clock gap {monitor.worst_wall * 1000:.0f} ms)")
