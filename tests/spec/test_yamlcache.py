"""A spec read before comes back from the cache (spec/yamlcache.py) exactly as the parser
made it: every example and fixture spec loads into the same tasks and problems from the
cache as from the parser; positions, duplicates and what marshal cannot write are the
parser's; a changed, damaged or foreign entry is a miss."""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any

import pytest

from proctor.spec import yamlcache, yamlpos
from proctor.spec.load import Loader
from tests.helpers import REPO

SPECS = sorted(p for top in ("examples", "tests/fixtures") for p in (REPO / top).rglob("*.y*ml")
               if p.suffix in (".yaml", ".yml"))


@pytest.fixture(autouse=True)
def cache(monkeypatch, tmp_path) -> Path:
    monkeypatch.setenv("PROCTOR_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache" / "yaml"


@pytest.fixture
def parsed(monkeypatch) -> list[str]:
    """The texts the parser was asked to parse (the cache's misses)."""
    seen: list[str] = []
    real = yamlpos.parse

    def spy(text: str, file: str, abspath: str) -> yamlpos.Doc:
        seen.append(file)
        return real(text, file, abspath)

    monkeypatch.setattr(yamlpos, "parse", spy)
    return seen


def _same(a: Any, b: Any) -> bool:
    """Equal values of the same types all the way down (True is not 1, 1.0 is not 1)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return a == b or (a != a and b != b)  # nan


def _load(path: Path) -> tuple[str, list[str]]:
    loader = Loader()
    result = loader.load([str(path)])
    return repr(result.tasks), [str(i) for i in loader.issues.sorted()]


def test_every_example_and_fixture_loads_the_same_from_the_cache(parsed):
    first_parses = again_parses = 0
    for path in SPECS:
        parsed.clear()
        first = _load(path)
        first_parses += len(parsed)
        parsed.clear()
        again = _load(path)
        again_parses += len(parsed)
        assert again == first, path
    # Not a test that passes by missing: most files came back from the cache (those with a
    # problem or a date are parsed again).
    assert first_parses >= len(SPECS) and again_parses <= first_parses // 4, (
        first_parses, again_parses)


TEXT = """\
a: &shared [1, 2.0, true, null, "x", -0.0, .nan, 12345678901234567890]
b: *shared
c: {<<: {m: 1}, n: !!binary aGk=}
d: [~, yes, 0x1f, 1_000, "", '']
"""


def test_the_data_from_the_cache_is_the_parsers_value_for_value(tmp_path, parsed):
    spec = tmp_path / "s.yaml"
    spec.write_text(TEXT)
    first = yamlpos.read(str(spec), "s.yaml")
    again = yamlpos.read(str(spec), "s.yaml")
    assert parsed == ["s.yaml"]  # the second from the cache
    assert _same(again.data, first.data)
    assert again.data["a"] is again.data["b"]  # an alias stays one object, as parsed
    for path in [("b",), ("c", "n"), ("d", 3)]:  # positions: the tree composed when asked
        assert yamlpos.locate(again.root, path) == yamlpos.locate(first.root, path)
    spec.write_text(TEXT.replace("1_000", "2_000"))
    changed = yamlpos.read(str(spec), "s.yaml")
    assert changed.data["d"][3] == 2000 and len(parsed) == 2


def test_what_the_cache_cannot_hold_or_should_not_is_parsed_each_time(tmp_path, parsed, cache):
    dated = tmp_path / "dated.yaml"
    dated.write_text("when: 2024-01-02\n")
    dup = tmp_path / "dup.yaml"
    dup.write_text("a: 1\nb: 2\na: 3\n")
    for _ in range(2):
        assert yamlpos.read(str(dated), "dated.yaml").data == {"when": datetime.date(2024, 1, 2)}
        doc = yamlpos.read(str(dup), "dup.yaml")
        assert len(doc.duplicates) == 1  # worded with both positions, every time
    assert parsed == ["dated.yaml", "dup.yaml"] * 2
    assert not cache.exists() or not any(cache.iterdir())


def test_a_damaged_entry_is_a_miss_and_the_cache_stays_bounded(tmp_path, parsed, cache,
                                                               monkeypatch):
    spec = tmp_path / "s.yaml"
    spec.write_text(TEXT)
    yamlpos.read(str(spec), "s.yaml")
    (entry,) = cache.iterdir()
    entry.write_bytes(entry.read_bytes()[:7])  # cut short
    assert _same(yamlpos.read(str(spec), "s.yaml").data, yamlpos.parse(TEXT, "s", "/s").data)
    assert parsed[:2] == ["s.yaml", "s.yaml"]
    monkeypatch.setattr(yamlcache, "MAX_ENTRIES", 4)
    for i in range(9):
        yamlcache.keep(f"n: {i}\n", {"n": i})
    assert 2 <= len(list(cache.iterdir())) <= 4


def test_whether_a_file_holds_braces_is_kept_with_its_data(tmp_path, parsed):
    plain_suite = tmp_path / "p.yaml"
    plain_suite.write_text("cli: git\ntasks:\n  - {id: a, intent: x, assert: [exit_code: 0]}\n")
    braced = tmp_path / "b.yaml"
    braced.write_text("cli: git\ntasks:\n  - {id: b, intent: '{{ params.P }}', "
                      "assert: [exit_code: 0]}\n")
    first = [_load(p) for p in (plain_suite, braced)]
    docs = [yamlpos.read(str(p), p.name) for p in (plain_suite, braced)]
    assert len(parsed) == 2  # the second reads came from the cache, with what was worked out
    assert [d.braces for d in docs] == [False, True]
    assert [_load(p) for p in (plain_suite, braced)] == first
    assert first[1][1] == [f"{braced}:3:21: tasks[0].intent: {{{{ params.P }}}}: a suite has no "
                           "params (only scenarios declare them)"]
