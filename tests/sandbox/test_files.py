"""The places' walker (sandbox/files.py): every entry at any depth, content digests that
skip holes, limits that are named, never silent."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from proctor.sandbox import files
from proctor.sandbox.files import Budget, FilesLimit


def _snap(root, **kw):
    return files.snapshot([("", root)], Budget(time.monotonic() + 60, **kw))


def test_every_entry_at_any_depth_beyond_path_max(tmp_path):
    d = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    for _ in range(40):  # 40 x 200 characters: twice PATH_MAX
        os.mkdir("d" * 200, dir_fd=d)
        nxt = os.open("d" * 200, os.O_RDONLY | os.O_DIRECTORY, dir_fd=d)
        os.close(d)
        d = nxt
    fd = os.open("deep.txt", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=d)
    os.write(fd, b"x")
    os.close(fd)
    os.close(d)
    snap = _snap(tmp_path)
    deep = [p for p in snap if p.endswith("deep.txt")]
    assert len(deep) == 1 and len(deep[0]) > 8000
    assert len(snap) == 41


def test_more_than_the_open_directory_bound(tmp_path, monkeypatch):
    monkeypatch.setattr(files, "_OPEN_DIRS", 3)
    path = tmp_path
    for i in range(10):
        path = path / f"d{i}"
        path.mkdir()
        (path / "f").write_text(str(i))
        (path.parent / f"after{i}").write_text("x")  # walked after coming back up
    snap = _snap(tmp_path)
    assert len([p for p in snap if p.endswith("/f") or p == "d0/f"]) == 10
    assert len([p for p in snap if "after" in p]) == 10


def test_symlinks_are_recorded_not_followed(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "link").symlink_to("/etc")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    snap = _snap(tmp_path)
    assert snap["a/link"].kind == "symlink" and snap["a/link"].digest == "-> /etc"
    assert snap["b"].kind == "symlink"
    assert not any(p.startswith("b/") or p.startswith("a/link/") for p in snap)


def test_a_hole_and_written_zeros_digest_the_same(tmp_path):
    sparse, dense = tmp_path / "s", tmp_path / "d"
    with open(sparse, "wb") as f:
        f.truncate(5 * files.BLOCK + 7)
        f.seek(2 * files.BLOCK + 3)
        f.write(b"data")
    with open(dense, "wb") as f:
        content = bytearray(5 * files.BLOCK + 7)
        content[2 * files.BLOCK + 3:2 * files.BLOCK + 7] = b"data"
        f.write(content)
    snap = _snap(tmp_path)
    assert snap["s"].digest == snap["d"].digest
    with open(sparse, "r+b") as f:
        f.seek(4 * files.BLOCK)
        f.write(b"\1")
    assert _snap(tmp_path)["s"].digest != snap["s"].digest


def test_a_huge_sparse_file_is_hashed_without_reading_its_holes(tmp_path):
    big = tmp_path / "big"
    with open(big, "wb") as f:
        f.truncate(1 << 40)  # 1 TiB of hole
        f.seek(1 << 39)
        f.write(b"x")
    budget = Budget(time.monotonic() + 60)
    files.snapshot([("", tmp_path)], budget)
    assert budget.read <= files.BLOCK


def test_the_entry_limit_is_named(tmp_path):
    for i in range(5):
        (tmp_path / str(i)).write_text("x")
    with pytest.raises(FilesLimit, match="more than 3 entries"):
        _snap(tmp_path, max_entries=3)


def test_the_deadline_is_named(tmp_path):
    for i in range(300):
        (tmp_path / str(i)).write_text("x")
    with pytest.raises(FilesLimit, match="deadline"):
        files.snapshot([("", tmp_path)], Budget(time.monotonic() - 1))


def test_copy_sparse_keeps_holes(tmp_path):
    src, dst = tmp_path / "src", tmp_path / "dst"
    with open(src, "wb") as f:
        f.truncate(1 << 30)
        f.write(b"head")
    files.copy_sparse(str(src), str(dst))
    assert dst.stat().st_size == 1 << 30 and dst.stat().st_blocks * 512 < (1 << 20)
    assert dst.read_bytes()[:4] == b"head"


def test_open_in_never_follows_a_symlink(tmp_path):
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "f").write_text("x")
    (tmp_path / "via").symlink_to(tmp_path / "real")
    (tmp_path / "lf").symlink_to("/etc/hostname")
    fd = files.open_in(tmp_path, "real/f")
    assert fd is not None
    os.close(fd)
    assert files.open_in(tmp_path, "via/f") is None
    assert files.open_in(tmp_path, "lf") is None


def test_copy_sparse_across_file_systems(tmp_path):
    """copy_file_range refuses to cross file systems (EXDEV): a plain copy then."""
    src = tmp_path / "src"
    with open(src, "wb") as f:
        f.write(b"data")
        f.truncate(1 << 20)
    dst = "/dev/shm/proctor-copy-sparse-test"
    try:
        files.copy_sparse(str(src), dst)
        assert Path(dst).read_bytes()[:4] == b"data" and os.path.getsize(dst) == 1 << 20
    finally:
        os.unlink(dst)
