"""YAML with positions: plain Python data plus the node tree, so any value's line:col can be
found when (and only when) something is wrong with it.

libyaml composes the node tree (fast, in C); our converter turns nodes into data in one pass,
catching what PyYAML silently accepts: duplicate keys, non-scalar keys.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass, field
from typing import Any

import yaml
from yaml.constructor import SafeConstructor
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_STR = "tag:yaml.org,2002:str"
_MERGE = "tag:yaml.org,2002:merge"
_SCALARS = SafeConstructor.yaml_constructors

Path = tuple[str | int, ...]


class YamlError(Exception):
    """A file that is not readable YAML; line and col are 1-based."""

    def __init__(self, line: int, col: int, message: str):
        super().__init__(message)
        self.line, self.col, self.message = line, col, message


@dataclass
class Doc:
    """One parsed file."""

    file: str  # as shown in messages
    abspath: str
    data: Any
    _root: Node | None
    duplicates: list[tuple[Node, Node]] = field(default_factory=list)  # (first key, repeated key)
    _text: str | None = None  # set when the tree was let go: it is composed again on demand

    @property
    def root(self) -> Node | None:
        if self._root is None and self._text is not None:
            self._root, self._text = _compose(self._text), None  # same text, same positions
            if self._root is not None:
                _Converter().convert(self._root)  # merges `<<:` keys into the tree, as parse did
        return self._root

    @property
    def base_dir(self) -> str:
        return os.path.dirname(self.abspath)


# A file this long lets its node tree go once converted, and composes it again the first time a
# position is asked for (usually never: positions are for problems). The tree is most of the
# memory of loading: ~60 MB for a suite of 10,000 tasks, which would otherwise still be held
# while the tasks are built from the data.
KEEP_TREE_CHARS = 256 * 1024


# Bounds on what one spec file may make proctor do (issue: bad input never crashes or hangs).
MAX_SPEC_BYTES = 20 * 1024 * 1024
MAX_DEPTH = 200  # nested lists/mappings; libyaml's composer recurses in C beyond this
MAX_VALUES = 1_000_000  # values after aliases are expanded ("billion laughs")
_DEEP_INDENT = re.compile(rf"\n {{{2 * MAX_DEPTH},}}\S")


def parse(text: str, file: str, abspath: str) -> Doc:
    _check_depth(text)
    root = _compose(text)
    conv = _Converter()
    try:
        data = conv.convert(root) if root is not None else None
    except RecursionError:
        raise YamlError(1, 1, f"YAML is nested too deeply (at most {MAX_DEPTH} levels)") from None
    if len(text) > KEEP_TREE_CHARS and not conv.duplicates:  # duplicates point into the tree
        return Doc(file, abspath, data, None, [], text)
    return Doc(file, abspath, data, root, conv.duplicates)


def _check_depth(text: str) -> None:
    """Reject nesting deeper than MAX_DEPTH before composing (libyaml would overflow the C
    stack). Only texts that could be that deep (many brackets, or deep indentation) pay for
    the scan of parser events."""
    if text.count("[") + text.count("{") < MAX_DEPTH and not _DEEP_INDENT.search(text):
        return
    depth = 0
    try:
        for event in yaml.parse(text, Loader=_Loader):
            if isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
                depth += 1
                if depth > MAX_DEPTH:
                    mark = event.start_mark
                    raise YamlError(mark.line + 1, mark.column + 1,
                                    f"YAML is nested too deeply (at most {MAX_DEPTH} levels)")
            elif isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
                depth -= 1
    except yaml.YAMLError:
        return  # composing reports it, with its position


def _compose(text: str) -> Node | None:
    loader = _Loader(text)
    try:
        return loader.get_single_node()
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        what = " ".join(p for p in (e.context, e.problem) if p) or "invalid YAML"
        line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        raise YamlError(line, col, f"YAML syntax error: {what}{_indent_hint(text, e)}") from None
    except yaml.YAMLError as e:  # e.g. a reader error without a mark
        raise YamlError(1, 1, f"YAML syntax error: {e}") from None
    finally:
        loader.dispose()


def _indent_hint(text: str, e: yaml.MarkedYAMLError) -> str:
    """What a YAML syntax error most often is, said in terms of the file: a line indented
    with a tab, or indented otherwise than the list or mapping it belongs to ("" when the
    error is something else)."""
    mark = e.problem_mark
    lines = text.splitlines()
    if mark is None or mark.line >= len(lines):
        return ""
    line = lines[mark.line]
    lead = line[: len(line) - len(line.lstrip(" \t"))]
    if "\t" in lead:
        return (f" (hint: line {mark.line + 1} is indented with a tab; YAML indents with "
                "spaces only)")
    have = len(lead)
    ctx, problem = e.context_mark, str(e.problem or "")
    if ctx is not None and "block" in str(e.context or "") and ctx.line < mark.line:
        kind = "list" if "collection" in str(e.context) or "sequence" in str(e.context) else "mapping"
        if have != ctx.column:
            return (f" (hint: line {mark.line + 1} is indented {have} spaces, the {kind} begun "
                    f"on line {ctx.line + 1} {ctx.column}: the items of a list, and the keys of "
                    "a mapping, line up)")
    if "mapping values are not allowed" in problem:
        before = [x for x in lines[: mark.line] if x.strip() and not x.lstrip().startswith("#")]
        prev = before[-1] if before else ""
        indent = len(prev) - len(prev.lstrip(" "))
        if prev and have > indent and not prev.rstrip().endswith((":", "|", ">", "-")):
            return (f" (hint: line {mark.line + 1} is indented {have} spaces, line "
                    f"{lines.index(prev) + 1} {indent}: the keys of a mapping line up)")
        return " (hint: a value holding `: ` needs quotes)"
    return ""


class _Converter:
    def __init__(self) -> None:
        self.ctor = SafeConstructor()
        self.memo: dict[int, Any] = {}  # anchors/aliases share one node object
        self.sizes: dict[int, int] = {}  # values under a node, aliases expanded
        self.open: set[int] = set()  # nodes being converted: an alias to one is a cycle
        self.values = 0
        self.duplicates: list[tuple[Node, Node]] = []

    def convert(self, node: Node) -> Any:
        self._count(1, node)
        if isinstance(node, ScalarNode):
            if node.tag == _STR:
                return _fresh(node.value)
            ctor = _SCALARS.get(node.tag)
            if ctor is None:
                raise YamlError(*_pos(node), f"unsupported YAML tag {node.tag!r}; remove it")
            return ctor(self.ctor, node)
        if id(node) in self.open:
            raise YamlError(*_pos(node), "an alias refers to a list or mapping that contains "
                            "it (a cycle); copy the values instead")
        done = self.memo.get(id(node))
        if done is not None:
            self._count(self.sizes.get(id(node), 1), node)  # what the alias expands to
            return done
        start = self.values
        self.open.add(id(node))
        try:
            out = self._container(node)
        finally:
            self.open.discard(id(node))
        self.sizes[id(node)] = self.values - start
        return out

    def _count(self, n: int, node: Node) -> None:
        self.values += n
        if self.values > MAX_VALUES:
            raise YamlError(*_pos(node), f"aliases expand to more than {MAX_VALUES} values "
                            "(is an anchor used recursively, a \"billion laughs\"?)")

    def _container(self, node: Node) -> Any:
        if isinstance(node, SequenceNode):
            out: Any = []
            self.memo[id(node)] = out
            out.extend(self.convert(v) for v in node.value)
            return out
        assert isinstance(node, MappingNode)
        if any(k.tag == _MERGE for k, _ in node.value):
            try:  # `<<: *anchor` merges, as PyYAML does
                self.ctor.flatten_mapping(node)
            except yaml.MarkedYAMLError as e:
                mark = e.problem_mark or node.start_mark
                raise YamlError(mark.line + 1, mark.column + 1,
                                f"`<<` merges a mapping or a list of mappings: {e.problem}") from None
        out = {}
        self.memo[id(node)] = out
        first: dict[Any, Node] = {}
        for knode, vnode in node.value:
            if not isinstance(knode, ScalarNode):
                raise YamlError(*_pos(knode), "a mapping key must be a plain value, not a list or mapping")
            key = self.convert(knode)
            if key in first:
                self.duplicates.append((first[key], knode))
            first[key] = knode
            out[key] = self.convert(vnode)
        return out


def _fresh(s: str) -> str:
    """A copy of a scalar's string. libyaml allocates it among the node tree's many small
    objects; the strings that outlive the tree (task ids, prompts, commands) would each pin a
    piece of the tree's memory, so it could not go back to the OS after loading (10,000 tasks:
    140 MB resident instead of 90)."""
    return s.encode("utf-8", "surrogatepass").decode("utf-8", "surrogatepass") if s else s


def _pos(node: Node) -> tuple[int, int]:
    return node.start_mark.line + 1, node.start_mark.column + 1


def _child(node: Node, elem: str | int) -> tuple[Node, Node] | None:
    """(key node, value node) of a mapping entry, or (item, item) of a sequence entry."""
    if isinstance(node, MappingNode):
        want = elem if isinstance(elem, str) else str(elem)
        for knode, vnode in reversed(node.value):  # the last duplicate wins, as in the data
            if isinstance(knode, ScalarNode) and knode.value == want:
                return knode, vnode
    elif isinstance(node, SequenceNode) and isinstance(elem, int) and 0 <= elem < len(node.value):
        item = node.value[elem]
        return item, item
    return None


def locate(root: Node | None, path: Path, *, key: bool = False) -> tuple[int, int]:
    """1-based (line, col) of the node at `path`; with key=True, of the mapping key naming it.
    A path that leaves the tree (a missing field) points at the deepest node that exists."""
    if root is None:
        return 1, 1
    node = root
    for i, elem in enumerate(path):
        hit = _child(node, elem)
        if hit is None:
            break
        if key and i == len(path) - 1:
            return _pos(hit[0])
        node = hit[1]
    return _pos(node)


def path_of(root: Node | None, target: Node) -> Path:
    """The path to a node (used only for rare problems found on nodes, e.g. duplicate keys)."""
    if root is None:
        return ()
    stack: list[tuple[Node, Path]] = [(root, ())]
    seen: set[int] = set()
    while stack:
        node, path = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, MappingNode):
            for knode, vnode in node.value:
                p = (*path, knode.value if isinstance(knode, ScalarNode) else "?")
                if knode is target:
                    return p
                stack.append((vnode, p))
        elif isinstance(node, SequenceNode):
            stack.extend((v, (*path, i)) for i, v in enumerate(node.value))
    return ()


def read(path: str, file: str) -> Doc:
    """Read and parse one file; every way it can fail is a YamlError."""
    try:
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode):  # a FIFO would block, /dev/zero never end
            raise YamlError(1, 1, "not a regular file (a spec must be a file, not a "
                            f"{_kind(st.st_mode)})")
        if st.st_size > MAX_SPEC_BYTES:
            raise YamlError(1, 1, f"file too large: {st.st_size} bytes (a spec file may have "
                            f"at most {MAX_SPEC_BYTES})")
        with open(path, "rb") as f:
            raw = f.read(MAX_SPEC_BYTES + 1)
    except OSError as e:
        raise YamlError(1, 1, f"cannot read file: {e.strerror or e}") from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise YamlError(*_offset_pos(raw, e.start), "not a UTF-8 text file") from None
    if "\x00" in text:
        raise YamlError(*_offset_pos(raw, raw.index(b"\x00")), "not a text file (contains NUL bytes)")
    return parse(text, file, os.path.abspath(path))


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "device"
    if stat.S_ISDIR(mode):
        return "directory"
    return "socket or special file"


def _offset_pos(raw: bytes, offset: int) -> tuple[int, int]:
    line_start = raw.rfind(b"\n", 0, offset) + 1
    return raw.count(b"\n", 0, offset) + 1, offset - line_start + 1
