"""The Sandbox contract: where a trial's commands run and its files live.

A backend is a room (`sandbox/NAME/`) with a `Backend` class (which makes a run's sandboxes)
and a class conforming to `Sandbox`, registered by name in `proctor.sandbox.BACKENDS`. What a
backend can do is data, its `Capabilities`, never its name: everything above this layer (the
engine, the trial, every check, every agent, the custom-check runner) uses only these methods
and reads only these capabilities, so a new backend edits nothing else (docs/internals.md
shows one).
`tests/sandbox/test_conformance.py` runs the same behaviour tests against every backend.

Paths are as the commands inside see them: relative paths are inside `workdir`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Protocol

from proctor.fieldwise import Fieldwise, FrozenFieldwise
from proctor.proc import ExecResult

if TYPE_CHECKING:
    from proctor.config import ProctorConfig

__all__ = ["Backend", "Capabilities", "Entry", "ExecResult", "Kind", "Resources", "Sandbox",
           "SandboxSpec", "Snapshot"]

Kind = Literal["file", "dir", "symlink", "other"]


@dataclass(frozen=True, eq=False, repr=False)
class Entry(FrozenFieldwise):
    """One workspace entry in a snapshot: what it is, and a digest of its content."""

    kind: Kind
    size: int
    digest: str  # content hash for files, target for symlinks, "" for directories


Snapshot = dict[str, Entry]  # path (as the sandbox sees it) -> entry


class UnreadableFile(OSError):
    """A regular file that is there but cannot be read (with the agent's rights)."""


@dataclass(eq=False, repr=False)
class Resources(Fieldwise):
    """The limits of a trial's sandbox: memory, CPUs, processes, time, disk."""
    memory_bytes: int | None = None  # address space / cgroup memory limit per trial
    cpus: float | None = None
    pids: int | None = None  # processes alive at once
    timeout_s: float | None = None  # the whole trial
    disk_bytes: int | None = None  # what the trial's files may take in all (sandbox/disk.py)


@dataclass(eq=False, repr=False)
class SandboxSpec(Fieldwise):
    """What a trial asks of its sandbox. Backends ignore what they cannot apply and say so in
    `docs/security.md`."""

    trial_id: str
    root: Path  # a host directory private to this trial, for the backend's own state
    env: dict[str, str]  # the agent's whole environment (an allowlist, built by the trial)
    workdir: str | None = None  # a fixed workdir (suite `workdir:`); else the backend's own
    output_limit: int = 1_000_000  # bytes kept per stream per command
    keep: bool = False  # leave the workspace on disk after close()
    resources: Resources = field(default_factory=Resources)
    hosts: dict[str, str] = field(default_factory=dict)  # service name -> address
    endpoints: list[tuple[str, int]] = field(default_factory=list)  # host TCP ports to reach
    egress: Literal["allow", "deny"] = "allow"
    egress_allow: list[str] = field(default_factory=list)  # hosts let through when deny
    readonly_paths: list[str] = field(default_factory=list)  # extra host paths to show (ro)
    image: str | None = None  # container backends: the image to run
    # Sees every byte any command prints, (fd, chunk), before any cut (secrets_in_logs).
    on_output: Callable[[int, bytes], None] | None = None
    isolation: Literal["auto", "namespaces", "none"] = "auto"
    # Container backends: the image is the whole environment (proctor.model.ImageEnv; a
    # Harbor task's); None: proctor's own places in the image.
    image_env: Any = None


@dataclass(frozen=True, eq=False, repr=False)
class Capabilities(FrozenFieldwise):
    """What a backend supports, declared once on its `Backend` class (what it can at best)
    and on each `Sandbox` (what this trial's has: a local trial run with `--isolation none`
    is not isolated, has no grader box). Read instead of probing for methods or names."""

    isolated: bool = False  # the boundary of docs/security.md holds
    traced: bool = True  # `exec(trace=True)` records every process (sandbox/trace.py)
    host_files: bool = False  # the writable places are host directories (`Sandbox.places`)
    grader_box: bool = False  # checks run apart from the agent, with their own uid
    serves_inside: bool = False  # `serve_inside` (the egress proxy inside the sandbox)
    per_trial_disk: bool = False  # the disk limit is a file system of the trial's own
    image_services: bool = False  # `image:` services (side containers) can run beside it
    image_environment: bool = False  # a task's image may be its whole environment (Harbor)
    installs_packages: bool = False  # acts on setup.packages / base / dockerfile (images)
    engine_images: bool = False  # runs images of the node's Docker engine (Ray ships them)
    needs_root: bool = False  # proctor must run as root to use it
    # Outside its places it shows this machine's system directories as they are, read-only
    # (/usr, /etc, /opt, /bin and /lib: sandbox/namespaces.py), so what is there is known
    # without asking a sandbox (clipath.on_system_path).
    host_system: bool = False


class Backend(Protocol):
    """What `--backend NAME` names: one instance per run (or per Ray node), shared by its
    trials. `preflight` raises a SetupError/UsageError (exit 2) naming what is missing
    before any trial runs, and says whether trials will be isolated; `prepare` makes the
    tasks ready (images built or pulled) before any trial runs."""

    capabilities: ClassVar[Capabilities]

    @classmethod
    def for_run(cls, scratch: Path, concurrency: int) -> Backend: ...

    def preflight(self, isolation: str = "auto") -> bool: ...

    def prepare(self, tasks: Sequence[Any], *, quiet: bool = False,
                config: ProctorConfig | None = None) -> None: ...

    async def create(self, spec: SandboxSpec) -> Sandbox: ...

    async def close(self) -> None: ...


class Sandbox(Protocol):
    """A workspace plus a way to run shell commands in it.

    `exec` runs `sh -c command` with the sandbox's environment (plus `env`); at `timeout`
    everything it started is killed; output past the limit is counted and dropped. With
    `trace=True` every program started underneath is recorded in `trace` (argv, process
    tree, exit status; sandbox/trace.py; its argv also in `execs`), from outside the
    sandbox; with `capture` (bytes per process) also what each process wrote to its stdout
    and stderr.
    """

    workdir: str  # the workspace, as commands inside see it
    env: dict[str, str]  # may be extended before the first exec
    isolated: bool  # whether the boundary of docs/security.md holds
    capabilities: Capabilities  # this sandbox's (isolated is capabilities.isolated)
    # (inside prefix, host directory) of each writable place when capabilities.host_files
    places: list[tuple[str, Path]]
    image_user: str | None  # the image's user, when the image is the environment

    async def exec(self, command: str, *, timeout: float, env: dict[str, str] | None = None,
                   cwd: str | None = None, stdin: bytes | None = None,
                   trace: bool = False, capture: int | None = None,
                   user: str | None = None) -> ExecResult:
        """`command` with /bin/sh -c. `trace`: every process it starts recorded from outside
        (`execs`, `exec_parents`); `capture` (bytes per process): with the trace, what they
        write to fd 1 and 2 (exectrace -w). `user`: one of the image's users, by name, when
        the image is the environment (capabilities.image_environment); else ignored."""

    async def read_file(self, path: str, limit: int | None = None) -> bytes:
        """At most `limit` bytes (+1, so callers can tell it was cut). Raises
        FileNotFoundError, IsADirectoryError or PermissionError like `open`."""

    async def write_file(self, path: str, data: bytes) -> None: ...

    async def stat(self, path: str) -> Entry | None:
        """What `path` is (following symlinks inside the sandbox), or None if absent; `digest`
        is empty here. Raises OSError when it cannot be told (a directory on the way the agent
        cannot search): that is not "absent"."""

    async def read_if_file(self, path: str, limit: int | None = None) -> tuple[Entry, bytes | None] | None:
        """`stat` and, for a regular file, `read_file` in one step (one request to a box):
        None if absent, else what `path` is and, if a file, at most `limit` (+1) bytes of
        it. Raises OSError when it cannot be told, like `stat`, and UnreadableFile when it
        is a file that cannot be read."""

    async def list_dir(self, path: str) -> list[str]:
        """Names in a directory, sorted; directories end with `/`."""

    async def copy_in(self, src: Path, dest: str = ".") -> None:
        """Copy a host file or directory tree into the sandbox at `dest`."""

    async def export(self) -> Path:
        """A host directory holding the workspace as it is now (for `runs_in: host`
        checks). Local backends return the workspace itself; others copy it out."""

    async def snapshot(self, deadline: float | None = None) -> Snapshot:
        """Every entry in every place the agent can write, by content. Raises
        `sandbox.files.FilesLimit` (naming it) when not everything can be read by `deadline`
        (`time.monotonic()`; None: the backend's default)."""

    async def grade(self, argv: Sequence[str], *, timeout: float,
                    env: dict[str, str] | None = None, cwd: str | None = None,
                    stdin: bytes | None = None, files: dict[str, bytes | Path] | None = None,
                    readonly: Sequence[str] = (), host: bool = False) -> ExecResult:
        """Run a check's program (after the agent) where it cannot change what the agent or
        a later check sees, nor act with proctor's privileges: the trial's files read-only,
        its own HOME and /tmp, its own uid, the trial's services only (docs/security.md,
        "The grader"). `files` are put read-only at `grader_path(name)`; `readonly` host
        paths are shown read-only at their own path; `env` adds to the trial's; `host`: the
        host's tools rather than the sandbox's (a container backend's `runs_in: host`)."""

    def grader_path(self, name: str) -> str:
        """Where a file given to `grade` is, as the check's program sees it."""

    async def stream_files(self, paths: list[str], sink: Callable[[str, int, bytes], None],
                           deadline: float | None = None) -> None:
        """Every byte of each regular file named by a snapshot path, holes skipped, no size
        cap, as `sink(path, offset, chunk)` (from a worker thread: no event loop work in
        `sink`), then `sink(path, -1, b"")`. Raises FilesLimit past `deadline`."""

    async def expose(self, host: str, port: int) -> tuple[str, int]:
        """Make a TCP endpoint of proctor's (e.g. a model proxy) reachable from inside;
        returns the address to use from inside."""

    async def serve_inside(self, host: str, port: int,
                           handler: Callable[..., Any]) -> None:
        """Serve `handler` at host:port inside the sandbox (capabilities.serves_inside: the
        egress proxy); RuntimeError where it cannot."""

    async def kill_processes(self) -> int:
        """Kill every process still running in the sandbox (the agent's daemons); the
        sandbox stays usable. Returns how many were killed."""

    async def keep_processes(self) -> int:
        """What runs now (a Harbor task's agent's servers) keeps running through grading,
        spared by later `kill_processes`, unable to reach grading (SPEC §4). RuntimeError
        where the backend cannot keep that promise. Returns how many were kept."""

    def fault(self) -> str | None:
        """Why the trial cannot be judged, if something beyond the agent's commands went
        wrong: a resource limit hit (out of memory, too many processes) or a recording
        lost. The trial becomes `error` with this text."""

    async def close(self) -> None:
        """Kill everything still running in the sandbox and remove it (unless kept)."""
