"""Spec files -> TaskDefs: find the files, read them, tell the dialects apart, gather every
problem. The entry points: `load_specs` (for `run`/`check`) and `validate_paths` (`validate`)."""

from __future__ import annotations

import gc
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from proctor.agents import AGENTS
from proctor.config import load_config
from proctor.errors import SpecError, SpecIssue, UsageError
from proctor.fieldwise import Fieldwise
from proctor.model import EXTERNAL_AGENTS, TaskDef
from proctor.providers import MODEL_AGENT_TYPES, preflight
from proctor.sandbox import BACKENDS
from proctor.spec.diagnostics import Issues, describe
from proctor.spec.yamlpos import Doc, Path, YamlError, locate, read

SUFFIXES = (".yaml", ".yml")
SCENARIO_KEYS = ("version", "task", "invariants")
DIALECTS = ("a suite has `cli:` and `tasks:`; a scenario has `version: 1`, `task:` and "
            "`invariants:`")


@dataclass(eq=False, repr=False)
class LoadResult(Fieldwise):
    """What loading specs gave: the tasks, warnings, and the files read."""
    tasks: list[TaskDef]
    warnings: list[SpecIssue] = field(default_factory=list)
    files: int = 0  # YAML files read: specs and included task lists
    sources: list[str] = field(default_factory=list)  # their real paths


def load_specs(paths: list[str]) -> LoadResult:
    """Every task of every spec under `paths`; raises SpecError listing every problem."""
    loader = Loader()
    result = loader.load(paths)
    if loader.issues.errors:
        raise SpecError(loader.issues.sorted())
    return result


def validate_paths(paths: list[str]) -> int:
    """`proctor validate`: print every problem (stderr) or a one-line summary (stdout); 0 or 2."""
    loader = Loader()
    result = loader.load(paths)
    for issue in loader.issues.sorted():
        print(issue, file=sys.stderr)
    if loader.issues.errors:
        return 2
    # The spec is valid; this machine's configuration may still stop a run: say so now.
    problems = knowable_problems(result.tasks)
    for problem in problems:
        print(problem, file=sys.stderr)
    count = len(result.warnings) + len(problems)
    warned = f", {count} warning(s)" if count else ""
    print(f"ok: {result.files} file(s), {len(result.tasks)} task(s){warned}")
    return 0


def knowable_problems(tasks: list[TaskDef]) -> list[str]:
    """What would stop `run` before the first trial and needs no API key to know: models and
    judge aliases that are not configured, mock scripts that are not there, a model an
    external agent cannot talk to."""
    try:
        config = load_config(backends=BACKENDS.names(), agents=AGENTS.names())
    except UsageError as e:
        return [f"proctor: warning: {e}"]
    out = []
    for task in tasks:
        judges = [m for c in task.checks for m in c.config.judge_models()]
        models = ([m for m in task.models if "{{" not in m]
                  if task.agent.type in MODEL_AGENT_TYPES else [])
        try:
            preflight([*models, *judges], config, [task.base_dir], keys=False)
            if task.agent.type in EXTERNAL_AGENTS:
                from proctor.agents.external import check_model

                for model in models:
                    check_model(task.agent.type, model, config)
        except UsageError as e:
            out.append(f"{task.source}: warning: task {task.id}: {e} (`proctor run` would stop "
                       "before the first trial)")
    return list(dict.fromkeys(out))


class Loader:
    """One load: the parsed files (each read once), the problems, the task ids seen so far."""

    def __init__(self) -> None:
        self.issues = Issues()
        self._docs: dict[str, Doc | None] = {}
        self._included: set[str] = set()
        self._ids: dict[str, tuple[Doc, Path]] = {}
        self._file_ids: dict[str, str] = {}  # task id -> the non-YAML file it came from
        self.sources: list[str] = []  # files read besides YAML ones (a Harbor task.toml)

    def load(self, paths: list[str]) -> LoadResult:
        # The node trees are many small acyclic objects; the cyclic GC would rescan them over and
        # over as they pile up (half the time of a 1,000-file load). Refcounting frees them.
        enabled = gc.isenabled()
        gc.disable()
        try:
            return self._load(paths)
        finally:
            if enabled:
                gc.enable()

    def _load(self, paths: list[str]) -> LoadResult:
        tasks: list[TaskDef] = []
        lists: list[tuple[Doc, bool]] = []
        specs = 0
        for path, explicit in self._discover(paths):
            # Each dialect's models are imported when a spec of it is met (start-up time).
            if explicit == HARBOR:
                from proctor.spec.harbor import load_harbor

                task = load_harbor(self, path)
                tasks.extend([task] if task else [])
                specs += 1
                continue
            doc = self._read(path, path)
            if doc is None:
                continue
            data = doc.data
            dialect = _dialect(data) if isinstance(data, dict) else None
            if dialect == "suite":
                from proctor.spec.suite_load import load_suite

                tasks.extend(load_suite(self, doc))
            elif dialect == "scenario":
                from proctor.spec.scenario_load import load_scenario

                task = load_scenario(self, doc)
                tasks.extend([task] if task else [])
            elif isinstance(data, list):
                lists.append((doc, explicit))  # a task list, unless no suite includes it
                continue
            else:
                self._not_a_spec(doc, explicit)
                continue
            specs += 1
        # A list nobody includes is worth a word, unless the suite that would has failed to parse.
        unreadable = any(d is None for d in self._docs.values())
        for doc, explicit in lists:
            if os.path.realpath(doc.abspath) not in self._included and (explicit or not unreadable):
                self._not_a_spec(doc, explicit)
        files = specs + len(self._included)
        sources = sorted({*(p for p, d in self._docs.items() if d is not None), *self.sources})
        return LoadResult(tasks, self.issues.warnings, files, sources)

    def open_doc(self, path: str, display: str) -> Doc | None:
        """A file named by a `file://` include."""
        self._included.add(os.path.realpath(path))
        return self._read(path, display)

    def read_file(self, path: str) -> Doc | None:
        """A YAML file a task directory holds (a compose file, proctor.yaml): read with
        positions, never taken for a spec of its own."""
        self._included.add(os.path.realpath(path))
        return self._read(path, os.path.normpath(path))

    def claim_file_id(self, task_id: str, file: str) -> bool:
        """A task id from a non-YAML file (a Harbor task directory's name); False, with an
        error, when another task has it."""
        first = self._file_ids.get(task_id)
        other = self._ids.get(task_id)
        if first is None and other is None:
            self._file_ids[task_id] = file
            return True
        if other is not None:
            line, col = locate(other[0].root, other[1])
            first = f"{other[0].file}:{line}:{col}"
        self.issues.at(file, 1, 1, f"duplicate task id {task_id!r} (first at {first}); task ids "
                       "must be unique across all specs loaded together (a Harbor task's id is "
                       "its directory's name)")
        return False

    def claim_id(self, task_id: str, doc: Doc, path: Path) -> None:
        if task_id in self._file_ids:
            self.issues.error(doc, path, f"duplicate task id {task_id!r} (first at "
                              f"{self._file_ids[task_id]}); task ids must be unique across all "
                              "specs loaded together")
            return
        first = self._ids.setdefault(task_id, (doc, path))
        if first != (doc, path):
            fdoc, fpath = first
            line, col = locate(fdoc.root, fpath)
            self.issues.error(doc, path, f"duplicate task id {task_id!r} (first at {fdoc.file}:"
                              f"{line}:{col}); task ids must be unique across all specs loaded together")

    def _read(self, path: str, display: str) -> Doc | None:
        real = os.path.realpath(path)
        self.issues.file(display)
        if real not in self._docs:
            try:
                doc: Doc | None = read(path, display)
            except YamlError as e:
                self.issues.at(display, e.line, e.col, e.message)
                doc = None
            if doc is not None:
                self.issues.duplicates(doc)
            self._docs[real] = doc
        return self._docs[real]

    def _discover(self, paths: list[str]) -> list[tuple[str, Any]]:
        """(file, named explicitly?) in a stable order, each file once; directories are searched
        recursively. A Harbor task directory (with task.toml) is (directory, HARBOR); the YAML
        files inside one (its compose file) are the task's, not specs."""
        from proctor.spec.harbor_dirs import TASK_FILE, task_dirs

        out: dict[str, tuple[str, Any]] = {}
        for p in paths:
            self.issues.file(p)
            if os.path.basename(p) == TASK_FILE and os.path.isfile(p):
                p = os.path.dirname(p) or "."
            if os.path.isdir(p):
                harbor = task_dirs(p)
                found = _yaml_files(p, skip=harbor)
                if not found and not harbor:
                    self.issues.at(p, 0, 0, "no .yaml or .yml files and no Harbor task "
                                   "(task.toml) in this directory")
                for d in harbor:
                    out.setdefault(os.path.realpath(d), (d, HARBOR))
                for f in found:
                    out.setdefault(os.path.realpath(f), (f, False))
            elif os.path.exists(p):
                out.setdefault(os.path.realpath(p), (p, True))
            else:
                self.issues.at(p, 0, 0, "no such file or directory")
        return list(out.values())

    def _not_a_spec(self, doc: Doc, explicit: bool) -> None:
        data: Any = doc.data
        if not explicit and isinstance(data, dict) and data.keys() & MOCK_SCRIPT_KEYS:
            return  # a mock model script next to its spec: not a spec, and not a mistake
        if isinstance(data, list):
            why = ("a YAML list is a task list, read through a suite's `tasks: - file://GLOB`; "
                   "no suite loaded here includes it")
        elif isinstance(data, dict):
            why = f"not a spec: {DIALECTS}"
        elif data is None:
            why = f"empty file; expected a spec ({DIALECTS})"
        else:
            why = f"expected a spec mapping, got {describe(data)} ({DIALECTS})"
        if explicit:
            self.issues.error(doc, (), why)
        else:
            self.issues.warn(doc, (), f"skipped: {why}")


MOCK_SCRIPT_KEYS = {"conversations", "turns"}


def _dialect(data: dict[str, Any]) -> str | None:
    if "cli" in data:
        return "suite"
    if any(k in data for k in SCENARIO_KEYS):
        return "scenario"
    if "tasks" in data:
        return "suite"
    return None


HARBOR = "harbor"  # _discover's mark for a Harbor task directory


def _yaml_files(top: str, skip: Sequence[str] = ()) -> list[str]:
    found: list[str] = []
    inside = {os.path.realpath(d) for d in skip}
    for d, dirs, files in os.walk(top):
        if os.path.realpath(d) in inside:
            dirs[:] = []
            continue
        dirs[:] = sorted(x for x in dirs if not x.startswith("."))  # .git, .proctor (runs), ...
        found.extend(os.path.normpath(os.path.join(d, f)) for f in sorted(files) if f.endswith(SUFFIXES))
    return found
