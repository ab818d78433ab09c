"""Between two trials in one box, its places are emptied (sandbox/pool.py `_empty`): on the
event loop when only a few plain files are left, in a thread otherwise. Both ways leave the
place empty but for what must stay (a read-only mount's point and the way to it)."""

from __future__ import annotations

import os

import pytest

from proctor.sandbox.pool import SMALL_ENTRIES, _Big, _empty


def _fill(place, names):
    for name in names:
        path = place / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x")


def test_a_few_plain_files_go_on_the_loop(tmp_path):
    _fill(tmp_path, ["a", "b", ".hidden"])
    os.symlink("/etc/passwd", tmp_path / "link")
    os.mkfifo(tmp_path / "fifo")
    assert _empty(tmp_path, small=True) is True
    assert os.listdir(tmp_path) == []
    assert os.path.exists("/etc/passwd")  # a symlink goes, never what it points to


@pytest.mark.parametrize("leftover", ["a directory", "many files"])
def test_a_directory_or_many_files_are_left_to_a_thread_untouched(tmp_path, leftover):
    names = ["d/f"] if leftover == "a directory" else [f"f{i}" for i in range(SMALL_ENTRIES + 1)]
    _fill(tmp_path, names + ["plain"])
    before = sorted(os.listdir(tmp_path))
    with pytest.raises(_Big):
        _empty(tmp_path, small=True)
    assert sorted(os.listdir(tmp_path)) == before  # nothing removed half-way
    assert _empty(tmp_path) is True  # the thread's way: everything, however much
    assert os.listdir(tmp_path) == []


def test_what_must_stay_stays_either_way(tmp_path):
    _fill(tmp_path, ["a", "mnt/other", "mnt/ro/kept"])
    assert _empty(tmp_path, ["mnt/ro"], small=True) is True
    assert sorted(os.listdir(tmp_path)) == ["mnt"]
    assert os.listdir(tmp_path / "mnt") == ["ro"]
    assert os.listdir(tmp_path / "mnt" / "ro") == ["kept"]  # a mount point is never entered
