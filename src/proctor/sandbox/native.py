"""proctor's small C programs, built once per machine with the C compiler.

`exectrace.c` (the process tracer, sandbox/trace.py), `spawner.c` (the process starter
inside each box, sandbox/spawn.py, which includes exectrace.c for its tracing code) and
`launch.c` (the first program of every command in a docker trial's container, docker.py) are
compiled on first use into the cache directory, named by a digest of their sources and of the
compiler flags, under a lock, atomically: a new proctor version (or a change of flags) builds
its own, two runs never build at once, and a half-written binary is never used. Static when
the C library allows, so a binary also runs inside any container image. Warnings are errors,
and the C library's and compiler's hardening is on.
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
from proctor.sandbox.dockerimages import cache_dir

PROGRAMS = {  # name -> (what it is, who needs it, its sources: the first is compiled)
    "exectrace": ("proctor's tracer", "recording processes", ("exectrace.c",)),
    "spawner": ("proctor's process starter", "isolated sandboxes", ("spawner.c", "exectrace.c")),
    "launch": ("proctor's launcher in containers", "the docker backend", ("launch.c",)),
}
CFLAGS = ("-O2", "-Wall", "-Wextra", "-Werror", "-D_FORTIFY_SOURCE=2",
          "-fstack-protector-strong")
COMPILE_TIMEOUT_S = 120.0


@functools.cache
def binary(name: str) -> Path:
    """The compiled program `name` (a key of PROGRAMS), built if it is not yet."""
    sources = [Path(__file__).with_name(s) for s in PROGRAMS[name][2]]
    digest = hashlib.sha256(" ".join(CFLAGS).encode())
    for source in sources:
        digest.update(source.read_bytes())
    built = cache_dir() / f"{name}-{digest.hexdigest()[:12]}"
    if not built.is_file():
        built.parent.mkdir(parents=True, exist_ok=True)
        with open(built.parent / f".{name}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not built.is_file():
                _compile(sources[0], built, PROGRAMS[name][:2])
    return built


def _compile(source: Path, built: Path, program: tuple[str, str]) -> None:
    title, needs = program
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        raise SetupError(f"{needs} needs {title}, built once from {source.name} with a C "
                         "compiler: install one (Debian: gcc libc6-dev) or set CC")
    tmp = built.with_name(f"{built.name}.{os.getpid()}.tmp")
    base = [cc, *CFLAGS, "-o", str(tmp), str(source)]
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
