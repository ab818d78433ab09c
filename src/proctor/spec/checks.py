"""Assertion entries (suite) and invariant `check` blocks (scenario), validated with the
check registry's own Config models: one source of truth for every check's fields."""

from __future__ import annotations

import re
from typing import Any

from pydantic import ValidationError

from proctor.checks import assertion_types, invariant_types
from proctor.checks.base import CheckConfig
from proctor.spec.diagnostics import Issues, choices_hint, describe
from proctor.spec.yamlpos import Doc, Path

# SPEC §2: in these assertions an invalid regex falls back to a literal substring match.
LITERAL_FALLBACK = ("ran", "not_ran", "run_count")


def assertion(issues: Issues, doc: Doc, path: Path, entry: Any) -> tuple[str, CheckConfig] | None:
    """`- TYPE: value` or `- TYPE: {fields}` -> (type, config), or None after reporting why not."""
    types = assertion_types()
    if not isinstance(entry, dict) or len(entry) != 1:
        issues.error(doc, path, _shape_problem(entry, types))
        return None
    name, value = next(iter(entry.items()))
    check = types.get(name)
    if check is None:
        other = " (that is a scenario invariant check)" if name in invariant_types() else ""
        issues.error(doc, path, f"unknown assertion {name!r}{other}{choices_hint(str(name), list(types))}")
        return None
    vpath = (*path, name)
    scalar = not isinstance(value, dict)
    if not scalar:
        data = value
    elif check.scalar_field and value is not None and not isinstance(value, list):
        data = {check.scalar_field: value}
    else:
        fields = ", ".join(check.config.model_fields)
        how = f"`{name}: VALUE`" if check.scalar_field else f"a mapping with {fields}"
        issues.error(doc, vpath, f"{name} takes {how}; got {describe(value)}")
        return None
    try:
        config = check.config.model_validate(data)
    except ValidationError as e:
        issues.validation(doc, vpath, e, check.config, scalar=scalar)
        return None
    pattern = getattr(config, "pattern", None)
    if name in LITERAL_FALLBACK and isinstance(pattern, str):
        _literal_warning(issues, doc, vpath if scalar else (*vpath, "pattern"), pattern)
    return name, config


def _shape_problem(entry: Any, types: dict[str, Any]) -> str:
    if isinstance(entry, str) and entry in types:
        return f"{entry!r} needs a value: write `- {entry}: ...`"
    if not isinstance(entry, dict):
        return f"an assertion is one `TYPE: value` entry, e.g. `- exit_code: 0`; got {describe(entry)}"
    if not entry:
        return "empty assertion; write `- TYPE: value`, e.g. `- exit_code: 0`"
    keys = list(entry)
    known = [k for k in keys if k in types]
    if len(known) == 1 and entry[known[0]] is None:
        rest = [k for k in keys if k != known[0]]
        if set(rest) <= set(types[known[0]].config.model_fields):
            return (f"{', '.join(rest)} belong under {known[0]}: indent them below "
                    f"`{known[0]}:` (one assertion per list entry)")
    return f"one assertion per list entry, found {', '.join(map(str, keys))}; start each with its own `- `"


def _literal_warning(issues: Issues, doc: Doc, path: Path, pattern: str) -> None:
    try:
        re.compile(pattern)
    except re.error as e:
        issues.warn(doc, path, f"invalid regex {pattern!r} ({e}); it will be matched as a literal "
                    "substring (escape it, e.g. with \\, to silence this)")


def invariant_check(issues: Issues, doc: Doc, path: Path, raw: Any) -> tuple[str, CheckConfig] | None:
    """`check: {type: NAME, ...}` -> (type, config), or None after reporting why not."""
    types = invariant_types()
    if not isinstance(raw, dict):
        issues.error(doc, path, f"check must be a mapping with `type` and its fields; got {describe(raw)}")
        return None
    name = raw.get("type")
    if name is None:
        issues.error(doc, path, f"missing `type`{choices_hint('', list(types))}")
        return None
    check = types.get(name) if isinstance(name, str) else None
    if check is None:
        other = " (that is a suite assertion)" if name in assertion_types() else ""
        issues.error(doc, (*path, "type"),
                     f"unknown check type {describe(name)}{other}{choices_hint(str(name), list(types))}")
        return None
    try:
        config = check.config.model_validate({k: v for k, v in raw.items() if k != "type"})
    except ValidationError as e:
        issues.validation(doc, path, e, check.config)
        return None
    return name, config
