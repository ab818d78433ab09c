"""What start-up compiles from text, compiled once: the code of the methods `dataclasses`
writes for each class (`__init__`, a frozen class's `__setattr__` ...), of each
`namedtuple`'s `__new__` and of each annotation typing is given as text (ForwardRef), and
the regular expressions modules compile at import, kept by their text in
$PROCTOR_CACHE/code.

Those modules make that code from source text at import (`exec`/`eval`/`compile` of a
string): a trivial run's start-up parsed and compiled ~100 generated functions (~10 % of
its CPU), ~200 annotations (~1 %) and ~50 regular expressions (~3 %). Installed (`install`,
by the proctor program only: proctor/startup.py), the modules' `exec`, `eval` and `compile`
are this cache's: the same text compiled the same way (no inherited `__future__` flags,
file name "<string>") gives the same code object, so nothing about the classes changes;
only its compiling is skipped after the first time. A regular expression's parse is
skipped likewise: what `re` handed its C engine (`_sre.compile`'s arguments) the first
time is handed to it again. Anything not kept is compiled as before. The file is Python's
own marshal, written by this user's proctor into this user's cache, as `__pycache__` is
(and as the bubblewrap spawner kept there is run).
"""

from __future__ import annotations

import atexit
import builtins
import collections
import contextlib
import dataclasses
import marshal
import os
import re
import sys
import threading
import typing
from pathlib import Path
from types import CodeType
from typing import Any

# Past this many, a file keeps only what its last writer used (one file per command: what a
# run uses is ~130 entries, ~200 KB).
MAX_ENTRIES = 512
# The modules whose builtins this cache stands in for (each calls it with source text only
# where it generates code: dataclasses' methods, namedtuple's __new__, typing's ForwardRef).
_MODULES = ((dataclasses, "exec"), (collections, "eval"), (typing, "compile"))


class CodeCache:
    """Code by source text (mode "exec" or "eval"), read from and kept in `path`."""

    def __init__(self, path: Path | None):
        self.path = path
        self.hits = 0
        self.misses = 0
        self._code: dict[Any, Any] = {}  # (mode, text) -> code; ("re", pattern, flags) -> args
        self._new = False
        self._used: set[Any] = set()
        if path is not None:
            with contextlib.suppress(OSError, ValueError, EOFError, TypeError):
                version, code = marshal.loads(path.read_bytes())
                if version == sys.version and isinstance(code, dict):
                    self._code = code

    def compiled(self, source: str, mode: str) -> CodeType:
        key = (mode, source)
        code: CodeType | None = self._code.get(key)
        if code is not None:
            self.hits += 1
            self._used.add(key)
            return code
        self.misses += 1
        code = compile(source, "<string>", mode, dont_inherit=True)
        self._keep(key, code)
        return code

    def pattern(self, p: Any, flags: int = 0) -> Any:
        """re's `_compiler.compile(p, flags)`: its C engine's pattern, parsed once."""
        key = ("re", p, int(flags))
        args = self._code.get(key) if type(p) in (str, bytes) else None
        if args is not None:
            self.hits += 1
            self._used.add(key)
            return _sre.compile(*args)
        flags = int(flags)
        if type(p) not in (str, bytes) or flags & re.DEBUG:
            return _compile_pattern(p, flags)
        self.misses += 1
        with _recording:  # what re hands _sre.compile, for this pattern only
            seen: list[tuple[Any, ...]] = []
            _compiler._sre = _Recorder(seen)
            try:
                compiled = _compile_pattern(p, flags)
            finally:
                _compiler._sre = _sre
        if len(seen) == 1 and seen[0][0] is p:
            # re's opcodes are named ints: kept as the ints they are (the engine's view)
            args = tuple([int(c) for c in a] if type(a) is list else
                         int(a) if isinstance(a, int) else a for a in seen[0])
            with contextlib.suppress(ValueError, TypeError):
                marshal.dumps((key, args))  # plain data only
                self._keep(key, args)
        return compiled

    def _keep(self, key: Any, value: Any) -> None:
        self._code[key] = value
        self._used.add(key)
        self._new = True

    def exec(self, source: Any, globals: Any = None, locals: Any = None) -> None:
        if isinstance(source, str):
            source = self.compiled(source, "exec")
        builtins.exec(source, globals, locals)

    def eval(self, source: Any, globals: Any = None, locals: Any = None) -> Any:
        if isinstance(source, str):
            source = self.compiled(source, "eval")
        return builtins.eval(source, globals, locals)

    def compile(self, source: Any, filename: str, mode: str, flags: int = 0,
                dont_inherit: bool = False, optimize: int = -1) -> Any:
        # Called from a module without `__future__` imports: nothing to inherit from it.
        if type(source) is str and filename == "<string>" and mode in ("exec", "eval") \
                and not flags and optimize == -1:
            return self.compiled(source, mode)
        return builtins.compile(source, filename, mode, flags, True, optimize)

    def save(self) -> None:
        """Write the file if anything was compiled (quietly nothing when it cannot be)."""
        if not self._new or self.path is None:
            return
        self._new = False
        kept = self._code if len(self._code) <= MAX_ENTRIES else \
            {k: v for k, v in self._code.items() if k in self._used}
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp.write_bytes(marshal.dumps((sys.version, kept)))
            os.replace(tmp, self.path)  # whole or not at all, for a reader at the same moment
        except (OSError, ValueError):  # a full disk, a read-only cache: no file, no leftover
            with contextlib.suppress(OSError):
                tmp.unlink()


class _Recorder:
    """re's `_sre` for one compile: passes everything through, notes compile's arguments."""

    def __init__(self, seen: list[tuple[Any, ...]]):
        self.seen = seen

    def compile(self, *args: Any) -> Any:
        self.seen.append(args)
        return _sre.compile(*args)

    def __getattr__(self, name: str) -> Any:
        return getattr(_sre, name)


# re's compiler and its engine, as re itself reaches them (re._compile -> _compiler.compile
# -> _sre.compile); without them (another Python's layout) patterns are left alone.
_compiler: Any = getattr(re, "_compiler", None)
_sre: Any = getattr(_compiler, "_sre", None)
_compile_pattern: Any = getattr(_compiler, "compile", None)
_recording = threading.Lock()
_installed: CodeCache | None = None


def default_path(command: str) -> Path:
    """$PROCTOR_CACHE/code/<python>-<marshal format>-<command> (the cache directory as
    sandbox/cache.py says it: this module is below the sandbox's layer). One file per
    command (`run`, `show` ...): each loads what it uses, not every other command's."""
    given = os.environ.get("PROCTOR_CACHE")
    root = Path(given) if given else Path(os.environ.get("XDG_CACHE_HOME")
                                          or Path.home() / ".cache") / "proctor"
    name = command if command.replace("-", "").isalnum() and len(command) <= 32 else "other"
    return root / "code" / f"{sys.implementation.cache_tag}-{marshal.version}-{name}"


def install(cache: CodeCache) -> None:
    """Make `cache` the `exec`/`eval`/`compile` of dataclasses, collections and typing (their
    functions look the names up in their module first) and re's pattern compiler; the file
    kept at exit."""
    global _installed
    if _installed is not None:
        return
    for module, name in _MODULES:
        if name in vars(module):  # someone else's already: leave the module alone
            return
    for module, name in _MODULES:
        setattr(module, name, getattr(cache, name))
    if _sre is not None and callable(_compile_pattern):
        _compiler.compile = cache.pattern
    _installed = cache
    atexit.register(cache.save)


def uninstall() -> None:
    global _installed
    if _installed is None:
        return
    for module, name in _MODULES:
        with contextlib.suppress(AttributeError):
            delattr(module, name)
    if _compiler is not None and _compiler.compile == _installed.pattern:
        _compiler.compile = _compile_pattern
    _installed.save()
    _installed = None
