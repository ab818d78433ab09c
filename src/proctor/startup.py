"""The `proctor` program's own start and end (issue 37: a trivial run in under 0.2 s).

When this interpreter was started as the `proctor` program (its console script), nothing
else shares it, so:

* the cyclic garbage collector is held off while the CLI and a command's modules are
  imported and its input is read: tens of thousands of objects that all live to the end,
  ~60 collections (~12 ms) of a trivial run for nothing. It is let go when the command's
  real work begins (`release_gc`: a run's trials, most commands' bodies; `validate`,
  `show` and `runs` are short and bounded and never let it go);
* what a command keeps to its end (`keep_to_exit`: a run's plan and results, tens of
  thousands of objects) is not freed one by one as it returns;
* the process ends, once its output is flushed and every exit handler has run, without the
  interpreter's teardown (every module's dict cleared, a last full collection: ~15-20 ms
  of a trivial run), as `os._exit` ends it. Whatever could still need the teardown (another
  thread alive, a stream that cannot be flushed, an exit code that is not a number) takes
  the normal way out.

A host program or a test calling `proctor.cli.main()` in its own interpreter gets none of it.
What proctor writes is closed by its writers (store.py, record/), never left to the
teardown; the run index's connections are closed by an exit handler (store.py).
"""

from __future__ import annotations

import atexit
import gc
import os
import sys
from typing import NoReturn

PROGRAM = ("proctor", "proctor.exe")

_held = False
_to_exit: list[object] = []  # what `keep_to_exit` was given


def started_as_proctor() -> bool:
    """Whether the interpreter runs the `proctor` program itself: its main script is the
    file the process was started with, named proctor (not `python -c`, pytest, a host)."""
    script = getattr(sys.modules.get("__main__"), "__file__", None)
    return (isinstance(script, str) and bool(sys.argv) and os.path.basename(script) in PROGRAM
            and os.path.abspath(sys.argv[0]) == os.path.abspath(script))


def begin() -> None:
    """The proctor program's start: no cyclic collection until `release_gc`, and the code
    dataclasses and namedtuple generate compiled once (codecache.py). Nothing elsewhere."""
    if not started_as_proctor():
        return
    hold_gc()
    from proctor import codecache

    command = sys.argv[1] if len(sys.argv) > 1 else ""
    codecache.install(codecache.CodeCache(codecache.default_path(command)))


def hold_gc() -> None:
    """No cyclic collection until `release_gc`."""
    global _held
    if not _held and gc.isenabled():
        gc.disable()
        _held = True


def release_gc() -> None:
    """Collections as usual from here on (a no-op unless `hold_gc` held them)."""
    global _held
    if _held:
        _held = False
        gc.enable()


def keep_to_exit(*objects: object) -> None:
    """The proctor program keeps `objects` (a run's plan, its results) until the process
    ends (`leave`: all of its memory goes at once), instead of freeing them object by object
    as the command returns: ~5 ms of CPU at the end of a 1,000-trial run. A host or a test
    calling the command keeps nothing."""
    if started_as_proctor():
        _to_exit.extend(objects)


def leave(code: object) -> NoReturn:
    """End the proctor program with a SystemExit's `code`: output flushed, exit handlers
    run, then straight out; or by raising SystemExit(code) where that is not safe."""
    if code is None:
        code = 0
    threading = sys.modules.get("threading")
    if not isinstance(code, int) or (threading is not None and threading.active_count() > 1):
        raise SystemExit(code)
    _flush_or_raise(code)
    atexit._run_exitfuncs()  # as at a normal exit (run once: the list is cleared)
    _flush_or_raise(code)
    os._exit(code)


def _flush_or_raise(code: int) -> None:
    # A stream that cannot be flushed (a closed pipe): the interpreter's own exit says so
    # and sets the exit status, as it always has.
    try:
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:
                stream.flush()
    except BaseException:
        raise SystemExit(code) from None
