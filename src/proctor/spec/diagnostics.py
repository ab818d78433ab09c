"""Spec problems: collect them all, place each on its YAML node, and word them as advice.

pydantic errors are translated here, so every model gets the same messages: unknown keys
with a suggestion and the valid keys, enums with the valid values, ranges with the value
that was given.
"""

from __future__ import annotations

import re
import types
import typing
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from proctor.errors import SpecIssue
from proctor.spec.yamlpos import Doc, Path, locate, path_of

if TYPE_CHECKING:
    from pydantic import BaseModel, ValidationError


def fmt_path(path: Path) -> str:
    out = ""
    for elem in path:
        out += f"[{elem}]" if isinstance(elem, int) else (f".{elem}" if out else str(elem))
    return out


def suggest(word: str, choices: Iterable[str]) -> str:
    """"; did you mean 'x'?" when a choice is close, else ""."""
    import difflib  # only for a mistake: a valid spec never needs it

    close = difflib.get_close_matches(str(word), list(choices), n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


def choices_hint(word: str, choices: Sequence[str]) -> str:
    return f"{suggest(word, choices)} (valid: {', '.join(choices)})"


def describe(value: Any) -> str:
    """A YAML value as a user would name it."""
    if value is None:
        return "nothing (null)"
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, (int, float)):
        return f"the number {value}"
    if isinstance(value, str):
        return repr(value) if len(value) <= 60 else repr(value[:57] + "...")
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return f"a {type(value).__name__}"


class Issues:
    """Every problem found while loading, errors and warnings, in the order found."""

    def __init__(self) -> None:
        self.items: list[SpecIssue] = []
        self._files: dict[str, int] = {}  # file -> the order it was read in, for sorting

    def file(self, name: str) -> None:
        self._files.setdefault(name, len(self._files))

    @property
    def errors(self) -> list[SpecIssue]:
        return [i for i in self.items if i.severity == "error"]

    @property
    def warnings(self) -> list[SpecIssue]:
        return [i for i in self.items if i.severity == "warning"]

    def error(self, doc: Doc, path: Path, message: str, *, key: bool = False) -> None:
        self._add(doc, path, message, key, "error")

    def warn(self, doc: Doc, path: Path, message: str, *, key: bool = False,
             moot_with: str = "") -> None:
        self._add(doc, path, message, key, "warning", moot_with)

    def at(self, file: str, line: int, col: int, message: str) -> None:
        """A problem with a whole file (unreadable, not YAML), before any data exists."""
        self.items.append(SpecIssue(file, line, col, "", message))

    def place(self, file: str, line: int, col: int, path: Path, message: str,
              severity: str = "error") -> None:
        """A problem at a known position of a file that is not YAML (a task.toml)."""
        self.items.append(SpecIssue(file, line, col, fmt_path(path), message, severity))

    def _add(self, doc: Doc, path: Path, message: str, key: bool, severity: str,
             moot_with: str = "") -> None:
        line, col = locate(doc.root, path, key=key)
        self.items.append(SpecIssue(doc.file, line, col, fmt_path(path), message, severity,
                                    moot_with))

    def duplicates(self, doc: Doc) -> None:
        for first, again in doc.duplicates:
            line = first.start_mark.line + 1
            self.error(doc, path_of(doc.root, again), f"duplicate key {again.value!r} (first at "
                       f"line {line}); YAML would keep only the last one — remove or rename one",
                       key=True)

    def validation(self, doc: Doc, prefix: Path, exc: ValidationError, model: type[BaseModel] | None,
                   *, scalar: bool = False) -> None:
        """Report a pydantic ValidationError for data found at `prefix` in `doc`.

        `scalar`: the data was one YAML scalar filling a single field (`- exit_code: 0`), so
        errors point at the scalar itself rather than at a field the user never wrote."""
        for err in exc.errors(include_url=False):
            loc = tuple(err["loc"])
            path = prefix if scalar else (*prefix, *loc)
            message = explain(err, model)
            self._add(doc, path, message, err["type"] == "extra_forbidden", "error")

    def sorted(self) -> list[SpecIssue]:
        """In the order files were read, then by position; no repeats."""
        for i in self.items:
            self.file(i.file)
        unique = dict.fromkeys(self.items)
        return sorted(unique, key=lambda i: (self._files[i.file], i.line, i.col))


_TYPE_WORDS = {
    "string_type": "text", "int_type": "a whole number", "int_parsing": "a whole number",
    "int_from_float": "a whole number", "float_type": "a number", "float_parsing": "a number",
    "bool_type": "true or false", "bool_parsing": "true or false", "list_type": "a list",
    "dict_type": "a mapping", "model_type": "a mapping", "model_attributes_type": "a mapping",
}

_BOUNDS = {
    "greater_than_equal": ("at least", "ge"), "greater_than": ("more than", "gt"),
    "less_than_equal": ("at most", "le"), "less_than": ("less than", "lt"),
}


def explain(err: Mapping[str, Any], model: type[BaseModel] | None) -> str:
    """A pydantic error in words, with what to write instead."""
    kind, loc, value = err["type"], tuple(err["loc"]), err.get("input")
    ctx = err.get("ctx") or {}
    if kind == "missing":
        name = loc[-1] if loc else "?"
        desc = _field_description(model, loc)
        return f"missing required field {name!r}" + (f" ({desc})" if desc else "")
    if kind == "extra_forbidden":
        name = str(loc[-1]) if loc else "?"
        valid = _field_names(model, loc[:-1]) or []
        return f"unknown key {name!r}" + (choices_hint(name, valid) if valid else "")
    if kind == "literal_error":
        valid = re.findall(r"'([^']*)'", ctx.get("expected", "")) or [ctx.get("expected", "")]
        return f"{describe(value)} is not allowed" + choices_hint(str(value), valid)
    if kind in _TYPE_WORDS:
        want = _TYPE_WORDS[kind]
        hint = ""
        if kind == "string_type" and isinstance(value, bool):
            hint = f"; YAML read {str(value).lower()} as a boolean — quote it: '{str(value).lower()}'"
        elif value is None:
            hint = "; the value is empty — fill it in or remove the key"
        return f"expected {want}, got {describe(value)}{hint}"
    if kind == "too_short":
        n = ctx.get("min_length", 1)
        what = "entry" if n == 1 else "entries"
        return f"needs at least {n} {what}, got {ctx.get('actual_length', 0)}"
    if kind in _BOUNDS:
        word, key = _BOUNDS[kind]
        bound = ctx.get(key)
        if isinstance(bound, float) and bound.is_integer():
            bound = int(bound)
        return f"must be {word} {bound}, got {describe(value)}"
    if kind in ("value_error", "assertion_error"):
        return re.sub(r"^(Value|Assertion) error, ", "", err["msg"])
    msg = re.sub(r"^Input should be", "must be", err["msg"])
    return f"{msg} (got {describe(value)})"


def _resolve(model: Any, loc: Path) -> Any:
    """The type found by following `loc` through a model's field annotations."""
    from pydantic import BaseModel

    t = model
    for elem in loc:
        t = _unwrap(t)
        if isinstance(t, type) and issubclass(t, BaseModel):
            fields = {(f.alias or n): f for n, f in t.model_fields.items()}
            if elem not in fields:
                return None
            t = fields[elem].annotation
            continue
        origin, args = typing.get_origin(t), typing.get_args(t)
        if origin is list and isinstance(elem, int):
            t = args[0] if args else None
        elif origin is dict:
            t = args[1] if len(args) == 2 else None
        else:
            return None
    return _unwrap(t)


def _unwrap(t: Any) -> Any:
    """Annotated[X, ...] -> X; X | None -> X (our models have no other unions)."""
    while True:
        origin = typing.get_origin(t)
        if origin is typing.Annotated:
            t = typing.get_args(t)[0]
        elif origin in (typing.Union, types.UnionType):
            args = [a for a in typing.get_args(t) if a is not type(None)]
            if len(args) != 1:
                return t
            t = args[0]
        else:
            return t


def _field_names(model: Any, loc: Path) -> list[str] | None:
    from pydantic import BaseModel

    t = _resolve(model, loc) if model is not None else None
    if isinstance(t, type) and issubclass(t, BaseModel):
        return [f.alias or n for n, f in t.model_fields.items()]
    return None


def _field_description(model: Any, loc: Path) -> str:
    from pydantic import BaseModel

    parent = _resolve(model, loc[:-1]) if model is not None and loc else None
    if isinstance(parent, type) and issubclass(parent, BaseModel):
        for n, f in parent.model_fields.items():
            if (f.alias or n) == loc[-1]:
                return (f.description or "").split(". ")[0].rstrip(".")
    return ""
