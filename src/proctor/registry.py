"""One registry pattern for everything proctor finds by name: checks, agents, services,
providers, report formats, sandbox backends and executors.

Each registry maps a name to "module:attribute"; the module is imported on first use, so
`proctor --help` imports none of them. Adding an implementation is one new module plus one
line in its registry.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from typing import Generic, TypeVar

T = TypeVar("T")


class Registry(Generic[T]):
    def __init__(self, kind: str, entries: dict[str, str]):
        self.kind = kind  # "check", "agent", ...: used in error messages
        self._entries = dict(entries)
        self._loaded: dict[str, T] = {}

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def names(self) -> list[str]:
        return list(self._entries)

    def add(self, name: str, target: str) -> None:
        """One more entry, `target` as "module:attribute": what a line in the registry's
        table does, for a plug-in outside proctor's tree (tests/test_extending.py)."""
        self._entries[name] = target
        self._loaded.pop(name, None)

    def remove(self, name: str) -> None:
        self._entries.pop(name, None)
        self._loaded.pop(name, None)

    def get(self, name: str) -> T:
        if name not in self._loaded:
            if name not in self._entries:
                known = ", ".join(self._entries)
                raise KeyError(f"unknown {self.kind} {name!r} (known: {known})")
            module, _, attr = self._entries[name].partition(":")
            self._loaded[name] = getattr(importlib.import_module(module), attr)
        return self._loaded[name]

    def items(self) -> list[tuple[str, T]]:
        return [(name, self.get(name)) for name in self._entries]


def one_of(names: list[str] | tuple[str, ...]) -> str:
    """`'a', 'b' or 'c'`: names as a validation message lists them (pydantic's wording)."""
    quoted = [repr(n) for n in names]
    return quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} or {quoted[-1]}"
