"""Spec files that travel with a Ray run: scaffolds, seeds, check and mock scripts.

The head packs every file the tasks read from the spec's side (the same set `--resume`
fingerprints, proctor.inputs.referenced, plus the spec files) into one tar, named by its
content. Each node unpacks it once into `<tmp>/proctor-cache/<digest>/` (shared by every
run on that node that ships the same files) and runs the trials against TaskDefs whose
paths point there: the absolute path P of a file on the head is `<cache>/root/P` on the
node, so relative paths (`script: checks/x.sh` against `base_dir`) need no rewriting.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import io
import os
import shutil
import tarfile
import tempfile
from collections.abc import Iterable
from pathlib import Path

from proctor.inputs import mock_scripts, referenced
from proctor.model import CheckDef, StepDef, TaskDef
from proctor.services.seed import seed_files

CACHE_DIR = "proctor-cache"


@dataclasses.dataclass
class Bundle:
    """Spec files packed for Ray workers, named by their digest."""
    digest: str
    data: bytes


def pack(tasks: Iterable[TaskDef], models: Iterable[str] = ()) -> Bundle:
    """One deterministic tar of every file the tasks read (sorted, no times or owners)."""
    tasks, models = list(tasks), list(models)
    paths = {Path(p).resolve() for p in referenced(tasks, models)}
    paths |= {Path(t.source).resolve() for t in tasks if Path(t.source).is_file()}
    # A mock script found in the head's current directory is also put next to the spec
    # (where it was looked up first, in vain): a node's current directory is Ray's.
    aliases = {Path(os.path.normpath(Path(t.base_dir).resolve() / name)): path.resolve()
               for t in tasks for name, path in mock_scripts(t, models)
               if not os.path.isabs(name) and not (Path(t.base_dir) / name).is_file()}
    members = {path: path for path in _files(paths)} | aliases
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for arcname, path in sorted(members.items()):
            info = tar.gettarinfo(str(path), arcname=str(arcname).lstrip("/"))
            info.mtime, info.uid, info.gid, info.uname, info.gname = 0, 0, 0, "", ""
            if info.isreg():
                with path.open("rb") as f:
                    tar.addfile(info, f)
            elif info.issym() or info.isdir():
                tar.addfile(info)
    data = buf.getvalue()
    return Bundle(hashlib.blake2b(data, digest_size=16).hexdigest(), data)


def _files(paths: set[Path]) -> set[Path]:
    out: set[Path] = set()
    for path in paths:
        if path.is_dir() and not path.is_symlink():
            out.add(path)
            for dirpath, dirnames, filenames in os.walk(path):
                out.update(Path(dirpath) / d for d in dirnames)
                out.update(Path(dirpath) / f for f in filenames)
        elif path.exists() or path.is_symlink():
            out.add(path)
    return out


def extract(tar: tarfile.TarFile, dest: Path) -> None:
    """`tar.extractall(dest, filter="tar")`; on a Python without extraction filters (before
    3.11.4: Debian bookworm's 3.11.2, the Ray worker image's) the same rules by hand, member
    by member so the links already made are followed: a leading / is dropped, nothing is
    written outside `dest` (through `..` or a link), no set-uid, set-gid or group/other-write
    bit."""
    if hasattr(tarfile, "tar_filter"):
        tar.extractall(dest, filter="tar")
        return
    top = os.path.realpath(dest)
    for m in tar.getmembers():
        m.name = m.name.lstrip("/")
        targets = [os.path.join(top, m.name)]
        if m.islnk():
            targets.append(os.path.join(top, m.linkname.lstrip("/")))
        for path in targets:
            if os.path.commonpath([top, os.path.realpath(path)]) != top:
                raise tarfile.TarError(f"{m.name!r} would be extracted outside {dest}")
        m.mode &= 0o755
        tar.extract(m, dest)


def materialize(digest: str, data: bytes) -> Path:
    """Unpack the bundle on this node unless it already is; returns the root to prefix."""
    cache = Path(tempfile.gettempdir()) / CACHE_DIR
    root = cache / digest
    if (root / ".complete").exists():
        return root / "root"
    cache.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{digest}-", dir=cache))
    try:
        with tarfile.open(fileobj=io.BytesIO(data)) as tar:
            extract(tar, staging / "root")
        (staging / ".complete").touch()
        with contextlib.suppress(OSError):  # another run on this node unpacked it first
            os.rename(staging, root)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return root / "root"


def relocate(task: TaskDef, root: Path) -> TaskDef:
    """The task as this node sees it: every spec-side path under `root` (a Harbor task's
    tests, solution and step uploads included)."""
    def moved(path: str | None) -> str | None:
        return str(root / path.lstrip("/")) if path and os.path.isabs(path) else path

    def to(path: str) -> str:
        return str(root / path.lstrip("/"))

    def checks(step: TaskDef | StepDef) -> list[CheckDef]:
        return [c if (config := c.config.relocated(to)) is c.config
                else dataclasses.replace(c, config=config) for c in step.checks]

    services = []
    for svc in task.services:
        seeds = {k: moved(v) for k, v in seed_files(svc.config).items()}
        services.append(dataclasses.replace(svc, config={**svc.config, **seeds}) if seeds else svc)
    steps = [dataclasses.replace(s, checks=checks(s), solution_dir=moved(s.solution_dir),
                                 uploads=[(moved(d) or d, inside) for d, inside in s.uploads])
             for s in task.steps]
    return dataclasses.replace(task, source=moved(task.source) or "",
                               base_dir=moved(task.base_dir) or "",
                               scaffold=moved(task.scaffold), checks=checks(task),
                               services=services, solution_dir=moved(task.solution_dir),
                               dockerfile=moved(task.dockerfile), steps=steps,
                               uploads=[(moved(d) or d, inside) for d, inside in task.uploads])
