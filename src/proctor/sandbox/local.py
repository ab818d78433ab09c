"""The local backend: a private directory per trial on this machine, commands via `sh -c`.

Each command runs in its own process group (so a timeout or close() kills everything it
started), with output capped so a 100 MB flood costs the harness at most the cap. It is an
isolation of files and environment, not a security boundary.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import time
from pathlib import Path

from proctor.sandbox.base import ExecResult
from proctor.sandbox.trace import parse_execs, strace_argv

# Host variables that usually hold credentials; the agent gets them only if a spec passes them.
_PRIVATE_SUFFIXES = ("_API_KEY", "_TOKEN", "_SECRET", "_PASSWORD")
# After the command exits, how long to wait for background children that still hold its pipes.
_PIPE_GRACE_S = 0.2


def host_env() -> dict[str, str]:
    """The part of proctor's own environment a sandbox inherits."""
    return {k: v for k, v in os.environ.items() if not k.upper().endswith(_PRIVATE_SUFFIXES)}


class LocalSandbox:
    """`root/work` is the workdir (or a fixed `workdir`), `root/home` is $HOME, `root/tmp` $TMPDIR."""

    def __init__(self, root: Path, env: dict[str, str], *, workdir: Path | None = None,
                 output_limit: int = 1_000_000, keep: bool = False,
                 limits: dict[str, int] | None = None, base_env: dict[str, str] | None = None,
                 hosts_file: Path | None = None):
        self.root = root
        self.workdir = workdir or root / "work"
        self.output_limit = output_limit
        self.keep = keep
        self.limits = limits or {}
        self._groups: set[int] = set()
        self._fixed_workdir = workdir is not None
        self.hosts_file = hosts_file  # service names as host names (services/hosts.py)
        for d in (self.workdir, root / "home", root / "tmp"):
            d.mkdir(parents=True, exist_ok=True)
        self.env = {**(host_env() if base_env is None else base_env), "HOME": str(root / "home"), "TMPDIR": str(root / "tmp"),
                    "PWD": str(self.workdir), "PROCTOR_WORKDIR": str(self.workdir), **env}

    async def exec(self, command: str, *, timeout: float, env: dict[str, str] | None = None,
                   cwd: str | None = None, stdin: bytes | None = None,
                   trace: bool = False) -> ExecResult:
        argv = ["sh", "-c", command]
        trace_file = None
        if trace:
            trace_file = self.root / "tmp" / f".proctor-strace-{time.monotonic_ns()}"
            argv = strace_argv(trace_file) + argv
        if self.hosts_file is not None:
            from proctor.services.hosts import wrap

            argv = wrap(argv, self.hosts_file)  # outside strace: the namespace isn't the agent's
        started = time.time()
        t0 = time.monotonic()
        loop = asyncio.get_running_loop()
        spawn = asyncio.ensure_future(loop.subprocess_exec(
            lambda: _Capture(loop, self.output_limit),
            *argv,
            cwd=cwd or self.workdir,
            env={**self.env, **env} if env else self.env,
            stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
            preexec_fn=self._apply_limits if self.limits else None,
        ))
        try:
            transport, proto = await asyncio.shield(spawn)
        except asyncio.CancelledError:
            # Cancelled mid-spawn (Ctrl-C): the process may exist already; kill its group.
            with contextlib.suppress(Exception):
                transport, _ = await spawn
                _kill_group(transport.get_pid())
                transport.close()
            raise
        except OSError as e:  # e.g. cwd vanished, or sh missing
            return ExecResult(None, "", f"proctor: could not start command: {e}",
                              time.monotonic() - t0, started)
        pid = transport.get_pid()
        self._groups.add(pid)
        if stdin is not None:
            pipe = transport.get_pipe_transport(0)
            pipe.write(stdin)
            pipe.write_eof()
        timed_out = False
        try:
            try:
                await asyncio.wait_for(asyncio.shield(proto.exited), timeout)
            except TimeoutError:
                timed_out = True
                _kill_group(pid)
                await proto.exited
            # Background children may hold the pipes open; wait for them only a moment.
            if not proto.closed.done():
                await asyncio.wait([proto.closed], timeout=_PIPE_GRACE_S)
        finally:
            if transport.get_returncode() is None:  # cancelled (Ctrl-C): leave nothing behind
                _kill_group(pid)
            transport.close()
        execs = None
        if trace_file is not None:
            execs = parse_execs(trace_file)
            trace_file.unlink(missing_ok=True)
        note = f"\nproctor: timed out after {timeout:g}s" if timed_out else ""
        return ExecResult(
            exit_code=None if timed_out else transport.get_returncode(),
            stdout=proto.text(1),
            stderr=proto.text(2) + note,
            duration_s=time.monotonic() - t0,
            started_at=started,
            timed_out=timed_out,
            truncated=proto.dropped[1] > 0 or proto.dropped[2] > 0,
            execs=execs,
        )

    def _apply_limits(self) -> None:  # runs in the child, between fork and exec
        import resource

        if mem := self.limits.get("memory"):
            resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
        if cpu := self.limits.get("cpu_seconds"):
            resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))

    def resolve(self, path: str) -> Path:
        p = Path(path)
        return p if p.is_absolute() else self.workdir / p

    async def read_file(self, path: str) -> bytes:
        return self.resolve(path).read_bytes()

    async def write_file(self, path: str, data: bytes) -> None:
        p = self.resolve(path)
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)

    async def close(self) -> None:
        for pgid in self._groups:
            _kill_group(pgid)
        self._groups.clear()
        if not self.keep:
            shutil.rmtree(self.root, ignore_errors=True)
            if self._fixed_workdir:
                shutil.rmtree(self.workdir, ignore_errors=True)


class _Capture(asyncio.SubprocessProtocol):
    """Collects stdout/stderr (the first `limit` bytes of each; the rest is counted and
    dropped) and says when the process exited, separately from when its pipes closed."""

    def __init__(self, loop: asyncio.AbstractEventLoop, limit: int):
        self.limit = limit
        self.chunks: dict[int, list[bytes]] = {1: [], 2: []}
        self.kept = {1: 0, 2: 0}
        self.dropped = {1: 0, 2: 0}
        self.exited = loop.create_future()
        self.closed = loop.create_future()
        self._open = 2

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        room = self.limit - self.kept[fd]
        if room >= len(data):
            self.chunks[fd].append(data)
            self.kept[fd] += len(data)
        else:
            if room > 0:
                self.chunks[fd].append(data[:room])
                self.kept[fd] = self.limit
            self.dropped[fd] += len(data) - max(room, 0)

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        if fd in (1, 2):
            self._open -= 1
            if self._open == 0 and not self.closed.done():
                self.closed.set_result(None)

    def process_exited(self) -> None:
        if not self.exited.done():
            self.exited.set_result(None)

    def text(self, fd: int) -> str:
        s = b"".join(self.chunks[fd]).decode("utf-8", errors="replace")
        if self.dropped[fd]:
            s += f"\n[proctor: {self.dropped[fd]} more bytes not kept]"
        return s


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def use_fast_child_watcher() -> None:
    """Python 3.11's default child watcher starts a thread per process; pidfd is far cheaper."""
    import sys
    import warnings

    if sys.version_info >= (3, 12) or not hasattr(asyncio, "PidfdChildWatcher"):
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            watcher = asyncio.PidfdChildWatcher()
            asyncio.set_child_watcher(watcher)
            watcher.attach_loop(asyncio.get_running_loop())
        except (OSError, RuntimeError, NotImplementedError):
            pass
