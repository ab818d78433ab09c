"""proctor/codecache.py: the functions dataclasses and namedtuple generate, compiled once and
kept by their text. A class made through the cache (the first time, compiling; then read
back from its file, compiling nothing) is the class made without it: the same generated
code, the same behaviour and the same errors."""

from __future__ import annotations

import collections
import dataclasses
import marshal
import re
import sys
import typing
from dataclasses import InitVar, field
from pathlib import Path
from typing import Any, ClassVar

import pytest

from proctor import codecache


def _classes() -> dict[str, Any]:
    """Dataclasses of every shape dataclasses generates code for, and namedtuples."""

    @dataclasses.dataclass
    class Plain:
        a: int
        b: str = "x"
        c: list[int] = field(default_factory=list)
        d: int = field(default=3, init=False)
        e: ClassVar[int] = 7

    @dataclasses.dataclass(frozen=True, order=True)
    class Frozen:
        a: int
        b: tuple[int, ...] = ()
        c: float = field(default=1.5, compare=False, hash=False)

    @dataclasses.dataclass(kw_only=True, slots=True)
    class KwSlots:
        a: int
        b: dict[str, int] = field(default_factory=dict)

    @dataclasses.dataclass(unsafe_hash=True)
    class PostInit:
        a: int
        scale: InitVar[int] = 2
        b: int = field(init=False, default=0)

        def __post_init__(self, scale: int) -> None:
            self.b = self.a * scale

    Point = collections.namedtuple("Point", ["x", "y", "z"], defaults=[0])
    Renamed = collections.namedtuple("Renamed", "a def a", rename=True)
    return {"Plain": Plain, "Frozen": Frozen, "KwSlots": KwSlots, "PostInit": PostInit,
            "Point": Point, "Renamed": Renamed}


def _generated(cls: type) -> dict[str, Any]:
    """The functions dataclasses and namedtuple wrote for `cls`, by name: their code."""
    names = ("__init__", "__setattr__", "__delattr__", "__hash__", "__new__", "__lt__")
    found = {n: getattr(vars(cls)[n], "__func__", vars(cls)[n]) for n in names if n in vars(cls)}
    return {n: f.__code__ for n, f in found.items() if hasattr(f, "__code__")}


def _outcome(call: Any) -> Any:
    try:
        made = call()
    except Exception as e:
        return type(e).__name__, str(e)
    return repr(made), (hash(made) if type(made).__hash__ else None)


def _behaviour(classes: dict[str, Any]) -> list[Any]:
    P, F, K, Post, Pt, R = (classes[n] for n in ("Plain", "Frozen", "KwSlots", "PostInit",
                                              "Point", "Renamed"))
    frozen = F(1)
    out = [_outcome(c) for c in (
        lambda: P(1), lambda: P(1, "y", [2]), lambda: P(), lambda: P(1, d=4),
        lambda: F(1, (2,), 3.0), lambda: F(a=2) < F(a=3), lambda: F(),
        lambda: K(a=1), lambda: K(1), lambda: K(a=1, b={"x": 1}).b,
        lambda: Post(3), lambda: Post(3, 5), lambda: Post(3, scale=4).b,
        lambda: Pt(1, 2), lambda: Pt(1), lambda: Pt(1, 2, 3, 4), lambda: Pt._make([1, 2, 3]),
        lambda: R._fields, lambda: R(1, 2, 3),
        lambda: setattr(frozen, "a", 2), lambda: delattr(frozen, "a"))]
    out.append(P(1).c is not P(1).c)  # a fresh default each time
    return out


@pytest.fixture
def fresh(tmp_path):
    yield tmp_path / "code" / "cache"
    codecache.uninstall()


def test_classes_made_through_the_cache_are_the_classes_made_without_it(fresh):
    plain = _classes()
    cold = codecache.CodeCache(fresh)
    codecache.install(cold)
    first = _classes()
    codecache.uninstall()  # and kept in its file
    assert cold.misses >= 8  # each dataclass's __init__, each __new__ ... (some texts twice)
    warm = codecache.CodeCache(fresh)
    codecache.install(warm)
    again = _classes()
    assert warm.misses == 0 and warm.hits == cold.hits + cold.misses  # nothing compiled again
    for name, cls in plain.items():
        assert _generated(first[name]) == _generated(cls) == _generated(again[name]), name
        assert _generated(cls)  # the comparison is of something
    assert _behaviour(first) == _behaviour(plain) == _behaviour(again)


def test_installed_only_while_it_is_and_never_over_anothers(fresh):
    cache = codecache.CodeCache(fresh)
    codecache.install(cache)
    assert dataclasses.exec == cache.exec and collections.eval == cache.eval  # type: ignore[attr-defined]
    codecache.uninstall()
    assert "exec" not in vars(dataclasses) and "eval" not in vars(collections)
    dataclasses.exec = exec  # type: ignore[attr-defined]  # someone else's
    try:
        codecache.install(codecache.CodeCache(fresh))
        assert dataclasses.exec is exec and "eval" not in vars(collections)  # type: ignore[attr-defined]
    finally:
        del dataclasses.exec  # type: ignore[attr-defined]


@pytest.mark.parametrize("content", [b"", b"not marshal", marshal.dumps(("3.0 other", {})),
                                     marshal.dumps([1, 2])])
def test_a_file_it_cannot_use_is_no_cache(fresh, content):
    fresh.parent.mkdir(parents=True)
    fresh.write_bytes(content)
    cache = codecache.CodeCache(fresh)
    codecache.install(cache)
    made = _classes()
    assert cache.misses >= 8
    assert _behaviour(made) == _behaviour(_classes())
    codecache.uninstall()
    version, kept = marshal.loads(fresh.read_bytes())  # written anew, for this Python
    assert version == sys.version and len(kept) == cache.misses


def test_a_text_compiled_the_same_as_exec_compiles_it():
    """No flags of codecache.py's own (it has `from __future__ import annotations`)."""
    cache = codecache.CodeCache(None)
    text = "def f(a: int) -> str:\n    return str(a)\n"
    ours: dict[str, Any] = {}
    cache.exec(text, {}, ours)
    theirs: dict[str, Any] = {}
    exec(compile(text, "<string>", "exec", dont_inherit=True), {}, theirs)
    assert ours["f"].__annotations__ == {"a": int, "return": str} == theirs["f"].__annotations__
    assert ours["f"].__code__ == theirs["f"].__code__
    assert cache.eval("1 + 2") == 3 and cache.misses == 2
    cache.save()  # no file: nothing written, nothing raised
    assert not Path("None").exists()


PATTERNS = [("a+b", 0), (r"(?P<word>\w+)\s+(?P=word)", re.IGNORECASE | re.MULTILINE),
            (rb"[\x00-\x1f]+(?P<tail>.*)", re.DOTALL), (r"""(?x) \d+ # digits
                \.? \d*""", 0), (r"(?i)caf\u00e9", 0), (r"^\s*$", re.ASCII)]


def test_a_pattern_parsed_once_is_the_pattern_parsed_each_time(fresh):
    """What re hands its C engine is the same: the patterns compare equal (their code)."""
    from re import _compiler  # type: ignore[attr-defined]

    plain = [_compiler.compile(p, f) for p, f in PATTERNS]
    cold = codecache.CodeCache(fresh)
    cold_made = [cold.pattern(p, f) for p, f in PATTERNS]
    cold.save()
    warm = codecache.CodeCache(fresh)
    warm_made = [warm.pattern(p, f) for p, f in PATTERNS]
    assert cold.misses == len(PATTERNS) and warm.hits == len(PATTERNS) and warm.misses == 0
    for a, b, c in zip(plain, cold_made, warm_made, strict=True):
        assert a == b == c and a.groupindex == c.groupindex and a.flags == c.flags
    text = "Hello hello world\n\n 3.5 CAF\u00c9"

    def found(made: list[Any]) -> list[Any]:
        return [(m := p.search(text if isinstance(p.pattern, str) else text.encode()))
                and (m.span(), m.groups()) for p in made]

    assert found(warm_made) == found(plain)
    assert None in found(plain) and len([f for f in found(plain) if f]) >= 4
    assert warm_made[1].search(text).group("word") == "Hello"


def test_installed_re_compiles_through_the_cache_and_is_given_back(fresh):
    from re import _compiler  # type: ignore[attr-defined]

    before = _compiler.compile
    cache = codecache.CodeCache(fresh)
    codecache.install(cache)
    try:
        assert re.compile(r"x(?P<n>\d{3,7})y", re.VERBOSE).match("x1234y").group("n") == "1234"
        assert cache.misses == 1
    finally:
        codecache.uninstall()
    assert _compiler.compile is before


def test_a_full_file_keeps_what_its_last_writer_used(fresh, monkeypatch):
    monkeypatch.setattr(codecache, "MAX_ENTRIES", 3)
    first = codecache.CodeCache(fresh)
    for i in range(3):
        first.compiled(f"x = {i}", "exec")
    first.save()
    second = codecache.CodeCache(fresh)
    second.compiled("x = 0", "exec")  # used again
    second.compiled("x = 9", "exec")  # new: 4 entries, past the bound
    second.save()
    third = codecache.CodeCache(fresh)
    assert sorted(k[1] for k in third._code) == ["x = 0", "x = 9"]
    assert codecache.default_path("run").name.endswith("-run")
    assert codecache.default_path("mock-llm").name.endswith("-mock-llm")
    assert codecache.default_path("../x").name.endswith("-other")


def test_an_annotation_given_as_text_compiles_as_typing_compiles_it(fresh):
    cache = codecache.CodeCache(fresh)
    codecache.install(cache)
    try:
        ref = typing.ForwardRef("dict[str, list[int]] | None")
        assert cache.misses == 1
        with pytest.raises(SyntaxError) as ours:
            typing.ForwardRef("list[")
    finally:
        codecache.uninstall()
    assert "compile" not in vars(typing)
    assert ref.__forward_code__ == typing.ForwardRef("dict[str, list[int]] | None").__forward_code__
    with pytest.raises(SyntaxError) as theirs:
        typing.ForwardRef("list[")
    assert str(ours.value) == str(theirs.value)


def test_a_cache_it_cannot_write_is_quietly_no_file(tmp_path):
    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    cache = codecache.CodeCache(blocked / "code" / "run")
    cache.compiled("x = 1", "exec")
    cache.save()  # its directory cannot be made: nothing raised, nothing left
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file"]
