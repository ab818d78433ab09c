"""Dataclass methods written once instead of generated for each class.

Python 3.11's @dataclass compiles each class's `__eq__`, `__repr__` (and a frozen one's
`__hash__`) from text at import: ~0.3 ms each, tens of classes on a run's path (start-up
time, issue 37). A class declared `@dataclass(eq=False, repr=False)` on `Fieldwise` (frozen:
`@dataclass(frozen=True, eq=False, repr=False)` on `FrozenFieldwise`) gets the same methods
computed from `dataclasses.fields()` instead, with the same results (tests/test_fieldwise.py
compares each class with its generated twin).
"""

from __future__ import annotations

from dataclasses import fields
from reprlib import recursive_repr


class Fieldwise:
    """`__eq__` and `__repr__` of a `@dataclass(eq=False, repr=False)` subclass, written once
    from its fields instead of generated (compiled) for each class at import: the same results
    as the generated ones (equal when of the same class with equal compared fields, in field
    order, as a tuple; `Name(field=value!r, ...)` of the repr fields; unhashable as a mutable
    dataclass is), at a fraction of the import cost (start-up time, issue 37)."""

    __slots__ = ()
    __hash__ = None  # type: ignore[assignment]  # as @dataclass's eq=True sets it

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        names = _compared(self.__class__)
        return (tuple(getattr(self, n) for n in names)
                == tuple(getattr(other, n) for n in names))

    @recursive_repr()
    def __repr__(self) -> str:
        shown = (f"{f.name}={getattr(self, f.name)!r}" for f in fields(self)  # type: ignore[arg-type]
                 if f.repr)
        return f"{self.__class__.__qualname__}({', '.join(shown)})"


class FrozenFieldwise(Fieldwise):
    """Fieldwise for a `@dataclass(frozen=True, eq=False, repr=False)` subclass, with the
    hash frozen=True and eq=True generate: of the tuple of the fields it hashes (`hash=`, else
    the compared ones)."""

    __slots__ = ()

    def __hash__(self) -> int:  # type: ignore[override]  # Fieldwise: None, as eq=True
        return hash(tuple(getattr(self, n) for n in _hashed(self.__class__)))


# A class's fields never change once it is made: their names are looked up once per class
# (`dataclasses.fields` builds its list anew at every call; a box pool compares its slots'
# shapes at every trial).
_COMPARED: dict[type, tuple[str, ...]] = {}
_HASHED: dict[type, tuple[str, ...]] = {}


def _compared(cls: type) -> tuple[str, ...]:
    names = _COMPARED.get(cls)
    if names is None:
        names = _COMPARED[cls] = tuple(f.name for f in fields(cls) if f.compare)
    return names


def _hashed(cls: type) -> tuple[str, ...]:
    names = _HASHED.get(cls)
    if names is None:
        names = _HASHED[cls] = tuple(f.name for f in fields(cls)
                                     if (f.compare if f.hash is None else f.hash))
    return names
