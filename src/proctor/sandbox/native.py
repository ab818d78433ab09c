"""proctor's two small C programs, built once per machine with the C compiler.

`exectrace.c` (the process tracer, sandbox/trace.py) and `spawner.c` (the process starter
inside each box, sandbox/spawn.py) are compiled on first use into the cache directory, named
by their source's digest, under a lock, atomically: a new proctor version builds its own, two
runs never build at once, and a half-written binary is never used. Static when the C library
allows, so a binary also runs inside any container image.
"""

from __future__ import annotations

import fcntl
import functools
import hashlib
import os
import shutil
import subprocess
from pathlib import Path

from proctor.errors import SetupError
from proctor.sandbox.dockerimages import cache_dir

PROGRAMS = {  # name -> (what it is, who needs it)
    "exectrace": ("proctor's tracer", "recording processes"),
    "spawner": ("proctor's process starter", "isolated sandboxes"),
}


@functools.cache
def binary(name: str) -> Path:
    """The compiled program `name` (`exectrace` or `spawner`), built if it is not yet."""
    source = Path(__file__).with_name(f"{name}.c")
    digest = hashlib.sha256(source.read_bytes()).hexdigest()[:12]
    built = cache_dir() / f"{name}-{digest}"
    if not built.is_file():
        built.parent.mkdir(parents=True, exist_ok=True)
        with open(built.parent / f".{name}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not built.is_file():
                _compile(source, built, PROGRAMS[name])
    return built


def _compile(source: Path, built: Path, program: tuple[str, str]) -> None:
    title, needs = program
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        raise SetupError(f"{needs} needs {title}, built once from {source.name} with a C "
                         "compiler: install one (Debian: gcc libc6-dev) or set CC")
    tmp = built.with_name(f"{built.name}.{os.getpid()}.tmp")
    base = [cc, "-O2", "-o", str(tmp), str(source)]
    res = None
    for argv in (base + ["-static"], base):
        try:
            res = subprocess.run(argv, capture_output=True, text=True)
        except OSError as e:
            raise SetupError(f"building {title}: cannot run {cc}: {e}") from None
        if res.returncode == 0:
            os.replace(tmp, built)
            return
    tmp.unlink(missing_ok=True)
    raise SetupError(f"building {title} failed ({' '.join(base)}):\n"
                     f"{res.stderr.strip()[-2000:]}")
