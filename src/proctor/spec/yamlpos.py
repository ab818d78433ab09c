"""YAML with positions: plain Python data plus the node tree, so any value's line:col can be
found when (and only when) something is wrong with it.

libyaml composes the node tree (fast, in C); our converter (yamlparse.py) turns nodes into
data in one pass, catching what PyYAML silently accepts: duplicate keys, non-scalar keys. The
parser is imported only when a text is parsed or a position asked for: a file read before,
unchanged and without a problem, comes back from yamlcache.py as its data, and its tree is
composed the first time a position is asked for.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from proctor.fieldwise import Fieldwise
from proctor.spec import yamlcache
from proctor.spec.yamlerror import Path as Path
from proctor.spec.yamlerror import YamlError as YamlError

if TYPE_CHECKING:
    from yaml.nodes import Node

@dataclass(eq=False, repr=False)
class Doc(Fieldwise):
    """One parsed file."""

    file: str  # as shown in messages
    abspath: str
    data: Any
    _root: Node | None
    duplicates: list[tuple[Node, Node]] = field(default_factory=list)  # (first key, repeated key)
    _text: str | None = None  # set when the tree was let go: it is composed again on demand
    # Whether any string of the data (key or value) may hold `{{` (None: not looked yet):
    # kept with the data in yamlcache, so that a spec read before is not looked through again.
    braces: bool | None = field(default=None, compare=False, repr=False)

    @property
    def root(self) -> Node | None:
        if self._root is None and self._text is not None:
            from proctor.spec.yamlparse import recompose

            self._root, self._text = recompose(self._text), None  # same text, same positions
        return self._root

    @property
    def base_dir(self) -> str:
        return os.path.dirname(self.abspath)


# A file this long lets its node tree go once converted, and composes it again the first time a
# position is asked for (usually never: positions are for problems). The tree is most of the
# memory of loading: ~60 MB for a suite of 10,000 tasks, which would otherwise still be held
# while the tasks are built from the data.
KEEP_TREE_CHARS = 256 * 1024


# Bounds on what one spec file may make proctor do (the others: yamlerror.py).
MAX_SPEC_BYTES = 20 * 1024 * 1024


def parse(text: str, file: str, abspath: str) -> Doc:
    """`text` parsed: its data and node tree (YamlError if it is not readable YAML)."""
    from proctor.spec import yamlparse

    data, root, duplicates = yamlparse.parse(text)
    if len(text) > KEEP_TREE_CHARS and not duplicates:  # duplicates point into the tree
        return Doc(file, abspath, data, None, [], text)
    return Doc(file, abspath, data, root, duplicates)


def locate(root: Node | None, path: Path, *, key: bool = False) -> tuple[int, int]:
    """1-based (line, col) of the node at `path`; with key=True, of the mapping key naming it.
    A path that leaves the tree (a missing field) points at the deepest node that exists."""
    if root is None:
        return 1, 1
    from proctor.spec import yamlparse

    return yamlparse.locate(root, path, key=key)


def path_of(root: Node | None, target: Node) -> Path:
    """The path to a node (used only for rare problems found on nodes, e.g. duplicate keys)."""
    if root is None:
        return ()
    from proctor.spec import yamlparse

    return yamlparse.path_of(root, target)


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
    abspath = os.path.abspath(path)
    kept = yamlcache.recall(text)
    if kept is not yamlcache.MISSING:  # read before, unchanged: its tree only if asked for
        data, has_braces = kept
        return Doc(file, abspath, data, None, [], text, has_braces)
    doc = parse(text, file, abspath)
    if not doc.duplicates:  # a file with a problem is parsed again, to be worded
        doc.braces = braces(doc.data)
        yamlcache.keep(text, doc.data, doc.braces)
    return doc


def braces(data: Any) -> bool:
    """Whether any string inside (a key or a value) may hold `{{`: JSON writes every string
    as it is but for escapes, none of which is `{`, and never puts two braces together
    itself (an object's first brace is followed by a quote or its last). A value's JSON is
    a part of the JSON of whatever holds it: none in a whole file, none in any of its parts."""
    import json

    try:
        return "{{" in json.dumps(data, ensure_ascii=False, default=str)
    except (TypeError, ValueError):  # a key JSON has no form for: walked as it is
        return True


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
