"""proctor's small C programs, built once per machine with the C compiler.

`exectrace.c` (the process tracer, sandbox/trace.py), `spawner.c` (the process starter
inside each box, sandbox/spawn.py, built with exectrace.c for its tracing code: the two meet
in exectrace.h) and `launch.c` (the first program of every command in a docker trial's
container, docker/container.py) are compiled on first use into the cache directory, named by
a digest of their sources, the headers and the compiler flags, under a lock, atomically: a
new proctor version (or a change of flags) builds its own, two runs never build at once, and
a half-written binary is never used. Static when the C library allows, so a binary also runs
inside any container image. Warnings are errors, and the C library's and compiler's
hardening is on.
"""

from __future__ import annotations

import fcntl
import functools
import hashlib
import os
import shutil
from pathlib import Path

from proctor import proc
from proctor.errors import SetupError
from proctor.sandbox.cache import cache_dir

# name -> (what it is, who needs it, its sources (compiled together), its own flags)
PROGRAMS: dict[str, tuple[str, str, tuple[str, ...], tuple[str, ...]]] = {
    "exectrace": ("proctor's tracer", "recording processes", ("exectrace.c",), ()),
    "spawner": ("proctor's process starter", "isolated sandboxes",
                ("spawner.c", "exectrace.c"), ("-DEXECTRACE_NO_MAIN",)),  # the spawner's main
    "launch": ("proctor's launcher in containers", "the docker backend", ("launch.c",), ()),
}
HEADERS = ("exectrace.h",)  # in every program's digest: a changed header rebuilds them all
CFLAGS = ("-O2", "-Wall", "-Wextra", "-Werror", "-D_FORTIFY_SOURCE=2",
          "-fstack-protector-strong")
COMPILE_TIMEOUT_S = 120.0


@functools.cache
def binary(name: str) -> Path:
    """The compiled program `name` (a key of PROGRAMS), built if it is not yet."""
    title, needs, names, flags = PROGRAMS[name]
    sources = [Path(__file__).with_name(s) for s in names]
    digest = hashlib.sha256(" ".join((*CFLAGS, *flags)).encode())
    for source in [*sources, *(Path(__file__).with_name(h) for h in HEADERS)]:
        digest.update(source.read_bytes())
    built = cache_dir() / f"{name}-{digest.hexdigest()[:12]}"
    if not built.is_file():
        built.parent.mkdir(parents=True, exist_ok=True)
        with open(built.parent / f".{name}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not built.is_file():
                _compile(sources, flags, built, (title, needs))
    return built


def _compile(sources: list[Path], flags: tuple[str, ...], built: Path,
             program: tuple[str, str]) -> None:
    title, needs = program
    source = sources[0]
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        raise SetupError(f"{needs} needs {title}, built once from {source.name} with a C "
                         "compiler: install one (Debian: gcc libc6-dev) or set CC")
    tmp = built.with_name(f"{built.name}.{os.getpid()}.tmp")
    base = [cc, *CFLAGS, *flags, "-o", str(tmp), *map(str, sources)]
    res = None
    for argv in (base + ["-static"], base):
        res = proc.run_sync(argv, timeout=COMPILE_TIMEOUT_S)
        if res.exit_code == 0:
            os.replace(tmp, built)
            return
        if res.exit_code is None and not res.timed_out:  # the compiler did not start
            raise SetupError(f"building {title}: cannot run {cc}: "
                             f"{res.stderr.partition(': ')[2].strip()}")
    tmp.unlink(missing_ok=True)
    why = f"timed out after {COMPILE_TIMEOUT_S:g} s" if res and res.timed_out else \
        (res.stderr if res else "")
    raise SetupError(f"building {title} failed ({' '.join(base)}):\n{why.strip()[-2000:]}")
