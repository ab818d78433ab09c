"""What grading would run or load that the agent changed (SPEC §4: `tampering`).

A Harbor verifier runs the container's own programs (its bash, curl, python3, apt-get ...),
which a root agent may have replaced. Anything of that kind the agent changed makes the trial
`fail` with `tampering` naming the files: a program that existed in the image and that the
verifier ran; a shared library, an interpreter's standard library or a test framework that
existed in the image (every run loads some); a loader, shell or tool configuration file; and
start-up hooks the agent added (`/etc/ld.so.preload`, a `.pth` that runs code,
`sitecustomize`, a pytest configuration above /tests). What the task asked the agent to
produce is new files of other kinds, which are never flagged; nor is a file the agent changed
that grading never ran.
"""

from __future__ import annotations

import posixpath
import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from proctor.sandbox.dockerenv import ImageSandbox

LIB_DIRS = ("/lib", "/lib32", "/lib64", "/libx32", "/usr/lib", "/usr/lib32", "/usr/lib64",
            "/usr/libx32", "/usr/local/lib")
SHARED_LIBRARY = re.compile(r"\.so(\.[0-9.]+)?$")
# Read by the loader, by every shell, or by the tools verifiers use: changed or added.
CONFIG = ("/etc/ld.so.preload", "/etc/ld.so.conf", "/etc/ld.so.conf.d/", "/etc/profile",
          "/etc/profile.d/", "/etc/bash.bashrc", "/etc/bashrc", "/etc/environment",
          "/etc/pip.conf", "/etc/xdg/pip/", "/etc/apt/apt.conf", "/etc/apt/apt.conf.d/",
          "/etc/gitconfig", "/etc/wgetrc", "/etc/curlrc", "/etc/npmrc", "/etc/uv/",
          "/etc/python3", "/etc/dpkg/dpkg.cfg", "/etc/dpkg/dpkg.cfg.d/")
HOOK_NAMES = ("sitecustomize.py", "usercustomize.py")
# pytest reads these in every directory above the tests' (/tests: only /).
PYTEST_ROOT = ("/conftest.py", "/pytest.ini", "/pyproject.toml", "/tox.ini", "/setup.cfg")
SITE = re.compile(r"/(site|dist)-packages/")
STDLIB = re.compile(r"^/usr(/local)?/lib/python3[^/]*/")
TEST_FRAMEWORKS = re.compile(r"/(site|dist)-packages/(_pytest|pytest|pluggy|py|iniconfig)(/|\.py$)")
MAX_PTH_BYTES = 100_000


def why_flagged(path: str, change: str, ran: set[str], read: Any, workdir: str = "/") -> str | None:
    """Why grading would run or load `path` ("changed"/"added" from the image), or None.
    Nothing in the working directory: that is where the task has the agent work."""
    if change == "deleted" or (workdir != "/" and path.startswith(workdir.rstrip("/") + "/")):
        return None
    name = posixpath.basename(path)
    if any(path.startswith(c) if c.endswith(("/", "python3")) else path == c for c in CONFIG):
        return "a loader, shell or tool configuration file"
    if name in HOOK_NAMES:
        return "a start-up hook Python runs"
    if name.endswith(".pth") and SITE.search(path) and _runs_code(read(path)):
        return "a .pth file that runs code at every Python start"
    if path in PYTEST_ROOT:
        return "a pytest configuration above /tests"
    if change != "changed":
        return None  # new files are the agent's work
    if path in ran:
        return "a program the verifier ran"
    if path.startswith(tuple(d + "/" for d in LIB_DIRS)) and SHARED_LIBRARY.search(name):
        return "a shared library programs load"
    if TEST_FRAMEWORKS.search(path):
        return "part of the test framework"
    if STDLIB.search(path) and not SITE.search(path) and name.endswith(".py"):
        return "part of Python's standard library"
    return None


def _runs_code(data: bytes | None) -> bool:
    """A .pth line that starts with `import` is executed by Python's site module."""
    if data is None:
        return True  # unreadable: assume the worst
    return any(line.startswith((b"import ", b"import\t")) for line in data.splitlines())


async def tampering(sb: ImageSandbox, changes: dict[str, str], res: Any) -> list[dict[str, str]]:
    """The files grading ran or would load that the agent changed, each with why."""
    import asyncio

    if not changes:
        return []
    ran = await asyncio.to_thread(_ran, sb, res, changes)

    def read(path: str) -> bytes | None:
        host = sb.host_path(path, follow=False)
        try:
            with open(host, "rb") as f:  # type: ignore[arg-type]
                return f.read(MAX_PTH_BYTES)
        except (OSError, TypeError):
            return None

    out = []
    for path, change in sorted(changes.items()):
        why = await asyncio.to_thread(why_flagged, path, change, ran, read, sb.workdir)
        if why is not None:
            out.append({"path": path, "change": f"{change}: {why}"})
    return out


def _ran(sb: ImageSandbox, res: Any, changes: dict[str, str]) -> set[str]:
    """The files the verifier's processes executed, as real paths in the container: argv[0]
    (a name looked up on the verifier's PATH), and argv[1] when it is an executable file (a
    script's own path after its interpreter's)."""
    path_dirs = [d for d in sb.env.get("PATH", "").split(":") if d.startswith("/")]
    out: set[str] = set()
    for argv in res.execs or []:
        for i, arg in enumerate(argv[:2]):
            for candidate in ([arg] if "/" in arg else [posixpath.join(d, arg) for d in path_dirs]):
                real = sb.real_path(candidate, executable=i > 0)
                if real is not None:
                    out.update((real, candidate))
                    break
    return out
