"""A box's next trial takes its snapshot as empty without reading the places only when the
last trial's wipe found them empty and nothing ran or was written since (placefiles.py
`pristine`); every snapshot given is compared with what reading the places gives."""

from __future__ import annotations

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
        assert first.pristine is False  # a new box: read like any other
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
                assert sandbox.pristine is False
                before = len(reads)
                given = await sandbox.snapshot()
                assert len(reads) == before + 1
                assert given == _walk_places(sandbox) != {}  # the mount point and its way
            finally:
                await sandbox.close()
    finally:
        await backend.close()
