"""YAML with positions."""

from __future__ import annotations

import pytest

from proctor.spec.yamlpos import YamlError, locate, parse

TEXT = """\
base: &base
  image: postgres:16
  env: {A: "1"}
services:
  - name: db
    <<: *base
  - name: other
    port: 0x10
"""


def test_positions_of_values_and_keys():
    doc = parse(TEXT, "f.yaml", "/f.yaml")
    assert locate(doc.root, ("services", 1, "name")) == (7, 11)
    assert locate(doc.root, ("services", 1, "name"), key=True) == (7, 5)
    assert locate(doc.root, ("services", 0, "missing")) == (5, 5)  # deepest node that exists
    assert locate(doc.root, ()) == (1, 1)


def test_merge_keys_and_anchors_resolve_like_pyyaml():
    doc = parse(TEXT, "f.yaml", "/f.yaml")
    assert doc.data["services"][0] == {"image": "postgres:16", "env": {"A": "1"}, "name": "db"}
    assert doc.data["services"][1]["port"] == 16
    assert locate(doc.root, ("services", 0, "image")) == (2, 10)  # where the merged value was written


def test_duplicate_keys_are_remembered():
    doc = parse("a: 1\nb: 2\na: 3\n", "f.yaml", "/f.yaml")
    assert doc.data == {"a": 3, "b": 2}
    ((first, again),) = doc.duplicates
    assert (first.start_mark.line, again.start_mark.line) == (0, 2)


def test_non_scalar_keys_are_errors():
    with pytest.raises(YamlError) as e:
        parse("? [a, b]\n: 1\n", "f.yaml", "/f.yaml")
    assert (e.value.line, e.value.col) == (1, 3)


def test_unreadable_files_are_yaml_errors(tmp_path):
    from proctor.spec.yamlpos import read

    with pytest.raises(YamlError) as e:
        read(str(tmp_path), "dir.yaml")
    assert e.value.message == "not a regular file (a spec must be a file, not a directory)"


def test_a_long_file_lets_its_tree_go_and_composes_it_again(monkeypatch):
    import proctor.spec.yamlpos as yamlpos

    kept = parse(TEXT, "f.yaml", "/f.yaml")
    monkeypatch.setattr(yamlpos, "KEEP_TREE_CHARS", 10)
    doc = parse(TEXT, "f.yaml", "/f.yaml")
    assert doc.data == kept.data and doc._root is None  # let go after conversion
    for path in [("services", 1, "name"), ("services", 0, "image"), ("base", "env", "A")]:
        assert locate(doc.root, path) == locate(kept.root, path)
    assert doc.root is doc.root  # composed once
    # Duplicate keys point into the tree, so a file with them keeps it.
    dup = parse("a: 1\nb: 2\na: 3\n" + "# padding\n" * 5, "f.yaml", "/f.yaml")
    assert dup._root is not None and len(dup.duplicates) == 1
