"""docs/internals.md's tables say what the code is: the spawner's ops, the import layers and the
registries. Each test reads both sides, so a table that drifts from the code (or code that
drifts from its table) fails here, naming the difference."""

from __future__ import annotations

import re
import tomllib

from tests.helpers import REPO

DOC = (REPO / "docs" / "internals.md").read_text()
SRC = REPO / "src" / "proctor"


def _table(heading: str) -> list[list[str]]:
    """The rows (cells) of the first Markdown table after the line starting with `heading`."""
    lines = DOC[DOC.index(heading):].splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("|"))
    rows = []
    for line in lines[start + 2:]:  # past the header and its |---| line
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
    assert rows, heading
    return rows


def _ticked(text: str) -> list[str]:
    return re.findall(r"`([^`]+)`", text)


# -- the spawner's ops ---------------------------------------------------------------------

def test_the_spawner_ops_listed_are_the_ops():
    c = (SRC / "sandbox" / "spawner.c").read_text()
    enum = re.search(r"enum \{([^}]*OP_RUN[^}]*)\}", c)
    assert enum, "spawner.c: no enum of OP_ constants"
    in_c = set(re.findall(r"OP_(\w+)\s*=", enum.group(1)))
    table = re.search(r"handlers\[\] = \{(.*?)\};", c, re.S)
    assert table, "spawner.c: no handler table"
    handled = set(re.findall(r"\[OP_(\w+)\]\s*=", table.group(1)))
    py = (SRC / "sandbox" / "spawn.py").read_text()
    names = re.search(r"^((?:OP_\w+, )*OP_\w+) = ", py, re.M)
    assert names, "spawn.py: no OP_ constants"
    in_py = {n.removeprefix("OP_") for n in names.group(1).split(", ")}
    listed = re.search(r"one\s+handler\s+function\s+per\s+op\s+\(([^)]*)\)", DOC)
    assert listed, "internals.md: the spawner's list of ops is gone"
    in_doc = set(_ticked(listed.group(1)))

    assert in_c, "no ops found in spawner.c"
    assert handled == in_c, f"spawner.c: ops without a handler: {in_c ^ handled}"
    assert in_py == in_c, f"spawn.py and spawner.c differ: {in_py ^ in_c}"
    assert in_doc == in_c, (f"internals.md lists {sorted(in_doc)}, spawner.c has {sorted(in_c)}")


# -- the import layers ---------------------------------------------------------------------

def _module(name: str) -> str:
    """`report/*` → proctor.report; `runner` → proctor.runner."""
    return "proctor." + name.removesuffix("/*").replace("/", ".")


def test_the_layers_table_is_the_import_contract():
    config = tomllib.loads((REPO / "pyproject.toml").read_text())
    contract = next(c for c in config["tool"]["importlinter"]["contracts"] if c["type"] == "layers")
    layers = [set(re.split(r"\s*[:|]\s*", layer.strip())) for layer in contract["layers"]]
    index = {module: i for i, layer in enumerate(layers) for module in layer}

    rows = _table("| layer (top to bottom)")
    documented = [(row[0], {_module(m) for m in _ticked(row[1])}) for row in rows]
    in_doc = set().union(*(modules for _, modules in documented))
    assert not in_doc - index.keys(), f"only in internals.md: {sorted(in_doc - index.keys())}"
    assert not index.keys() - in_doc, f"only in pyproject's layers: {sorted(index.keys() - in_doc)}"

    # Top to bottom in the same order: a row holds whole layers, after the rows above it.
    below = -1
    for name, modules in documented:
        spans = sorted({index[m] for m in modules})
        assert spans[0] > below, f"internals.md: row {name!r} is out of the contract's order"
        for i in spans:
            assert layers[i] <= modules, (
                f"internals.md: row {name!r} holds part of a layer: {sorted(layers[i] - modules)}")
        below = spans[-1]


# -- the registries ------------------------------------------------------------------------

def _registries_in_code() -> set[str]:
    """`package.NAME` for every module-level `NAME = Registry(...)` in src/proctor."""
    found = set()
    for path in SRC.rglob("*.py"):
        for name in re.findall(r"^([A-Z_]+)(?::[^=\n]*)? = Registry\(", path.read_text(), re.M):
            package = path.relative_to(SRC).with_suffix("")
            if package.name == "__init__":
                package = package.parent
            found.add(f"{'.'.join(package.parts)}.{name}")
    return found


def test_the_registry_column_is_the_registries():
    import importlib

    from proctor.registry import Registry

    in_code = _registries_in_code()
    assert {"checks.CHECKS", "agents.AGENTS", "sandbox.BACKENDS"} <= in_code  # the grep works
    in_doc = set()
    for row in _table("| contract | where | registry |"):
        in_doc |= {name for name in _ticked(row[2]) if re.fullmatch(r"[a-z_.]+\.[A-Z_]+", name)}
    for name in in_doc:
        package, attr = name.rsplit(".", 1)
        value = getattr(importlib.import_module(f"proctor.{package}"), attr, None)
        assert isinstance(value, Registry), f"internals.md names {name}, which is no registry"
    assert in_doc == in_code, (f"registries not in internals.md's contracts table: "
                               f"{sorted(in_code - in_doc)}; named there but not found: "
                               f"{sorted(in_doc - in_code)}")
