"""The grader box: where every check that executes something runs (docs/security.md).

A check that runs a program — `verify`, `command_exit`, a `custom` script, a Harbor verifier
— runs it over what the agent left: a repository with the agent's `.git/config`, a test
suite with the agent's `conftest.py`. It must not run it with proctor's privileges. So such
commands run in a box of their own beside the trial's (namespaces.py `Box` + the spawner):

* the trial's final files at the same paths, **read-only**: the workspace and the agent's
  HOME (`/home/agent`); the agent's `/tmp` and `/dev/shm` are not shown;
* its own HOME (`/home/grader`), `/tmp` (TMPDIR) and `/dev/shm`, writable and emptied after
  every check, so a check can leave nothing for the next one (nor for the agent: the agent's
  processes are gone, and nothing it can see is writable here);
* proctor's tools read-only at `/proctor-grader` (`bin/git`: git that runs nothing of the
  repository's, safe-git.sh; `files/`: what the current check was given, e.g. its script);
* as root, uid 65533: neither root nor the agent's 65534 (without root, the caller's uid, as
  every box has; the separation is then the namespaces, and the read-only files);
* no network but the trial's own services (forwarded per check, as in the trial's box);
* the trial's limits (a cgroup of its own); every process it started is killed after each
  check.

One grader box is kept beside each box of the pool (`Slot.grader`), built on a trial's first
executing check and reused by the next trials of that box (its mounts show the same host
directories, whose contents change between trials): a trial with no such check pays
nothing, and one with such checks pays a command start (docs/benchmarks.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import itertools
import os
import shutil
import stat
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from proctor.fieldwise import FrozenFieldwise
from proctor.proc import ExecResult
from proctor.sandbox import cgroup as cgroups
from proctor.sandbox.base import Resources
from proctor.sandbox.files import copy_sparse
from proctor.sandbox.forward import Forwarder
from proctor.sandbox.namespaces import Box, Mount
from proctor.sandbox.pool import INSIDE_HOME, KILL_TIMEOUT_S, Slot, unlock
from proctor.sandbox.spawn import SpawnerLost

GRADER_UID = 65533  # as root: the uid of every check command (not root, not the agent's 65534)
TOOLS = "/proctor-grader"  # read-only in the box: bin/ (safe git), files/ (this check's files)
HOME = "/home/grader"
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
_PROXY_VARS = ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "NO_PROXY", "no_proxy")
_SCRATCH = ("home", "tmp", "shm")  # the grader's own writable places, emptied after each check
numbers = itertools.count()  # names of grader boxes' directories


@dataclass(frozen=True, eq=False, repr=False)
class GraderShape(FrozenFieldwise):
    """What a grader box is built with: the trial's places it shows read-only ((host dir,
    path inside) pairs), host paths shown read-only at their own path, and its workdir."""

    places: tuple[tuple[str, str], ...]
    readonly: tuple[str, ...]
    workdir: str

    def mounts(self, root: Path) -> list[Mount]:
        own = [Mount(root / "home", HOME), Mount(root / "tmp", "/tmp"),
               Mount(root / "shm", "/dev/shm"), Mount(root / "tools", TOOLS, writable=False)]
        theirs = [Mount(Path(host), inside, writable=False) for host, inside in self.places]
        extra = [Mount(Path(p), p, writable=False) for p in self.readonly if os.path.exists(p)]
        # Parents first: /tmp before a workdir under it.
        return sorted(own + theirs + extra, key=lambda m: m.inside.count("/"))

    def kept_in_tmp(self) -> set[str]:
        """Names in the grader's /tmp that lead to mount points (a fixed workdir under /tmp,
        or proctor's own Python in a checkout under /tmp): emptying /tmp after a check must
        not remove them, which would unmount them for the next check."""
        insides = [inside for _, inside in self.places] + list(self.readonly)
        return {p[len("/tmp/"):].split("/")[0] for p in insides if p.startswith("/tmp/")}


class Grader:
    """One grader box and its host directories (`root`: home/, tmp/, shm/, tools/)."""

    def __init__(self, root: Path, shape: GraderShape, box: Box,
                 cgroup: cgroups.TrialCgroup | None):
        self.root, self.shape, self.box, self.cgroup = root, shape, box, cgroup
        self.broken = False  # a check left it unusable: closed, never reused

    @classmethod
    async def create(cls, root: Path, shape: GraderShape, *, hosts_file: Path | None,
                     resources: Resources, env: Mapping[str, str]) -> Grader:
        cg = await asyncio.to_thread(_make_dirs, root, resources)
        try:
            box = await Box.start(shape.mounts(root), workdir=shape.workdir,
                                  hosts_file=hosts_file, env=dict(env), uid=GRADER_UID,
                                  join=cg.attach if cg is not None else None)
        except BaseException:
            if cg is not None:
                await asyncio.to_thread(cg.remove)
            raise
        return cls(root, shape, box, cg)

    def env(self, base: Mapping[str, str], extra: Mapping[str, str] | None = None,
            ) -> dict[str, str]:
        """A check's environment: the trial's (its services, secrets, spec env), with the
        grader's own HOME and TMPDIR and the safe git first on PATH; no egress proxy."""
        env = {k: v for k, v in base.items() if k not in _PROXY_VARS}
        env.update({"HOME": HOME, "TMPDIR": "/tmp"})
        env.update(extra or {})
        env["PATH"] = f"{TOOLS}/bin:" + env.get("PATH", SYSTEM_PATH)
        return env

    async def run(self, argv: Sequence[str], *, env: dict[str, str], cwd: str, timeout: float,
                  stdin: bytes | None = None, files: Mapping[str, bytes | Path] | None = None,
                  endpoints: Sequence[tuple[str, int]] = (), resources: Resources | None = None,
                  limit: int = 1_000_000) -> ExecResult:
        """One check's command; afterwards every process it started is killed and the
        grader's places emptied."""
        if self.cgroup is not None and resources is not None:
            self.cgroup.apply(resources)
        forwarder = Forwarder() if endpoints else None
        try:
            if files:
                await asyncio.to_thread(put_files, self.root / "tools", files)
            for host, port in endpoints:
                assert forwarder is not None
                sock = await self.box.spawner.listen(host, port)
                await forwarder.forward(sock, (host, port))
            if "/" not in argv[0]:  # the spawner execs a path: let the shell find a name
                argv = ["/bin/sh", "-c", 'exec "$@"', "sh", *argv]
            return await self.box.spawner.run(
                list(argv), env=env, cwd=cwd, timeout=timeout, stdin=stdin, limit=limit,
                as_bytes=None if self.cgroup is not None
                else (resources or Resources()).memory_bytes)
        finally:
            if forwarder is not None:
                await forwarder.close()
            await self._reset()

    def fault(self) -> str | None:
        return self.cgroup.fault() if self.cgroup is not None else None

    async def _reset(self) -> None:
        """Every process of the check killed, the grader's places emptied: on the loop when
        there is next to nothing to do (the usual case: a thread hop costs more), else in a
        thread."""
        try:  # the check's PID namespace, killed whole by the spawner
            await self.box.spawner.kill_all(KILL_TIMEOUT_S)
        except (SpawnerLost, OSError, TimeoutError):
            self.broken = True
        keep = {"tmp": self.shape.kept_in_tmp()}
        places = [(self.root / name, keep.get(name, set())) for name in _SCRATCH]
        places.append((self.root / "tools" / "files", set()))
        if all(_nothing_in(p, k) for p, k in places):
            clean = True
        else:
            clean = await asyncio.to_thread(lambda: all([empty(p, k) for p, k in places]))
        if not clean or not self.alive():
            self.broken = True

    def alive(self) -> bool:
        return not self.broken and self.box.alive() and not self.box.spawner.busy

    async def close(self) -> None:
        await self.box.close()
        await asyncio.to_thread(self._remove)

    def _remove(self) -> None:
        if self.cgroup is not None:
            self.cgroup.remove()
        shutil.rmtree(self.root, ignore_errors=True)


def script_source() -> str:
    """safe-git.sh with the real git's path filled in (found again at run time if absent)."""
    real = shutil.which("git", path=SYSTEM_PATH) or "/usr/bin/git"
    text = Path(__file__).with_name("safe-git.sh").read_text()
    return text.replace("real=REAL_GIT", f"real={real}", 1)


def install_tools(bin_dir: Path) -> None:
    """proctor's tools for checks (today: the safe git) into `bin_dir`, readable by all."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    os.chmod(bin_dir, 0o755)
    git = bin_dir / "git"
    tmp = git.with_name(f".git.{os.getpid()}")
    tmp.write_text(script_source())
    os.chmod(tmp, 0o755)
    os.replace(tmp, git)


def unisolated_tools(tools: Path, files: Mapping[str, bytes | Path]) -> None:
    """`--isolation none` has no grader box: the tools and a check's files in a directory of
    the trial's (a directory given is linked: proctor's own user reads it)."""
    if not (tools / "bin" / "git").exists():
        install_tools(tools / "bin")
    (tools / "files").mkdir(parents=True, exist_ok=True)
    for name, content in files.items():
        dest = tools / "files" / name
        if isinstance(content, Path) and content.is_dir():
            os.symlink(content.resolve(), dest)
            continue
        if isinstance(content, Path):
            shutil.copyfile(content, dest)
        else:
            dest.write_bytes(content)
        os.chmod(dest, 0o755)


def _make_dirs(root: Path, resources: Resources) -> cgroups.TrialCgroup | None:
    for name in (*_SCRATCH, "tools/files", "tools/shared"):
        (root / name).mkdir(parents=True, exist_ok=True)
    os.chmod(root, 0o755)
    os.chmod(root / "tools", 0o755)
    install_tools(root / "tools" / "bin")
    for name in _SCRATCH:
        own(root / name)
    os.chmod(root / "tools" / "files", 0o755)
    os.chmod(root / "tools" / "shared", 0o755)
    return cgroups.TrialCgroup.create(f"proctor-{os.getpid()}-{root.parent.name}-{root.name}",
                                      resources)


def own(place: Path) -> None:
    """An empty writable place of the grader's: owned by its uid (as root), mode 0755."""
    st = os.lstat(place)
    if os.geteuid() == 0 and (st.st_uid, st.st_gid) != (GRADER_UID, GRADER_UID):
        os.lchown(place, GRADER_UID, GRADER_UID)
    if stat.S_IMODE(st.st_mode) != 0o755 or not stat.S_ISDIR(st.st_mode):
        os.chmod(place, 0o755)


def put_files(tools: Path, files: Mapping[str, bytes | Path]) -> None:
    """Each file into tools/files/NAME; a directory is copied once per grader box (into
    tools/shared/, readable by the grader's uid whatever its modes on the host) and linked."""
    for name, content in files.items():
        dest = tools / "files" / name
        if isinstance(content, Path) and content.is_dir():
            key = hashlib.sha256(os.fsencode(content.resolve())).hexdigest()[:16]
            shared = tools / "shared" / key
            if not shared.exists():
                tmp = shared.with_name(f".{key}.tmp")
                shutil.rmtree(tmp, ignore_errors=True)
                shutil.copytree(content, tmp, symlinks=True, copy_function=copy_sparse)
                _readable(tmp)
                os.replace(tmp, shared)
            os.symlink(f"{TOOLS}/shared/{key}", dest)
            continue
        if isinstance(content, Path):
            shutil.copyfile(content, dest)
        else:
            dest.write_bytes(content)
        os.chmod(dest, 0o755)  # read-only to the check; a script may run directly


def _readable(top: Path) -> None:
    """Directories 0755 and files a+r (keeping x): the grader's uid reads a copy of a tree
    that may be private to proctor's user on the host."""
    for d, _dirs, names in os.walk(top):
        os.chmod(d, 0o755)
        for n in names:
            p = os.path.join(d, n)
            if not os.path.islink(p):
                os.chmod(p, os.stat(p).st_mode | 0o444)


def empty(place: Path, keep: Collection[str] = ()) -> bool:
    """Everything in `place` removed (whatever modes a check left) but the names in `keep`
    (mount points); the directory itself stays (the box has it mounted)."""
    for attempt in range(2):
        try:
            with os.scandir(place) as it:
                entries = [e for e in it if e.name not in keep]
        except OSError:
            return False
        if not entries:
            if place.name in _SCRATCH:
                with contextlib.suppress(OSError):
                    own(place)
            return True
        for e in entries:
            with contextlib.suppress(OSError):
                if not e.is_dir(follow_symlinks=False):
                    os.unlink(e.path)
                    continue
                if attempt:  # without root, a check may have locked its directories
                    unlock(e.path)
                shutil.rmtree(e.path, ignore_errors=True)
    return False


def _nothing_in(place: Path, keep: Collection[str]) -> bool:
    try:
        with os.scandir(place) as it:
            return not any(e.name not in keep for e in it)
    except OSError:
        return False


async def for_slot(slot: Slot, readonly: tuple[str, ...], resources: Resources,
                   env: Mapping[str, str]) -> Grader:
    """The grader box beside a box of the pool (built on first use, kept with the box):
    the box's workspace and HOME read-only, plus `readonly` host paths."""
    grader: Grader | None = slot.graders.get(readonly)
    if grader is not None and grader.alive():
        return grader
    if grader is not None:
        del slot.graders[readonly]
        await grader.close()
    places = ((str(slot.root / "work"), slot.shape.workdir),
              (str(slot.root / "home"), INSIDE_HOME))
    shape = GraderShape(places, tuple(slot.shape.readonly) + readonly, slot.shape.workdir)
    grader = await Grader.create(slot.root / f"grader-{next(numbers)}", shape,
                                 hosts_file=slot.hosts_file, resources=resources, env=env)
    slot.graders[readonly] = grader
    return grader
