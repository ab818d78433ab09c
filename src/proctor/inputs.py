"""Every file a run reads from the spec's side, by content: what `--resume` checks first.

run.json records a digest of each spec file (and included task list), scaffold tree, seed
file, custom check script and mock script (an agent's or a judge's). `--resume` recomputes them: a file that changed
since the run started stops it (exit 2, naming the file) instead of grading the rest of the
run against a different spec.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable
from pathlib import Path

from proctor.errors import UsageError
from proctor.model import StepDef, TaskDef
from proctor.results import SuiteIdentity

MAX_TREE_FILES = 10_000  # a scaffold bigger than this is fingerprinted by its first files


def referenced(tasks: Iterable[TaskDef], models: Iterable[str] = ()) -> set[Path]:
    """The files and directories the tasks read besides their spec files."""
    out: set[Path] = set()
    extra_models = list(models)
    bases: dict[str, Path] = {}  # a suite's tasks share theirs (a Path each: 1,000 of them)
    found: dict[tuple[str, str], Path | None] = {}  # mock scripts looked up (`mock_scripts`)
    for task in tasks:
        base = bases.get(task.base_dir) or bases.setdefault(task.base_dir, Path(task.base_dir))
        if task.scaffold:
            out.add(Path(task.scaffold))
        for svc in task.services:
            from proctor.services.seed import seed_files  # a task with services (start-up)

            seeds = list(seed_files(svc.config).values())
            if seeds:  # `seed_file`, else `seed`: the one the service reads
                out.add(base / seeds[0])
            if isinstance(svc.config.get("build"), str):  # a side container's build context
                out.add(Path(svc.config["build"]).parent)
        # A task directory's parts (a Harbor task's): its image's context, its solution, its
        # tests and each step's.
        if task.dockerfile:
            out.add(Path(task.dockerfile).parent)
        parts: list[TaskDef | StepDef] = [task, *task.steps]
        for step in parts:
            out.update(Path(d) for d in [step.solution_dir, *(u for u, _ in step.uploads)] if d)
            for check in step.checks:  # a custom check's script, a reward check's tests
                out.update(base / os.path.expanduser(f) for f in check.config.files())
        out.update(path for _, path in mock_scripts(task, extra_models, found))
    return {p for p in out if p.exists()}


def mock_scripts(task: TaskDef, models: Iterable[str] = (),
                 found: dict[tuple[str, str], Path | None] | None = None
                 ) -> list[tuple[str, Path]]:
    """(name, file) of each mock script the task's trials read: its agent's model, its
    judges', `models` (--model). A name is looked up next to the spec, else in the current
    directory (providers.mock.resolve_script_path); built-in and missing ones are left out.
    `found`: the lookups made already, by (spec directory, name), to share among a suite's
    tasks (a 1,000-task suite looks its model up once, not 1,000 times)."""
    judges = [m for c in task.checks for m in c.config.judge_models()]
    found = {} if found is None else found
    out = []
    for model in dict.fromkeys([*task.models, task.agent.model, *judges, *models]):
        if not isinstance(model, str) or not model.startswith("mock/"):
            continue
        name = model.removeprefix("mock/")
        key = (task.base_dir, name)
        if key not in found:
            found[key] = next((path for path in (Path(task.base_dir) / name, Path(name))
                               if path.is_file()), None)
        if (path := found[key]) is not None:
            out.append((name, path))
    return out


def fingerprint(paths: Iterable[str | Path]) -> dict[str, str]:
    """path -> digest of its content (a directory: of every file under it)."""
    return {str(Path(p).resolve()): _digest(Path(p)) for p in sorted(set(map(str, paths)))}


def check_unchanged(recorded: dict[str, str]) -> None:
    """Raise a UsageError naming the first recorded input that changed or vanished."""
    for path, digest in sorted(recorded.items()):
        now = _digest(Path(path)) if os.path.lexists(path) else "missing"
        if now != digest:
            what = "was removed" if now == "missing" else "changed"
            raise UsageError(f"{path} {what} since the run started; --resume grades the rest "
                             "of a run against the spec it began with. Restore the file, or "
                             "start a new run with `proctor run`")


def _digest(path: Path) -> str:
    h = hashlib.blake2b(digest_size=16)
    if path.is_dir():
        for i, (rel, file) in enumerate(_tree(path)):
            if i >= MAX_TREE_FILES:
                break
            h.update(rel.encode() + b"\0")
            _feed(h, file)
    else:
        _feed(h, path)
    return h.hexdigest()


def _tree(root: Path) -> list[tuple[str, Path]]:
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(filenames):
            p = Path(dirpath) / name
            out.append((str(p.relative_to(root)), p))
    return out


def _feed(h: hashlib.blake2b, path: Path) -> None:
    if path.is_symlink():
        h.update(b"link:" + os.readlink(path).encode())
        return
    if not path.is_file():  # a FIFO or a device would block or never end
        h.update(b"special")
        return
    try:
        with path.open("rb") as f:
            while chunk := f.read(1 << 20):
                h.update(chunk)
    except OSError:
        h.update(b"unreadable")


def suite_identity(sources: Iterable[str], selection: Iterable[str] = ()) -> SuiteIdentity:
    """What `proctor view` calls one suite, for run.json's `suite`: `key`, the spec files a
    run read (resolved: `.`, `cli-bench.yaml` and `suite/` from anywhere name the same file
    once), and `version`, their content and the task selection (`--task`, `--category`): the
    runs of one version measured the same thing. `name` is for people."""
    files = sorted({str(Path(s).resolve()) for s in sources})
    version = hashlib.blake2b(digest_size=6)
    for f in files:
        version.update(f"{f}\0{_digest(Path(f))}\n".encode())
    version.update("\0".join(sorted(selection)).encode())
    key = hashlib.blake2b("\n".join(files).encode(), digest_size=6).hexdigest()
    return {"key": key, "version": version.hexdigest(), "files": files, "name": suite_name(files)}


def suite_name(files: list[str]) -> str:
    """`git-basics/cli-bench.yaml`; several files: their directory (`examples`, 7 files)."""
    if not files:
        return "(no specs)"
    if len(files) == 1:
        p = Path(files[0])
        return f"{p.parent.name}/{p.name}" if p.parent.name else p.name
    common = Path(os.path.commonpath(files))
    return f"{common.name or common} ({len(files)} files)"
