"""What the Ray worker image is made of, without Docker: the wheels repacked from this
environment (ray_wheels.py) and tar extraction on a Python without extraction filters
(Debian bookworm's 3.11.2, the image's)."""

from __future__ import annotations

import io
import os
import tarfile
import zipfile
from importlib import metadata
from pathlib import Path

import pytest

from proctor.executors import ray_files
from proctor.executors.ray_wheels import needed, normal, proctor_wheel, repack


def test_the_closure_holds_ray_and_proctors_dependencies_and_not_the_dev_tools():
    names = {normal(d.metadata["Name"]) for d in needed()}
    assert {"proctor", "ray", "pydantic", "click", "pip"} <= names
    assert not names & {"pytest", "ruff", "mypy"}  # the `dev` extra is not the worker's


def test_a_repacked_wheel_keeps_the_executable_bit_and_is_the_same_bytes_twice(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    click = metadata.distribution("click")
    one, two = repack(click, tmp_path / "a"), repack(click, tmp_path / "b")
    assert one.read_bytes() == two.read_bytes()  # Docker's layer cache sees no change
    with zipfile.ZipFile(repack(metadata.distribution("ray"), tmp_path / "a")) as z:
        raylet = next(i for i in z.infolist() if i.filename.endswith("raylet/raylet"))
        assert (raylet.external_attr >> 16) & 0o111
        names = z.namelist()
    assert names[-1].endswith(".dist-info/RECORD") and not any("__pycache__" in n for n in names)
    assert not any(n.endswith(".data/scripts/ray") for n in names)  # pip writes entry points


def test_proctors_wheel_is_the_imported_package(tmp_path):
    import proctor.executors.ray_worker_image as me

    with zipfile.ZipFile(proctor_wheel(tmp_path)) as z:
        assert z.read("proctor/executors/ray_worker_image.py") == Path(me.__file__).read_bytes()
        assert b"Requires-Dist" in z.read(f"proctor-{metadata.version('proctor')}.dist-info/METADATA")


def _tar(*members: tuple[str, bytes | str]) -> tarfile.TarFile:
    """A tar of files (bytes, set-uid) and symlinks (str: the target)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, what in members:
            info = tarfile.TarInfo(name)
            if isinstance(what, str):
                info.type, info.linkname = tarfile.SYMTYPE, what
                tar.addfile(info)
            else:
                info.size, info.mode = len(what), 0o4755
                tar.addfile(info, io.BytesIO(what))
    buf.seek(0)
    return tarfile.open(fileobj=buf)


@pytest.mark.parametrize("filters", [True, False], ids=["filters", "python-3.11.2"])
def test_extract_keeps_everything_in_dest_and_drops_set_uid(tmp_path, monkeypatch, filters):
    if not filters:
        monkeypatch.delattr(tarfile, "tar_filter")
    ok, outside = tmp_path / "ok", tmp_path / "outside"
    outside.mkdir()
    ray_files.extract(_tar(("a/b", b"x"), ("a/l", "b"), ("/abs/x", b"y"), ("a/etc", "/etc")), ok)
    assert (ok / "a" / "l").read_bytes() == b"x"
    assert not (ok / "a" / "b").stat().st_mode & 0o4000
    assert (ok / "abs" / "x").read_bytes() == b"y"  # its leading / dropped
    assert os.readlink(ok / "a" / "etc") == "/etc"  # a link may point anywhere ...
    for bad in [[("../up", b"x")], [("a/hop", str(outside)), ("a/hop/f", b"x")]]:
        with pytest.raises(tarfile.TarError):  # ... nothing is written through it
            ray_files.extract(_tar(*bad), tmp_path / "bad")
    assert not (tmp_path / "up").exists() and not list(outside.iterdir())
