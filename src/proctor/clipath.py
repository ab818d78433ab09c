"""A suite's `cli` where the agent runs: found before any trial, or a clear stop.

The sandbox has its own PATH (the system directories; an image's own with --backend docker),
so a CLI installed in `~/.local/bin` on this machine is not there, and every trial would fail
with `sh: 1: NAME: not found` in place of the help text. `check_clis` looks inside a sandbox
built like a trial's, once per distinct CLI, before the first trial, and runs
`version_command` there too (what the agent will use, not what this machine has). Where
the answer is sure without one (`on_system_path`: a program in the system directories every
local box shows as they are), no sandbox is built.

`host_path` in proctor.toml lists host directories every sandbox shows read-only at the same
path, first on its PATH (docs/running.md#the-cli-under-test).
"""

from __future__ import annotations

import asyncio
import functools
import os
import shlex
import shutil
import signal
import tempfile
from pathlib import Path
from typing import Any

from proctor.errors import UsageError
from proctor.model import RunOptions, TaskDef

VERSION_TIMEOUT_S = 10.0
PROBE_TIMEOUT_S = 20.0
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
SYSTEM_PREFIXES = ("/", "/usr", "/usr/local")  # every sandbox shows these already


def host_path(options: RunOptions) -> list[str]:
    """proctor.toml's `host_path`, as absolute directories that exist."""
    out = []
    for entry in options.config.host_path:
        path = os.path.abspath(os.path.expanduser(str(entry)))
        if os.path.isdir(path) and path not in out:
            out.append(path)
    return out


def shown_paths(dirs: list[str], cli: str | None) -> list[str]:
    """What the sandbox must show for `dirs`: the directories, and for a CLI there that is a
    script whose interpreter lives outside /usr (a pipx or venv install), that installation."""
    paths = list(dirs)
    name = _program(cli) if dirs else None  # no host_path (the usual case): nothing to parse
    if name is None:
        return paths
    for d in dirs:
        script = Path(d) / name
        interpreter = _interpreter(script)
        if not interpreter or Path(interpreter).parent.name != "bin":
            continue
        prefix = str(Path(interpreter).parent.parent)
        if prefix not in SYSTEM_PREFIXES and prefix not in paths:
            paths.append(prefix)
    return paths


def with_path(env: dict[str, str], dirs: list[str], base: str = SYSTEM_PATH) -> dict[str, str]:
    """`env` with `dirs` first on its PATH (the sandbox's own PATH after them)."""
    if not dirs:
        return env
    return {**env, "PATH": ":".join([*dirs, env.get("PATH") or base])}


def check_clis(tasks: list[TaskDef], options: RunOptions, env: dict[str, str]) -> dict[str, str]:
    """Each suite's CLI is found in a sandbox like its trials' (UsageError, exit 2, naming
    where proctor looked and how to make it available, if not); returns run.json's
    versions: {"cli NAME": first line of version_command's output, run in that sandbox}."""
    todo: dict[tuple[Any, ...], TaskDef] = {}
    looked: dict[tuple[str, str], bool] = {}  # a suite's tasks share their CLI: one look each
    dirs = host_path(options)
    for task in tasks:
        if task.cli and not _found_without_a_sandbox(task, options, env, looked, dirs):
            todo.setdefault((task.cli, task.version_command, task.base_image, task.source), task)
    if not todo:
        return {}
    return asyncio.run(_interruptible(_check_all(list(todo.values()), options, env)))


async def _interruptible(work: Any) -> Any:
    """SIGTERM ends the probe as Ctrl-C does: its sandbox is removed, the run exits 130."""
    loop, task = asyncio.get_running_loop(), asyncio.current_task()
    assert task is not None
    loop.add_signal_handler(signal.SIGTERM, task.cancel)
    try:
        return await work
    except asyncio.CancelledError:
        raise KeyboardInterrupt from None
    finally:
        loop.remove_signal_handler(signal.SIGTERM)


async def _check_all(tasks: list[TaskDef], options: RunOptions,
                     env: dict[str, str]) -> dict[str, str]:
    from proctor.sandbox import BACKENDS, close_backend

    versions: dict[str, str] = {}
    scratch = Path(tempfile.mkdtemp(prefix="proctor-cli-"))
    backend = BACKENDS.get(options.backend)()
    try:
        for i, task in enumerate(tasks):
            sandbox = await backend.create(_spec(task, options, env, scratch / f"probe-{i}"))
            try:
                found = await _find(sandbox, task)
                if task.version_command and found:
                    versions[f"cli {task.cli}"] = await _version(sandbox, task)
            finally:
                await sandbox.close()
    finally:
        await close_backend(backend)
        shutil.rmtree(scratch, ignore_errors=True)
    return versions


def _found_without_a_sandbox(task: TaskDef, options: RunOptions, env: dict[str, str],
                             looked: dict[tuple[str, str], bool],
                             dirs: list[str] | None = None) -> bool:
    """The CLI is found without building a sandbox, where that answer is the sandbox's own
    (`on_system_path`). Only that sure case (a trivial suite's `cli: sh`); a version to run,
    an image or a backend whose sandboxes are not this machine is asked of a sandbox.
    `looked`: the answers so far, by (program, PATH): a suite of 1,000 tasks with one CLI
    walks PATH once, not 1,000 times (~0.1 s of a run's start)."""
    from proctor.sandbox import capabilities

    name = _program(task.cli)
    if not capabilities(options.backend).host_system or task.version_command \
            or task.base_image or not name:
        return False
    key = (name, _path(task, env, host_path(options) if dirs is None else dirs))
    if key not in looked:
        looked[key] = on_system_path(*key)
    return looked[key]


def on_system_path(name: str, path: str) -> bool:
    """True only when `command -v NAME` with this PATH is sure to find a program in any
    local box: a directory on it holds NAME as a program that any uid may run, in the
    host's system directories, which every box shows as they are (namespaces.shown_program).
    False says nothing (a name with a slash, a builtin, host_path, not there): ask a box."""
    if "/" in name:
        return False
    from proctor.sandbox.namespaces import shown_program
    from proctor.sandbox.placefiles import INSIDE_WORKDIR
    from proctor.sandbox.pool import INSIDE_HOME

    covered = (INSIDE_WORKDIR, INSIDE_HOME, "/tmp", "/dev/shm")  # the places, empty then
    return any(d.startswith("/") and shown_program(os.path.join(d, name), covered)
               for d in path.split(":"))


def _path(task: TaskDef, env: dict[str, str], dirs: list[str]) -> str:
    """`_env`'s PATH, without making the rest of it (once per task of a suite)."""
    own = task.env.get("PATH")
    path = own if own is not None and "{{" not in own else env.get("PATH")
    if dirs:
        return ":".join([*dirs, path or SYSTEM_PATH])
    return SYSTEM_PATH if path is None else path


def _env(task: TaskDef, options: RunOptions, env: dict[str, str]) -> dict[str, str]:
    """The probe's environment, as a trial's: host_path first on PATH."""
    static = {k: v for k, v in task.env.items() if "{{" not in v}  # {{workdir}} is per trial
    return with_path({**env, **static}, host_path(options))


def _spec(task: TaskDef, options: RunOptions, env: dict[str, str], root: Path) -> Any:
    from proctor.sandbox.base import SandboxSpec

    return SandboxSpec(trial_id=root.name, root=root, env=_env(task, options, env),
                       readonly_paths=shown_paths(host_path(options), task.cli),
                       image=task.base_image, isolation=options.isolation)


async def _find(sandbox: Any, task: TaskDef) -> bool:
    """True if found; False if not but the task's setup may install it; UsageError else."""
    name = _program(task.cli)
    if not name:
        return False
    res = await sandbox.exec(f"command -v {shlex.quote(name)}", timeout=PROBE_TIMEOUT_S)
    if res.exit_code == 0 and res.stdout.strip():
        return True
    if task.setup or task.scaffold or task.dockerfile:
        return False  # setup may install it; the trial's help text will say if it did not
    where = sandbox.env.get("PATH", SYSTEM_PATH)
    raise UsageError(f"cli {task.cli!r} (task {task.id}, {task.source}): `{name}` is not "
                     f"found inside the sandbox (looked in PATH={where}). {_fix(name)}")


def _fix(name: str) -> str:
    here = shutil.which(name)
    if here:
        d = os.path.dirname(here)
        return (f"On this machine it is {here}, which the sandbox does not show: add "
                f"`host_path = [\"{d}\"]` to proctor.toml (shown read-only in every sandbox, "
                "first on its PATH; docs/running.md#the-cli-under-test)")
    return ("It is not on this machine's PATH either: install it where the sandbox sees it "
            "(/usr/local/bin, or a directory listed in proctor.toml's `host_path`), or into "
            "the image with --backend docker")


async def _version(sandbox: Any, task: TaskDef) -> str:
    assert task.version_command is not None
    res = await sandbox.exec(task.version_command, timeout=VERSION_TIMEOUT_S)
    first = (res.stdout.strip() or res.stderr.strip()).splitlines()[:1]
    text = first[0][:200] if first else ""
    if res.exit_code != 0:
        why = "timed out" if res.timed_out else f"exit {res.exit_code}"
        text = f"`{task.version_command}` failed ({why}): {text}"
    return text


@functools.lru_cache(maxsize=256)  # a suite's tasks share their CLI: split once
def _program(cli: str | None) -> str | None:
    try:
        words = shlex.split(cli or "")
    except ValueError:
        return None
    return words[0] if words else None


def _interpreter(script: Path) -> str | None:
    """The absolute interpreter of a `#!` script, if it is one."""
    try:
        with open(script, "rb") as f:
            head = f.read(256)
    except OSError:
        return None
    if not head.startswith(b"#!"):
        return None
    words = head[2:].split(b"\n", 1)[0].decode(errors="replace").split()
    if not words or not words[0].startswith("/") or os.path.basename(words[0]) == "env":
        return None
    return words[0]  # as written: a venv's python links to /usr, but its packages are here
