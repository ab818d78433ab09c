"""`tasks:` entries of the form `file://GLOB`: each matched file is a YAML list of tasks."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from proctor.fieldwise import Fieldwise
from proctor.spec.diagnostics import Issues, describe
from proctor.spec.yamlpos import Doc, Path

PREFIX = "file://"


@dataclass(eq=False, repr=False)
class TaskSource(Fieldwise):
    """One task entry and where it was written (errors point into that file)."""

    doc: Doc
    path: Path
    data: Any


MAX_MATCHES = 10_000  # files one include may bring in
MAX_DEPTH = 20  # includes of includes


def _matches(pattern: str) -> list[str]:
    """Regular files matching `pattern`, each real file once: a symlink loop under `**`
    (`a/up -> ..`) yields the same files again and again."""
    import glob  # a suite with `file://` tasks only

    seen: set[str] = set()
    out = []
    for m in glob.iglob(pattern, recursive=True):
        real = os.path.realpath(m)
        if real in seen or not os.path.isfile(m):
            continue
        seen.add(real)
        out.append(m)
        if len(out) >= MAX_MATCHES:
            break
    return sorted(out)


OpenDoc = Callable[[str, str], Doc | None]  # (path, display name) -> parsed file, None if broken


def expand(issues: Issues, open_doc: OpenDoc, doc: Doc, entries: list[Any], prefix: Path,
           _stack: tuple[str, ...] = (), _seen: set[str] | None = None) -> list[TaskSource]:
    """The task entries with every include replaced by the tasks of the files it matches.
    Globs are relative to the including file's directory; `**` matches any depth; included
    files may include further files. A file matched by two includes of one suite
    (`file://tasks/basics.yaml` and `file://tasks/**/*.yaml`) is read once, where first met."""
    out: list[TaskSource] = []
    stack = _stack or (os.path.realpath(doc.abspath),)
    seen = set() if _seen is None else _seen
    for i, entry in enumerate(entries):
        if not (isinstance(entry, str) and entry.startswith(PREFIX)):
            out.append(TaskSource(doc, (*prefix, i), entry))
            continue
        if len(stack) > MAX_DEPTH:
            issues.error(doc, (*prefix, i), f"includes are nested more than {MAX_DEPTH} deep")
            continue
        pattern = os.path.expanduser(entry[len(PREFIX):])
        full = os.path.join(doc.base_dir, pattern)  # an absolute pattern stays absolute
        matches = _matches(full)
        if not matches:
            issues.error(doc, (*prefix, i), f"{entry} matched no files (relative to {doc.base_dir})")
        for match in matches:
            real = os.path.realpath(match)
            if real in stack:
                issues.error(doc, (*prefix, i), f"{entry} includes {match}, which includes this file")
                continue
            if real in seen:
                continue
            seen.add(real)
            display = os.path.normpath(os.path.join(os.path.dirname(doc.file),
                                                    os.path.relpath(match, doc.base_dir)))
            sub = open_doc(match, display)
            if sub is None:
                continue
            if not isinstance(sub.data, list):
                issues.error(sub, (), "an included file is a YAML list of tasks (`- id: ...`); "
                             f"got {describe(sub.data)}")
                continue
            out.extend(expand(issues, open_doc, sub, sub.data, (), (*stack, real), seen))
    return out
