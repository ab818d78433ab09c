"""Installing external agents once, into a cache under proctor's home.

`$PROCTOR_AGENTS` (default `$PROCTOR_HOME/agents/`) holds one directory per pinned version,
`NAME-VERSION/`: an npm prefix (`npm install --prefix`) or a venv (`pip install`). A version
is installed in place (a venv cannot move: its scripts name their own path) under a file
lock, and counts as installed only once its marker file is written last, so concurrent runs
install it once and an interrupted install is redone, never used half-made.
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path

from proctor import proc
from proctor.errors import UsageError

_VERSION = re.compile(r"^[0-9][0-9A-Za-z.+-]*$")


def agents_home() -> Path:
    """$PROCTOR_AGENTS, else $PROCTOR_HOME/agents (store.proctor_home()'s rule; agents sit
    below store in the import layers)."""
    if os.environ.get("PROCTOR_AGENTS"):
        return Path(os.environ["PROCTOR_AGENTS"]).resolve()
    # Resolved whole: a symlinked `agents` (a shared cache) names the real place, which is
    # what the tracer sees in the agent's argv.
    return (Path(os.environ.get("PROCTOR_HOME") or ".proctor") / "agents").resolve()


def pinned_dir(name: str, version: str) -> Path:
    if not _VERSION.match(version):
        raise UsageError(f"{name}: version {version!r} is not an exact version (e.g. 2.0.76)")
    return agents_home() / f"{name}-{version}"


MARKER = ".proctor-installed"
INSTALL_STEP_TIMEOUT_S = 600.0


def installed(dest: Path) -> bool:
    return (dest / MARKER).is_file()


# Whether an install shows its progress (a run that is not --quiet says so, install_agents);
# elsewhere (a trial installing what the run did not) it is silent.
_SHOWN: ContextVar[bool] = ContextVar("proctor_install_shown", default=False)


@contextmanager
def progress_shown(shown: bool = True) -> Iterator[None]:
    token = _SHOWN.set(shown)
    try:
        yield
    finally:
        _SHOWN.reset(token)


def _install(dest: Path, steps: list[list[str]], what: str) -> None:
    """Run `steps` ({dir} is `dest`) under a lock; mark `dest` installed when all succeed.
    A first install takes tens of seconds (npm, pip): each step is progress (activity.py)."""
    from proctor.activity import Activity

    dest.parent.mkdir(parents=True, exist_ok=True)
    with open(dest.parent / f".{dest.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if installed(dest):
            return  # another process finished it while we waited
        shutil.rmtree(dest, ignore_errors=True)  # what an interrupted install left
        try:
            with Activity(f"installing {what}", len(steps), quiet=not _SHOWN.get()) as shown:
                for step in steps:
                    argv = [a.replace("{dir}", str(dest)) for a in step]
                    shown.at(_step_name(argv, dest))
                    done = proc.run_sync(argv, timeout=INSTALL_STEP_TIMEOUT_S, limit=1 << 24)
                    shown.advance()
                    if done.exit_code != 0:
                        why = _reason(done.stderr.strip() or done.stdout.strip())
                        raise UsageError(f"installing {what} failed: {' '.join(argv[:3])} …: "
                                         f"{why or f'exit {done.exit_code}'}")
                shown.close(f"installed {what}")
            (dest / MARKER).write_text(what + "\n")
        except BaseException:
            shutil.rmtree(dest, ignore_errors=True)
            raise


def _step_name(argv: list[str], dest: Path) -> str:
    """`npm install @openai/codex@0.1.0`, `pip install mini-swe-agent==1.0`: the command's
    words without the cache's paths (long, and the same for every step)."""
    if "-c" in argv:
        return "proctor's exit hook (docs/agents.md)"
    words = [a for a in argv if str(dest) not in a and a != sys.executable
             and not a.startswith("-")]
    if words[:1] == ["venv"]:
        return "python -m venv"
    return " ".join(words)[:80] or argv[0]


_NPM_NOISE = re.compile(r"^npm error( (code|syscall|errno) \S+| A complete log of this run.*)?$")


def _reason(output: str) -> str:
    """The line of an installer's output that says why: npm's first error line that is
    not a code or its log's path (`404 Not Found - GET …`, `FetchError: … ECONNREFUSED`),
    else the last line (pip's `No matching distribution found for …`)."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    npm = [line for line in lines if line.startswith("npm error") and not _NPM_NOISE.match(line)]
    if npm:
        return npm[0].removeprefix("npm error").strip()
    return lines[-1] if lines else ""


def install_npm(name: str, package: str, version: str, binary: str) -> Path:
    """The path of `binary` from npm `package@version`, installed on first use."""
    dest = pinned_dir(name, version)
    if not installed(dest):
        if shutil.which("npm") is None:
            raise UsageError(f"installing {name} needs npm (and node): run ./setup.sh")
        _install(dest, [["npm", "install", "--prefix", "{dir}", "--no-audit", "--no-fund",
                         f"{package}@{version}"]], f"{package}@{version}")
    return dest / "node_modules" / ".bin" / binary


# A Python agent's interpreter, at exit, garbage-collects its whole heap once more before it
# goes: for mini-swe-agent (litellm's ~2,700 modules) a quarter of a trivial trial's CPU
# (bench/agent_startup.py). Everything alive at exit is moved out of the collector's reach
# instead, after every other exit handler (the first registered runs last); nothing else
# about the agent changes (docs/agents.md).
EXIT_HOOK = ("# proctor: no garbage collection of the whole heap at exit (docs/agents.md)\n"
             "import atexit, gc; atexit.register(gc.freeze)\n")
_WRITE_HOOK = ("import pathlib, site, sys; "
               "pathlib.Path(site.getsitepackages()[0], 'proctor_exit.pth').write_text(sys.argv[1])")


def install_pip(name: str, package: str, version: str, binary: str,
                extras: tuple[str, ...] = ()) -> Path:
    """The path of `binary` from PyPI `package==version` (and pinned `extras`), in its own
    venv (with proctor's exit hook, EXIT_HOOK)."""
    dest = pinned_dir(name, version)
    if not installed(dest):
        _install(dest, [[sys.executable, "-m", "venv", "{dir}"],
                        ["{dir}/bin/python", "-m", "pip", "install", "-q",
                         f"{package}=={version}", *extras],
                        ["{dir}/bin/python", "-c", _WRITE_HOOK, EXIT_HOOK]],
                 f"{package}=={version}")
    for site_dir in dest.glob("lib/python*/site-packages"):  # a cache from before the hook
        hook = site_dir / "proctor_exit.pth"
        if not hook.exists():
            hook.write_text(EXIT_HOOK)
    return dest / "bin" / binary
