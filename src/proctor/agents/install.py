"""Installing external agents once, into a cache under proctor's home.

`$PROCTOR_HOME/agents/NAME-VERSION/` holds one pinned version: an npm prefix
(`npm install --prefix`) or a venv (`pip install`). A version is installed into a temporary
directory first and renamed into place when complete, under a file lock, so concurrent
trials install it once and an interrupted install never leaves a half-made cache behind.
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from proctor.errors import UsageError

_VERSION = re.compile(r"^[0-9][0-9A-Za-z.+-]*$")


def agents_home() -> Path:
    # store.proctor_home()'s rule; agents sit below store in the import layers.
    return Path(os.environ.get("PROCTOR_HOME") or ".proctor").resolve() / "agents"


def _pinned(name: str, version: str) -> Path:
    if not _VERSION.match(version):
        raise UsageError(f"{name}: version {version!r} is not an exact version (e.g. 2.0.76)")
    return agents_home() / f"{name}-{version}"


def _install(dest: Path, steps: list[list[str]], what: str) -> None:
    """Run `steps` (with {dir} as the temporary target) under a lock; rename into `dest`."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    with open(dest.parent / f".{dest.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if dest.exists():
            return  # another process finished it while we waited
        tmp = dest.parent / f".{dest.name}.tmp-{os.getpid()}"
        shutil.rmtree(tmp, ignore_errors=True)
        try:
            for step in steps:
                argv = [a.replace("{dir}", str(tmp)) for a in step]
                done = subprocess.run(argv, capture_output=True, text=True, timeout=600)
                if done.returncode != 0:
                    last = (done.stderr.strip() or done.stdout.strip()).splitlines()[-1:]
                    raise UsageError(f"installing {what} failed: {' '.join(argv[:3])} …: "
                                     f"{last[0] if last else f'exit {done.returncode}'}")
            tmp.rename(dest)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


def install_npm(name: str, package: str, version: str, binary: str) -> Path:
    """The path of `binary` from npm `package@version`, installed on first use."""
    dest = _pinned(name, version)
    if not dest.exists():
        if shutil.which("npm") is None:
            raise UsageError(f"installing {name} needs npm (and node): run ./setup.sh")
        _install(dest, [["npm", "install", "--prefix", "{dir}", "--no-audit", "--no-fund",
                         f"{package}@{version}"]], f"{package}@{version}")
    return dest / "node_modules" / ".bin" / binary


def install_pip(name: str, package: str, version: str, binary: str) -> Path:
    """The path of `binary` from PyPI `package==version`, in its own venv."""
    dest = _pinned(name, version)
    if not dest.exists():
        _install(dest, [[sys.executable, "-m", "venv", "{dir}"],
                        ["{dir}/bin/python", "-m", "pip", "install", "-q",
                         f"{package}=={version}"]], f"{package}=={version}")
    return dest / "bin" / binary
