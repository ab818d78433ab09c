"""What PostgreSQL and MariaDB services share: one server per run (shared by every service of
that kind in the run), templates built once per seed, a database per trial, restart after a
crash, teardown always.

Every blocking step (spawning, waiting for readiness, admin SQL) runs on the server's own
thread, so the event loop never waits and the admin connection is used by one thread only.
That thread also started the server process, so if it ever dies the server gets SIGKILL
(setpriv --pdeathsig).

Speed: the server thread keeps a few trial databases cloned ahead of demand (`POOL_SIZE` per
template), so `provision()` usually just takes one; dropping a released database happens in
the background. Reading a trial's write counts uses its own connection, off that thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import itertools
import os
import secrets
import signal
import tempfile
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from proctor import proc
from proctor.errors import ServiceError, SetupError
from proctor.model import ServiceDef
from proctor.proc import RUN_ID_VAR
from proctor.services import _net, _proc
from proctor.services.base import DbWrite, ServiceContext, ServiceHandle
from proctor.services.seed import Seed, load_seed

T = TypeVar("T")
SOCKET_PATH_MAX = 100  # sun_path is 108 bytes; leave room for ".s.PGSQL.NNNNN"
POOL_SIZE = 2  # trial databases kept cloned ahead, per template
SHM = Path("/dev/shm")
DIR_VAR = "PROCTOR_DB_DIR"  # where server data directories go (default: /dev/shm if roomy)


@dataclass
class TrialDb:
    """One trial's database on a server."""

    name: str  # database name == user name
    password: str
    generation: int  # server generation it lives in: gone if the server restarted
    extra: dict[str, Any] = field(default_factory=dict)


class DbServer(ABC):
    """A database server for one run. Subclasses implement the abstract methods below; all
    but `writes` are only ever called on the server thread. Methods ending in `_sync` are
    what the async side runs there."""

    kind: ClassVar[str]
    package: ClassVar[str]  # Debian package that provides the server
    run_as_user: ClassVar[str]  # preferred account when proctor runs as root
    usual_port: ClassVar[int]

    def __init__(self, ctx: ServiceContext):
        self.ctx = ctx
        self._thread = ThreadPoolExecutor(1, thread_name_prefix=f"proctor-{self.kind}")
        self.proc: Any = None  # subprocess.Popen of the server
        self.base: Path | None = None  # this server's private directory
        self.host = ""
        self.port = 0
        self.generation = 0
        self.users = 0  # services sharing this server
        self._templates: dict[str, str] = {}  # seed key -> template database
        self._failed: str | None = None  # death already reported; restart at next provision
        self._counter = itertools.count(1)
        self._stopped = False
        self._pool: dict[str, deque[TrialDb]] = {}  # template -> databases cloned ahead
        self.in_memory = False  # data directory on a tmpfs

    # -- plumbing ---------------------------------------------------------------------------

    async def call(self, fn: Callable[..., T], *args: Any) -> T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._thread, functools.partial(fn, *args))

    def new_base_dir(self) -> Path:
        """A fresh private directory the server user owns, in memory (/dev/shm) when there
        is room: the data is thrown away, and cloning a database there is ~10x faster than on
        a disk. Else under the run's tmp dir (if the server user can reach it and socket paths
        stay short), else under the system tmp."""
        run_as = _proc.server_user(self.run_as_user)
        parent = self.ctx.tmp_dir
        chosen = os.environ.get(DIR_VAR)
        if chosen:
            parent = Path(chosen)
            if not _proc.reachable_by(parent, run_as):
                raise SetupError(f"{DIR_VAR}={chosen}: the {self.kind} server's user "
                                 f"({run_as.name if run_as else '?'}) cannot reach it")
        elif _proc.roomy_tmpfs(SHM) and _proc.reachable_by(SHM, run_as):
            parent = SHM
        elif not (_proc.reachable_by(parent, run_as) and len(str(parent)) < SOCKET_PATH_MAX - 40):
            parent = Path(tempfile.gettempdir())
        parent.mkdir(parents=True, exist_ok=True)
        _proc.sweep_stale(parent)
        # Named after the run, so `proctor run --resume` can sweep what a killed run left.
        base = Path(tempfile.mkdtemp(prefix=f"proctor-{self.ctx.run_id}-{self.kind}-", dir=parent))
        _proc.track_dir(base)
        if run_as is not None:
            os.chown(base, run_as.uid, run_as.gid)
        self.in_memory = _proc.is_tmpfs(parent)
        return base

    def env(self) -> dict[str, str]:
        """The environment of server processes: minimal, plus the run id the janitor looks
        for in leftover processes."""
        return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C", "LANG": "C",
                "TZ": "UTC", RUN_ID_VAR: self.ctx.run_id}

    def log_tail(self, lines: int = 5) -> str:
        if self.base is None:
            return ""
        try:
            text = (self.base / "server.log").read_text(errors="replace")
        except OSError:
            return ""
        keep = [ln for ln in text.splitlines() if ln.strip()][-lines:]
        return " | ".join(keep)

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def death_cause(self) -> str:
        code = self.proc.poll() if self.proc is not None else None
        if code is None:
            how = "stopped answering"
        elif code < 0:
            how = f"was killed by {signal.Signals(-code).name}"
        else:
            how = f"exited with status {code}"
        tail = self.log_tail()
        return f"the {self.kind} server {how}" + (f"; its log ends: {tail}" if tail else "")

    # -- lifecycle (server thread) ----------------------------------------------------------

    def start_sync(self) -> None:
        if self.alive():
            return
        self._boot_fresh()

    def _boot_fresh(self) -> None:
        self._teardown()
        self.base = self.new_base_dir()
        self.generation += 1
        self._templates.clear()
        self._pool.clear()
        self.boot()

    def stop_sync(self) -> None:
        self._stopped = True
        self._teardown()

    def _teardown(self) -> None:
        self.close_admin()
        if self.proc is not None:
            self.shutdown()
            self.proc = None
        if self.base is not None:
            _proc.remove_dir(self.base)
            self.base = None

    def provision_sync(self, seed: Seed | None) -> TrialDb:
        if self._stopped:
            raise ServiceError(f"the {self.kind} server was stopped")
        if self._failed is not None or self.proc is None:
            self._failed = None
            try:
                self._boot_fresh()  # a restarted server and, below, fresh templates
            except (SetupError, ServiceError, OSError) as e:
                self._failed = str(e)
                raise ServiceError(f"could not restart the {self.kind} server: {e}") from e
        if not self.alive():
            self._failed = self.death_cause()
            raise ServiceError(self._failed)
        try:
            template = self.template_sync(seed)
            return self.take(template) or self.new_db(template)
        except SetupError as e:  # a seed that loaded before cannot fail now, but be safe
            raise ServiceError(str(e)) from e
        except Exception as e:
            if self.is_connection_error(e) or not self.alive():
                self.wait_dead(0.5)
                if not self.alive():
                    self._failed = self.death_cause()
                    raise ServiceError(self._failed) from e
                # The server is up; the admin connection reconnects on next use.
                raise ServiceError(
                    f"lost the admin connection to the {self.kind} server: {e}") from e
            raise ServiceError(f"could not create the trial database: {e}") from e

    def wait_dead(self, timeout: float) -> bool:
        """Did the server exit within `timeout`? (A failing statement right after a crash
        races the process exit.)"""
        if self.proc is None:
            return True
        try:
            self.proc.wait(timeout)
        except Exception:
            return False
        return True

    def template_sync(self, seed: Seed | None) -> str:
        key = seed.key if seed else "empty"
        if key not in self._templates:
            self._templates[key] = self.build_template(seed, f"proctor_tpl_{key}")
        return self._templates[key]

    def new_db(self, template: str) -> TrialDb:
        db = TrialDb(f"trial_{next(self._counter)}", secrets.token_hex(12), self.generation)
        self.clone(template, db)
        return db

    def prefill(self, template: str) -> None:
        """Start cloning databases ahead from `template`, on the server thread."""
        self.submit(self._refill, template)

    def ready_db(self, seed: Seed | None) -> TrialDb | None:
        """A database cloned ahead for this seed, if one is ready (any thread)."""
        return self.take(self._templates.get(seed.key if seed else "empty"))

    def close_thread(self) -> None:
        self._thread.shutdown(wait=False)

    def take(self, template: str | None) -> TrialDb | None:
        """A database cloned ahead, if one is ready (any thread); a refill is queued."""
        if template is None or self._failed is not None or self._stopped or not self.alive():
            return None
        queue = self._pool.get(template)
        while queue:
            try:
                db = queue.popleft()
            except IndexError:
                break
            if db.generation == self.generation:
                self.submit(self._refill, template)
                return db
        return None

    def submit(self, fn: Callable[..., Any], *args: Any) -> None:
        """Run on the server thread, without waiting for it."""
        with contextlib.suppress(RuntimeError):  # stopped: nothing left to do
            self._thread.submit(fn, *args)

    def _refill(self, template: str) -> None:
        queue = self._pool.setdefault(template, deque())
        try:
            while (len(queue) < POOL_SIZE and not self._stopped and self._failed is None
                   and self.alive() and template in self._templates.values()):
                queue.append(self.new_db(template))
        except Exception:
            pass  # the next provision() meets the same problem and reports it

    def release_sync(self, db: TrialDb) -> None:
        if db.generation != self.generation or not self.alive():
            return  # the server restarted or died: the database went with it
        try:
            self.drop(db)
        except Exception as e:
            if self.is_connection_error(e):
                return
            raise

    def writes_sync(self, db: TrialDb) -> list[DbWrite]:
        """Any thread: `writes` uses a connection of its own."""
        if db.generation != self.generation or not self.alive():
            return []
        return self.writes(db)

    def launch(self, spawn: Callable[[], Any], what: str, bind_errors: tuple[str, ...],
               timeout: float) -> None:
        """Start the server (`spawn()` on self.host/self.port) and wait until it is ready.
        Another run may take the address between our check and the bind, so a bind error
        is retried on a fresh address."""
        for _attempt in range(5):
            self.host, self.port = _net.endpoint(self.usual_port)
            self.proc = spawn()
            if self.wait_ready(timeout):
                return
            log = self.log_tail(10)
            proc.stop(self.proc, grace=0)
            self.proc = None
            if not any(marker in log for marker in bind_errors):
                raise SetupError(f"{what} did not start: {log or 'no log output'}")
        raise SetupError(f"{what} could not bind a loopback port after 5 attempts")

    # -- what each server kind implements (server thread) -----------------------------------

    @abstractmethod
    def wait_ready(self, timeout: float) -> bool:
        """True once the server accepts connections; False if it died or timed out."""

    @abstractmethod
    def boot(self) -> None:
        """Initialise a data directory in self.base, start the server (self.proc, self.host,
        self.port) and open the admin connection. SetupError for missing binaries."""

    @abstractmethod
    def shutdown(self) -> None:
        """Stop self.proc fast and reap it."""

    @abstractmethod
    def close_admin(self) -> None: ...

    @abstractmethod
    def build_template(self, seed: Seed | None, name: str) -> str:
        """Create database `name` from the seed; SetupError naming file and line on an SQL
        error. Returns the template's name."""

    @abstractmethod
    def clone(self, template: str, db: TrialDb) -> None: ...

    @abstractmethod
    def drop(self, db: TrialDb) -> None: ...

    @abstractmethod
    def writes(self, db: TrialDb) -> list[DbWrite]:
        """Per-table write counts; called on any thread, so it opens its own connection."""

    @abstractmethod
    def is_connection_error(self, exc: BaseException) -> bool: ...

    @abstractmethod
    def handle(self, service: str, db: TrialDb) -> DbHandle: ...


# -- one server per (kind, run) ----------------------------------------------------------------

_SERVERS: dict[tuple[str, str], DbServer] = {}


def acquire(cls: type[DbServer], ctx: ServiceContext) -> DbServer:
    key = (cls.kind, ctx.run_id)
    server = _SERVERS.get(key)
    if server is None:
        server = _SERVERS[key] = cls(ctx)
    server.users += 1
    return server


async def release(server: DbServer) -> None:
    server.users -= 1
    if server.users > 0:
        return
    for k, v in list(_SERVERS.items()):
        if v is server:
            del _SERVERS[k]
    try:
        await server.call(server.stop_sync)
    finally:
        server.close_thread()


# -- the per-trial handle and the Service -------------------------------------------------------


@dataclass
class DbHandle(ServiceHandle):
    """A trial's database: its server and its own database on it."""
    server: DbServer | None = field(default=None, repr=False)
    db: TrialDb | None = field(default=None, repr=False)
    _released: bool = field(default=False, repr=False)

    async def db_writes(self) -> list[DbWrite]:
        if self.server is None or self.db is None or self._released:
            return []
        try:
            return await asyncio.to_thread(self.server.writes_sync, self.db)
        except Exception as e:
            raise ServiceError(f"service {self.name!r}: could not read database writes: {e}") from e

    async def release(self) -> None:
        if self._released or self.server is None or self.db is None:
            return
        self._released = True
        self.server.submit(self.server.release_sync, self.db)  # the trial need not wait


class DbService:
    """A postgres or mysql service: a template from its seed on the run's shared server."""

    server_cls: ClassVar[type[DbServer]]

    def __init__(self, defn: ServiceDef, ctx: ServiceContext):
        self.name = defn.name
        self.defn = defn
        self.ctx = ctx
        self.seed: Seed | None = None
        self.server: DbServer | None = None

    async def start(self) -> None:
        self.seed = load_seed(self.name, self.defn.config, self.ctx.base_dir)
        self.server = acquire(self.server_cls, self.ctx)
        try:
            await self.server.call(self.server.start_sync)
            template = await self.server.call(self.server.template_sync, self.seed)
            self.server.prefill(template)
        except SetupError as e:
            await self.stop()
            raise SetupError(f"service {self.name!r}: {e}") from None
        except BaseException:
            await self.stop()
            raise

    async def provision(self, trial_id: str) -> ServiceHandle:
        if self.server is None:
            raise ServiceError(f"service {self.name!r} was not started")
        db = self.server.ready_db(self.seed)
        if db is not None:
            return self.server.handle(self.name, db)
        try:
            db = await self.server.call(self.server.provision_sync, self.seed)
        except ServiceError as e:
            raise ServiceError(f"service {self.name!r}: {e}") from None
        return self.server.handle(self.name, db)

    async def stop(self) -> None:
        server, self.server = self.server, None
        if server is not None:
            await release(server)
