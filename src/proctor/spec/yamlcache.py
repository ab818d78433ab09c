"""Specs read before: a YAML text's data kept in $PROCTOR_CACHE/yaml under the digest of the
text and of the parser that read it, so that reading an unchanged spec again neither imports
nor runs the parser (yamlparse.py: PyYAML's import alone is ~10 ms of a run's start-up).

Only what marshal writes exactly is kept (plain data: no dates), only for a text without a
problem (one with a problem is parsed again, to be worded with its positions), only for
texts up to MAX_TEXT_CHARS; past MAX_ENTRIES files the oldest half goes. Anything unreadable
is a miss: the text is parsed as if the cache were not there."""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.util
import marshal
import os
import sys
from pathlib import Path
from typing import Any

MISSING = object()  # recall's "not kept" (None is the data of an empty file)
MAX_TEXT_CHARS = 1 << 20  # a 10,000-task suite parses as before
MAX_ENTRIES = 512


def recall(text: str) -> Any:
    """(data, note) as kept for `text` (the data as the parser made it), or MISSING."""
    path = _entry(text)
    if path is None:
        return MISSING
    try:
        with open(path, "rb") as f:
            kept = marshal.loads(f.read())
    except (OSError, ValueError, EOFError, TypeError):
        return MISSING
    return kept if type(kept) is tuple and len(kept) == 2 else MISSING


def keep(text: str, data: Any, note: Any = None) -> None:
    """Remember `data` as `text`'s, with `note` (what the reader worked out from the data
    alone: whether it holds a `{{`); quietly nothing when it cannot be."""
    path = _entry(text)
    if path is None:
        return
    try:
        blob = marshal.dumps((data, note))
    except ValueError:  # a date, or another value marshal does not write
        return
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}")
        tmp.write_bytes(blob)
        os.replace(tmp, path)  # whole or not at all, for a reader at the same moment
        _prune(path.parent)


def _entry(text: str) -> Path | None:
    if len(text) > MAX_TEXT_CHARS:
        return None
    parser = _parser()
    if parser is None:
        return None
    from proctor.sandbox.cache import cache_dir

    digest = hashlib.sha256(parser.encode() + b"\0" + text.encode("utf-8", "surrogatepass"))
    return cache_dir() / "yaml" / digest.hexdigest()[:40]


@functools.cache
def _parser() -> str | None:
    """What the data depends on besides the text: PyYAML as installed (its files' identity),
    proctor's converter and this module (theirs), Python's marshal format."""
    found = importlib.util.find_spec("yaml")
    here = Path(__file__).parent
    paths = [found.origin if found and found.origin else "",
             *(str(here / name) for name in ("yamlparse.py", "yamlcache.py"))]
    try:
        stats = [os.stat(p) for p in paths]
    except OSError:
        return None
    return " ".join([sys.version, str(marshal.version),
                     *(f"{p}:{s.st_size}:{s.st_mtime_ns}:{s.st_ino}" for p, s in zip(paths, stats, strict=True))])


def _prune(where: Path) -> None:
    """Past MAX_ENTRIES, the older half goes (by when each was written)."""
    entries = list(os.scandir(where))
    if len(entries) <= MAX_ENTRIES:
        return
    written = []
    for e in entries:
        with contextlib.suppress(OSError):  # gone meanwhile (another run pruned it)
            written.append((e.stat().st_mtime_ns, e.path))
    for _, path in sorted(written)[: len(written) // 2]:
        with contextlib.suppress(OSError):
            os.unlink(path)
