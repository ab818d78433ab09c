"""The per-trial disk limit (sandbox/disk.py): a file system of that size as root, else a
per-file rlimit and a measurement that names the limit."""

from __future__ import annotations

import os

import pytest

from proctor.sandbox import disk
from proctor.sandbox.base import Resources
from proctor.sandbox.files import FilesLimit
from proctor.sandbox.local.backend import LocalSandbox


@pytest.mark.skipif(not disk.usable(), reason="a file system per box needs root, mkfs.ext4 "
                    "and loop devices")
def test_a_box_directory_becomes_a_file_system_of_its_size_and_goes_again(tmp_path):
    root = tmp_path / "box-0"
    assert disk.mount(root, 64 << 20)
    try:
        assert os.path.ismount(root)
        st = os.statvfs(root)
        assert 50 << 20 < st.f_blocks * st.f_frsize <= 64 << 20
        with pytest.raises(OSError, match="No space left"), open(root / "big", "wb") as f:
            os.posix_fallocate(f.fileno(), 0, 128 << 20)
    finally:
        disk.unmount(root)
    assert not os.path.ismount(root) and not (tmp_path / ".box-0.disk").exists()


@pytest.mark.skipif(not disk.usable(), reason="needs root, mkfs.ext4 and loop devices")
def test_the_janitor_unmounts_what_a_killed_run_left(tmp_path):
    for name in ("box-0", "box-1"):
        assert disk.mount(tmp_path / name, 16 << 20)
    assert disk.sweep(tmp_path) == 2
    assert not any(os.path.ismount(tmp_path / n) for n in ("box-0", "box-1"))


async def test_without_a_file_system_of_its_own_the_total_is_measured(tmp_path):
    """Unisolated (or no root): no file system of its own; a trial whose files take more than
    its limit is stopped by the snapshot, naming the limit."""
    sb = LocalSandbox(tmp_path / "sb", env={}, keep=True,
                      resources=Resources(disk_bytes=1 << 20))
    try:
        await sb.exec("head -c 3000000 /dev/urandom > big.bin", timeout=10)
        with pytest.raises(FilesLimit, match="disk limit.*more than resources.disk"):
            await sb.snapshot()
        await sb.exec("rm big.bin; truncate -s 10M sparse.bin", timeout=10)
        await sb.snapshot()  # a hole takes no disk
    finally:
        await sb.close()
