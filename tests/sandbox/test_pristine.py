"""What the places hold is known without reading them (placefiles.py `held`) only while
nothing can have changed them: in a box the last trial's wipe found empty, with nothing run
or written since, a snapshot is {}; after a snapshot read once every process was killed,
the wipe removes what it showed without listing the places. Every snapshot given is
compared with what reading the places gives, and every wipe with what is left."""

from __future__ import annotations

import os
import time

import pytest

from proctor.sandbox import files
from proctor.sandbox.base import SandboxSpec
from proctor.sandbox.local.backend import LocalBackend
from proctor.sandbox.namespaces import missing

HOSTILE = ("for d in $PROCTOR_WORKDIR $HOME /tmp /dev/shm; do echo x > $d/left; "
           "mkdir -p $d/dir/sub; done; chmod 000 /tmp/dir/sub /tmp/dir; "
           "(setsid sh -c 'sleep 0.5; echo late > /tmp/late' > /dev/null 2>&1 &)")


@pytest.fixture
def reads(monkeypatch):
    """How many times the places were read (files.snapshot called)."""
    if missing() is not None:
        pytest.skip(f"no namespace box here: {missing()}")
    seen: list[int] = []
    real = files.snapshot

    def counted(places, budget):
        seen.append(1)
        return real(places, budget)

    monkeypatch.setattr(files, "snapshot", counted)
    return seen


async def test_only_a_wiped_box_untouched_since_is_taken_as_empty(tmp_path, reads):
    backend = LocalBackend(tmp_path / "scratch", pool_size=1)
    spec = SandboxSpec(trial_id="t0", root=tmp_path / "t0", env={})
    first = await backend.create(spec)
    slot = first.slot
    try:
        assert first.held is None  # a new box: read like any other
        res = await first.exec(HOSTILE, timeout=10)
        assert res.exit_code == 0, res
        assert "left" in {p.rsplit("/", 1)[-1] for p in await first.snapshot()}
        await first.close()
        # Each way into the places, in the reused box after a wipe.
        writes = {
            "nothing": None,
            "write_file": lambda sb: sb.write_file("given.txt", b"given"),
            "copy_in": lambda sb: sb.copy_in(src, "copied"),
            "exec": lambda sb: sb.exec("echo x > $HOME/ran", timeout=10),
            "exec writing nothing": lambda sb: sb.exec("true", timeout=10),
            "export": lambda sb: sb.export(),
        }
        src = tmp_path / "src"
        src.mkdir()
        (src / "f").write_text("f")
        for i, (way, write) in enumerate(writes.items(), 1):
            sandbox = await backend.create(SandboxSpec(trial_id=f"t{i}", root=tmp_path / f"t{i}",
                                                       env={}))
            try:
                assert sandbox.slot is slot, way  # the same box, wiped
                if write is not None:
                    await write(sandbox)
                before = len(reads)
                given = await sandbox.snapshot()
                assert len(reads) == before + (write is not None), way  # read unless untouched
                assert given == _walk_places(sandbox), way
                if write is None:
                    assert given == {}
                    time.sleep(0.6)  # the hostile trial's daemon, had it survived, writes now
                    assert _walk_places(sandbox) == {}
            finally:
                await sandbox.close()
    finally:
        await backend.close()


def _walk(places):
    """What reading the places gives, now (the real walk, not counted)."""
    out = {}
    for prefix, root in places:
        files.walk(root, prefix, files.Budget(time.monotonic() + 30), out.__setitem__)
    return out


def _walk_places(sandbox):
    places = [("" if inside == sandbox.workdir else inside.rstrip("/") + "/", host)
              for inside, host in sandbox.places]
    return _walk(places)


async def test_a_box_with_a_mount_inside_a_place_is_always_read(tmp_path, reads):
    shown = tmp_path / "shown"  # a read-only path inside /tmp: its mount point stays
    shown.mkdir()
    if not str(shown).startswith("/tmp/"):
        pytest.skip("the test's directory is not under /tmp")
    backend = LocalBackend(tmp_path / "scratch", pool_size=1)
    try:
        for i in range(2):
            sandbox = await backend.create(SandboxSpec(
                trial_id=f"t{i}", root=tmp_path / f"t{i}", env={},
                readonly_paths=[str(shown)]))
            try:
                assert sandbox.held is None
                before = len(reads)
                given = await sandbox.snapshot()
                assert len(reads) == before + 1
                assert given == _walk_places(sandbox) != {}  # the mount point and its way
            finally:
                await sandbox.close()
    finally:
        await backend.close()


async def test_the_wipe_removes_what_the_last_snapshot_showed_only_if_nothing_ran_since(
        tmp_path, reads, monkeypatch):
    from proctor.sandbox import pool

    listed: list[str] = []
    real_empty = pool._empty

    def counted(place, *args, **kw):
        listed.append(str(place))
        return real_empty(place, *args, **kw)

    monkeypatch.setattr(pool, "_empty", counted)
    backend = LocalBackend(tmp_path / "scratch", pool_size=1)
    make = "for d in $PROCTOR_WORKDIR $HOME /tmp /dev/shm; do echo x > $d/f; ln -s f $d/l; done"
    try:
        for i, after in enumerate([None, "echo late > $HOME/late", None]):
            sandbox = await backend.create(SandboxSpec(trial_id=f"t{i}", root=tmp_path / f"t{i}",
                                                       env={}))
            try:
                assert (await sandbox.exec(make, timeout=10)).exit_code == 0
                await sandbox.kill_processes()  # as a trial does before its snapshot
                seen = await sandbox.snapshot()
                assert len(seen) == 8 and sandbox.held == seen
                if after is not None:  # a command after the snapshot: it is forgotten
                    assert (await sandbox.exec(after, timeout=10)).exit_code == 0
                    assert sandbox.held is None
                places = [str(host) for _, host in sandbox.places]
                del listed[:]
            finally:
                await sandbox.close()
            # Listed again only when something ran since the snapshot; empty either way.
            assert sorted(listed) == (sorted(places) if after is not None else []), i
            assert all(os.listdir(p) == [] for p in places)
    finally:
        await backend.close()


async def test_a_snapshot_with_processes_maybe_left_is_never_held(tmp_path, reads):
    backend = LocalBackend(tmp_path / "scratch", pool_size=1)
    sandbox = await backend.create(SandboxSpec(trial_id="t0", root=tmp_path / "t0", env={}))
    try:
        daemon = "(setsid sh -c 'sleep 0.3; echo late > $HOME/late' > /dev/null 2>&1 &)"
        assert (await sandbox.exec(daemon, timeout=10)).exit_code == 0
        assert await sandbox.snapshot() == {}  # before the daemon writes ...
        assert sandbox.held is None  # ... but it may: not held
        time.sleep(0.6)
        assert "/home/agent/late" in await sandbox.snapshot()
        await sandbox.kill_processes()
        assert "/home/agent/late" in await sandbox.snapshot()
        assert sandbox.held is not None  # nothing left to change them now
    finally:
        await sandbox.close()
        await backend.close()


async def test_a_held_snapshot_of_many_files_or_a_directory_is_wiped_the_usual_way(
        tmp_path, reads):
    backend = LocalBackend(tmp_path / "scratch", pool_size=1)
    many = "for i in $(seq 200); do : > /tmp/f$i; done; mkdir -p $HOME/d/e; : > $HOME/d/e/f"
    try:
        for i in range(2):
            sandbox = await backend.create(SandboxSpec(trial_id=f"t{i}", root=tmp_path / f"t{i}",
                                                       env={}))
            try:
                if i == 1:  # the same box, wiped: nothing of the last trial
                    assert sandbox.held == {} and _walk_places(sandbox) == {}
                    break
                assert (await sandbox.exec(many, timeout=30)).exit_code == 0
                await sandbox.kill_processes()
                assert len(await sandbox.snapshot()) == 203 and sandbox.held is not None
            finally:
                await sandbox.close()
    finally:
        await backend.close()
