"""`{{ secrets.NAME }}` and `{{ params.NAME }}` must name something declared."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from proctor.spec.diagnostics import Issues, suggest
from proctor.spec.yamlpos import Doc, Path, braces
from proctor.templating import references

WHERE = {"secrets": "`secrets:`", "params": "the keys of `parallelism.matrix`"}


def check_refs(issues: Issues, doc: Doc, data: Any, path: Path,
               declared: dict[str, Collection[str] | None]) -> None:
    """Walk every string (keys too). `declared[ns]` is None where the dialect has no such names."""
    if not braces(data):  # most tasks: nothing to walk (a suite of 1,000 at its start)
        return
    _walk(issues, doc, data, path, declared)


def doc_templated(doc: Doc) -> bool:
    """braces(doc.data), worked out once per file (or kept from the file's last read)."""
    if doc.braces is None:
        doc.braces = braces(doc.data)
    return doc.braces


def _walk(issues: Issues, doc: Doc, data: Any, path: Path,
          declared: dict[str, Collection[str] | None]) -> None:
    if isinstance(data, str):
        if "{{" in data:
            for ns, name in references(data):
                if ns in declared and name is not None:
                    _check(issues, doc, path, ns, name, declared[ns])
    elif isinstance(data, dict):
        for k, v in data.items():
            _walk(issues, doc, k, (*path, k), declared)
            _walk(issues, doc, v, (*path, k), declared)
    elif isinstance(data, list):
        for i, v in enumerate(data):
            _walk(issues, doc, v, (*path, i), declared)


def _check(issues: Issues, doc: Doc, path: Path, ns: str, name: str,
           names: Collection[str] | None) -> None:
    if names is None:
        issues.error(doc, path, f"{{{{ {ns}.{name} }}}}: a suite has no {ns} (only scenarios declare them)")
    elif name not in names:
        known = ", ".join(sorted(names)) or "none"
        issues.error(doc, path, f"undeclared {ns[:-1]} {name!r} in {{{{ {ns}.{name} }}}}"
                     f"{suggest(name, names)} (declared in {WHERE[ns]}: {known})")
