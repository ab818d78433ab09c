"""The wheels a Ray worker image installs, made from this Python environment, offline.

A Ray cluster wants the same Ray (and the same Python minor version) on every node, and
proctor's nodes want the head's proctor. So the worker image gets exactly what runs here:
each distribution `proctor[ray]` needs is packed back into a wheel from its installed files
(its RECORD), and proctor itself from the package this process imported (a source checkout
or an installed wheel alike). Nothing is downloaded. The wheels are byte-for-byte the same
from one build to the next (fixed zip dates), so Docker's layer cache keeps the dependencies'
layer while only proctor's changes; the dependencies' wheels are also kept in the cache dir.
"""

from __future__ import annotations

import base64
import hashlib
import io
import os
import re
import sys
import zipfile
from importlib import metadata
from pathlib import Path

from proctor.errors import SetupError

_DATE = (1980, 1, 1, 0, 0, 0)  # the earliest a zip can say: every wheel byte-identical
_SKIP_META = {"RECORD", "INSTALLER", "REQUESTED", "direct_url.json"}
FORMAT = 2  # bump when the wheels made here change: the cache keeps them by this
_INSTALLER = "pip"  # installs the rest in the image (a wheel runs as `python pip.whl/pip`)


def normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def needed(root: str = "proctor", extras: tuple[str, ...] = ("ray",)) -> list[metadata.Distribution]:
    """`root[extras]` and everything it requires here, transitively (markers evaluated
    for this Python), plus pip."""
    from packaging.requirements import Requirement

    seen: dict[str, metadata.Distribution] = {}
    done: set[tuple[str, tuple[str, ...]]] = set()
    todo: list[tuple[str, tuple[str, ...]]] = [(root, extras), (_INSTALLER, ())]
    while todo:
        name, wanted = todo.pop()
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            hint = " (pip install 'proctor[ray]')" if normal(name) == "ray" else ""
            raise SetupError(f"the worker image needs {name}, which is not installed in this "
                             f"Python ({sys.executable}){hint}") from None
        key = normal(dist.metadata["Name"])
        if (key, wanted) in done:
            continue
        done.add((key, wanted))
        seen[key] = dist
        for line in dist.requires or []:
            req = Requirement(line)
            envs = [{"extra": e} for e in ("", *wanted)]
            if req.marker is None or any(req.marker.evaluate(env) for env in envs):
                todo.append((req.name, tuple(sorted(req.extras))))
    return sorted(seen.values(), key=lambda d: normal(d.metadata["Name"]))


def _filename(dist: metadata.Distribution, tags: list[str]) -> str:
    name = re.sub(r"[-_.]+", "_", dist.metadata["Name"])
    parts = [sorted({t.split("-")[i] for t in tags}) for i in range(3)]
    return f"{name}-{dist.version}-{'-'.join('.'.join(p) for p in parts)}.whl"


class _Wheel:
    """A wheel being written: every entry with a fixed date, RECORD last."""

    def __init__(self, path: Path, dist_info: str) -> None:
        self.zip = zipfile.ZipFile(path, "w", zipfile.ZIP_STORED)  # fast; pip does not care
        self.dist_info = dist_info
        self.record: list[str] = []

    def add(self, arcname: str, data: bytes, mode: int = 0o644) -> None:
        info = zipfile.ZipInfo(arcname, _DATE)
        info.external_attr = (0o100000 | (0o755 if mode & 0o111 else 0o644)) << 16  # pip keeps +x
        self.zip.writestr(info, data)
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        self.record.append(f"{arcname},sha256={digest},{len(data)}")

    def close(self) -> None:
        self.record.append(f"{self.dist_info}/RECORD,,")
        info = zipfile.ZipInfo(f"{self.dist_info}/RECORD", _DATE)
        self.zip.writestr(info, "\n".join(self.record) + "\n")
        self.zip.close()


def repack(dist: metadata.Distribution, out: Path) -> Path:
    """The installed distribution as a wheel in `out` (kept: same name and version, same
    wheel)."""
    wheel_meta = dist.read_text("WHEEL") or ""
    tags = [ln.split(":", 1)[1].strip() for ln in wheel_meta.splitlines() if ln.startswith("Tag:")]
    files = dist.files
    if not tags or files is None:
        raise SetupError(f"the worker image: {dist.metadata['Name']} {dist.version} was not "
                         "installed from a wheel (no WHEEL tags or RECORD); reinstall it with "
                         "pip and build again")
    path = out / _filename(dist, tags)
    if path.exists():
        return path
    scripts = {ep.name for ep in dist.entry_points if ep.group in ("console_scripts", "gui_scripts")}
    dist_info = next(str(f.parts[0]) for f in files if str(f.parts[0]).endswith(".dist-info"))
    data_dir = dist_info.removesuffix(".dist-info") + ".data"
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    wheel = _Wheel(tmp, dist_info)
    try:
        for f in sorted(files, key=str):
            if "__pycache__" in f.parts or f.suffix == ".pyc":
                continue
            if f.parts[0] == dist_info and f.name in _SKIP_META:
                continue
            source = Path(str(dist.locate_file(f)))
            if not source.is_file():
                continue
            if f.parts[0] != "..":
                wheel.add(str(f), source.read_bytes(), source.stat().st_mode)
                continue
            where = Path(os.path.relpath(source.resolve(), Path(sys.prefix).resolve()))
            if where.parts[0] == "bin":  # pip writes entry points' scripts itself
                if where.name in scripts:
                    continue
                body = source.read_bytes()
                if body.startswith(b"#!") and b"python" in body.split(b"\n", 1)[0]:
                    body = b"#!python\n" + body.split(b"\n", 1)[1]
                wheel.add(f"{data_dir}/scripts/{where.name}", body, 0o755)
            elif where.parts[0] != "..":
                wheel.add(f"{data_dir}/data/{where}", source.read_bytes(), source.stat().st_mode)
        wheel.close()
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path


def proctor_wheel(out: Path) -> Path:
    """proctor as this process imported it (a checkout's src/proctor or an installed copy),
    with its installed metadata (requirements, entry points)."""
    import proctor

    dist = metadata.distribution("proctor")
    package = Path(proctor.__file__).resolve().parent
    dist_info = f"proctor-{dist.version}.dist-info"
    path = out / f"proctor-{dist.version}-py3-none-any.whl"
    wheel = _Wheel(path, dist_info)
    for source in sorted(package.rglob("*")):
        rel = source.relative_to(package)
        if source.is_file() and "__pycache__" not in rel.parts and source.suffix not in (".pyc", ".so"):
            wheel.add(f"proctor/{rel.as_posix()}", source.read_bytes(), source.stat().st_mode)
    wheel.add(f"{dist_info}/METADATA", (dist.read_text("METADATA") or "").encode())
    wheel.add(f"{dist_info}/entry_points.txt", (dist.read_text("entry_points.txt") or "").encode())
    wheel.add(f"{dist_info}/WHEEL", b"Wheel-Version: 1.0\nGenerator: proctor\n"
                                    b"Root-Is-Purelib: true\nTag: py3-none-any\n")
    wheel.close()
    return path


def wheelhouse(deps: Path, own: Path) -> tuple[list[Path], Path]:
    """The dependencies' wheels (in `deps`, reused) and proctor's (in `own`, fresh)."""
    deps.mkdir(parents=True, exist_ok=True)
    own.mkdir(parents=True, exist_ok=True)
    wheels = [repack(d, deps) for d in needed() if normal(d.metadata["Name"]) != "proctor"]
    return wheels, proctor_wheel(own)


def pip_of(wheels: list[Path]) -> Path:
    found = [w for w in wheels if w.name.startswith("pip-")]
    if not found:
        raise SetupError("the worker image needs pip in this Python")
    return found[0]


def listing(wheels: list[Path]) -> bytes:
    """What the dependencies' layer holds, for its tag's digest."""
    buf = io.BytesIO()
    for w in sorted(wheels):
        buf.write(f"{w.name} {w.stat().st_size}\n".encode())
    return buf.getvalue()
