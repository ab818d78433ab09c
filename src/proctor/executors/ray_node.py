"""What a Ray run does on one node: `NodeRunner`, one Ray actor per node per run.

It unpacks the run's spec files once (ray_files), starts the run's services on that node
once (the PostgreSQL/MariaDB servers; each trial provisions its own clone, as on a single
machine), runs the trials the head sends it on its own event loop, keeps each trial's
trace/audit (and `--keep` workdir) until the head has pulled them in chunks, and cleans up:

* `shutdown()` (the head's normal end, Ctrl-C, SIGTERM) cancels the trials, whose own
  clean-up then runs, stops the services and removes the node's dirs;
* a reaper process (`python -m proctor.executors.ray_reaper`, in its own session) waits for
  the actor to die however it dies (driver death, raylet killed, OOM) and sweeps what is left
  under the actor's label: processes carrying `PROCTOR_RUN_ID=<label>`, temp dirs and
  database dirs named `proctor-<label>-*` (janitor.sweep_node);
* a lock file held for the actor's life marks its label as live; the next run's actor on
  the node sweeps every label whose lock nobody holds (a reaper that was killed too).

Everything here is labelled `<run_id>-<n><random>`, n counting the actors the head created,
so an actor re-created on the same node after a crash (or by a resumed run) never sweeps its
successor's work.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import shutil
import signal
import socket
import sys
import tarfile
import tempfile
import threading
from pathlib import Path
from typing import Any

from proctor import proc
from proctor.model import RunOptions, TaskDef, Trial
from proctor.proc import RUN_ID_VAR
from proctor.results import TrialRecord

CHUNK = 1 << 20  # bytes per pull of a trace / audit / workdir: bounds the head's memory
KEEP_ARCHIVE = "workdir.tar"  # --keep: the trial's sandbox, shipped as one tar


class NodeRunner:
    def __init__(self, label: str, options: RunOptions, tasks: dict[str, TaskDef],
                 digest: str, bundle: list[Any], limiter: Any = None):
        import ray
        from proctor.executors.ray_files import materialize, relocate
        from proctor.executors.ray_limiter import RayLimiter
        from proctor.providers import limiter as calls

        _unblock_sigint()
        self.label, self.options = label, options
        self.node = f"{socket.gethostname()}/{ray.get_runtime_context().get_node_id()[:8]}"
        sweep_stale_labels()
        self.home = Path(tempfile.mkdtemp(prefix=f"proctor-{label}-node-"))
        self._lock = (self.home / "lock").open("w")
        fcntl.flock(self._lock, fcntl.LOCK_EX)
        _start_reaper(label)
        if limiter is not None:  # the run's model calls, limited together on every node
            calls.install(RayLimiter(limiter))
        root = materialize(digest, b"") if _cached(digest) else materialize(digest, ray.get(bundle[0]))
        self.tasks = {tid: relocate(t, root) for tid, t in tasks.items()}
        self.services: dict[tuple[str, str], Any] = {}
        self._service_lock: asyncio.Lock | None = None
        self.context: Any = None  # the RunContext its trials share (made on the node's loop)
        self.loop = asyncio.new_event_loop()
        threading.Thread(target=self._serve, name="proctor-node-loop", daemon=True).start()

    def _serve(self) -> None:
        from proctor.proc import use_fast_child_watcher

        _unblock_sigint()  # agents and servers are started from this thread: its mask is theirs
        asyncio.set_event_loop(self.loop)
        self.loop.run_until_complete(asyncio.sleep(0))
        self.loop.call_soon(use_fast_child_watcher)
        self.loop.run_forever()

    def where(self) -> str:
        return self.node

    # One trial ------------------------------------------------------------------------------

    def run(self, trial: Trial) -> tuple[TrialRecord, dict[str, int], dict[str, bytes]]:
        """Run a trial here; its result, its files' sizes, and the files themselves when
        they are small enough to come in the reply."""
        result = asyncio.run_coroutine_threadsafe(_Work(self)._run(trial), self.loop).result()
        result["node"] = self.node
        out = self._out(trial.id)
        # Relative paths: a check may keep files in a directory of its own (`verifier/`).
        sizes = {str(p.relative_to(out)): p.stat().st_size for p in sorted(out.rglob("*"))
                 if p.is_file()}
        inline = {}
        if sum(sizes.values()) <= CHUNK:
            inline = {name: (out / name).read_bytes() for name in sizes}
            self.drop(trial.id)
        return result, sizes, inline

    def read(self, trial_id: str, name: str, offset: int) -> bytes:
        with (self._out(trial_id) / name).open("rb") as f:
            f.seek(offset)
            return f.read(CHUNK)

    def drop(self, trial_id: str) -> None:
        shutil.rmtree(self._out(trial_id), ignore_errors=True)

    def _out(self, trial_id: str) -> Path:
        return self.home / "trials" / trial_id

    # Images the head ships (ray_images.py), into this node's engine -----------------------

    def lacks_image(self, image: str) -> bool:
        from proctor.executors import ray_images

        return ray_images.lacks(image)

    def receive_image(self, image: str, offset: int, data: bytes) -> None:
        from proctor.executors import ray_images

        ray_images.receive(self.home / "images", image, offset, data)

    def load_image(self, image: str) -> str:
        from proctor.executors import ray_images

        return ray_images.load(self.home / "images", image)

    # The end ---------------------------------------------------------------------------------

    def shutdown(self) -> None:
        """Cancel the trials (their own clean-up runs), stop the services, remove the dirs."""
        from proctor.janitor import sweep_node

        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(_stop(self.services, self.context),
                                             self.loop).result(timeout=60)
        sweep_node(self.label)  # anything a trial's clean-up missed
        shutil.rmtree(self.home, ignore_errors=True)


async def _stop(services: dict[tuple[str, str], Any], run: Any) -> None:
    from proctor.executors import close_run
    from proctor.services.lifecycle import stop_services

    tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
    for t in tasks:
        t.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    if run is not None:
        await close_run(run)  # its services are the node's (`services`)
    else:
        await stop_services(services)


class _Work:
    """The node's coroutines, kept off the actor class: Ray would make a class with any
    `async def` an asyncio actor, whose sync methods then block its loop."""

    def __init__(self, runner: NodeRunner):
        self.r = runner

    async def _run(self, trial: Trial) -> TrialRecord:
        from proctor.executors import open_run
        from proctor.trial.trial import error_result, run_trial

        task = self.r.tasks[trial.task_id]
        if self.r.context is None:  # one per node, as one per run on a single machine
            # Boxes kept for the node's next trials: as many as it runs at once, at most.
            self.r.context = open_run(self.r.options, run_id=self.r.label, trial_dir=self.r._out,
                                  sandbox_root=self.r.home / "sandboxes",
                                  scratch=self.r.home / "boxes", services=self.r.services,
                                  concurrency=self.r.options.concurrency or os.cpu_count() or 1)
        run = self.r.context
        try:
            await self._services(task)
        except Exception as e:  # noqa: BLE001 - as on one machine: the trial errors, not the run
            self.r._out(trial.id).mkdir(parents=True, exist_ok=True)
            return error_result(trial, task, f"could not start the services on this node: {e}")
        try:
            return await run_trial(trial, task, run)
        finally:
            out = self.r._out(trial.id)
            out.mkdir(parents=True, exist_ok=True)
            box = self.r.home / "sandboxes" / trial.id
            if self.r.options.keep and box.exists():
                await asyncio.to_thread(_tar, box, out / KEEP_ARCHIVE)
            shutil.rmtree(box, ignore_errors=True)

    async def _services(self, task: TaskDef) -> None:
        from proctor.services.lifecycle import start_services, stop_services

        self.r._service_lock = self.r._service_lock or asyncio.Lock()
        async with self.r._service_lock:  # one server per service per run on this node
            if any((task.source, s.name) not in self.r.services for s in task.services):
                n = len(self.r.services)
                started = await start_services([task], self.r.label, self.r.home / f"services-{n}")
                await stop_services({k: v for k, v in started.items() if k in self.r.services})
                self.r.services.update({k: v for k, v in started.items() if k not in self.r.services})


def _unblock_sigint() -> None:
    """A private Ray instance is started with SIGINT blocked (executors/ray.py), and its
    workers inherit that: the agents this node starts must not."""
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def _cached(digest: str) -> bool:
    from proctor.executors.ray_files import CACHE_DIR

    return (Path(tempfile.gettempdir()) / CACHE_DIR / digest / ".complete").exists()


def _tar(src: Path, dest: Path) -> None:
    with tarfile.open(dest, "w") as tar:
        tar.add(src, arcname=".")


def _start_reaper(label: str) -> None:
    env = {k: v for k, v in os.environ.items() if k != RUN_ID_VAR}  # or it would be swept
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)  # where proctor was found
    proc.run_sync([sys.executable, "-m", "proctor.executors.ray_reaper", str(os.getpid()), label],
                  env=env, timeout=60)


def sweep_stale_labels() -> list[str]:
    """Sweep every run label on this node whose actor is gone (its lock is free)."""
    from proctor.janitor import sweep_node

    swept = []
    for home in Path(tempfile.gettempdir()).glob("proctor-*-node-*"):
        label = home.name.removeprefix("proctor-").rsplit("-node-", 1)[0]
        try:
            with (home / "lock").open("a") as f:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            continue  # a live run
        except OSError:
            pass
        sweep_node(label)
        shutil.rmtree(home, ignore_errors=True)
        swept.append(label)
    return swept
