"""Trials on a Ray cluster (`--executor ray`); docs/running.md#ray.

The head (the `proctor run` process) plans, scores, stores and reports exactly as with the
local executor; only `run_trial` moves, to one `NodeRunner` actor per node (ray_node.py),
which holds the run's spec files and services on that node and cleans up after itself. Each
trial's `resources` (cpu, memory; 1 CPU by default) are a Ray reservation: a one-bundle
placement group on a node with a live actor, placed by Ray and counted against every other
job on the cluster, reused by the run's later trials of the same size (a slot). The head
retries a trial on another node when its node or worker is lost, and pulls its trace and
audit home in chunks.

Reaching the cluster (or starting a private instance) is ray_connect.py; it happens in
`prepare`, before the run directory exists.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import re
import secrets
import shutil
import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from proctor.executors import InfrastructureError, Launch, with_failures
from proctor.executors.ray_connect import settings
from proctor.model import RunOptions, TaskDef, Trial
from proctor.results import TrialRecord
from proctor.trial.trial import error_result

# A node takes trials only once its actor answers: a node Ray has not yet noticed is dead
# (its health checks take a while) gets no trials, so no retries are spent on it.
REVIVE_ATTEMPTS, REVIVE_DELAY_S, REVIVE_TIMEOUT_S = 3, 2.0, 60.0
NODE_POLL_S = 5.0  # how often the head looks for nodes that joined
SLOT_POLL_S = 1.0  # how often a trial waiting for room looks whether the live nodes changed


@dataclass
class _Node:
    """A Ray node the executor may send trials to."""
    node_id: str
    cpus: float
    memory: float  # bytes; 0 when Ray reports none
    actor: Any = None
    alive: bool = False  # its actor answered: trials may go there
    name: str = ""  # HOSTNAME/NODE_ID[:8], as results' `node`
    label: str = ""
    error: str = ""  # why its last actor failed to start


@dataclass(eq=False)
class _Slot:
    """A placement group holding one trial's CPUs and memory on one node."""

    group: Any
    node_id: str
    size: tuple[float, float]  # (cpus, memory bytes)


class RayExecutor:
    @classmethod
    def connect(cls, options: RunOptions) -> bool:
        from proctor.executors.ray_connect import connect

        return connect(options)

    @classmethod
    async def open(cls, launch: Launch) -> RayExecutor:
        return await asyncio.to_thread(cls, launch.trial_dir, launch.run_id, launch.options,
                                       launch.tasks, launch.run_dir, launch.connected)

    def __init__(self, trial_dir: Any, run_id: str, options: RunOptions,
                 tasks: dict[str, TaskDef], run_dir: Path, started_here: bool):
        import ray
        from proctor.executors.ray_files import pack

        self.ray = ray
        self.trial_dir = trial_dir  # Callable[[str], Path] into the head's run directory
        self.run_id, self.options, self.tasks = run_id, options, tasks
        self.run_dir = run_dir
        self.started_here = started_here
        self.max_retries = settings(options)["max_retries"]
        bundle = pack(tasks.values(), options.models)
        self.digest, self.bundle = bundle.digest, [ray.put(bundle.data)]
        self._labels = itertools.count(1)
        self.nodes: dict[str, _Node] = {}
        self._changed: asyncio.Condition | None = None
        self._idle: list[_Slot] = []  # reserved, no trial in them: the next trial of a size
        self._waiting: list[tuple[tuple[float, float], asyncio.Future[_Slot]]] = []  # for a slot
        self._slots: set[_Slot] = set()  # every slot held, removed at the end
        self._revivals: list[asyncio.Future[Any]] = []
        self._watcher: asyncio.Future[Any] | None = None
        # The run's model-call limiter: every node's calls share it (ray_limiter.py).
        from proctor.executors import ray_limiter

        self.limiter = ray_limiter.start(ray, run_id)
        # Task images into nodes whose engine is not the head's (ray_images.py).
        self.images = None
        from proctor.sandbox import capabilities

        if capabilities(options.backend).engine_images:
            from proctor.executors.ray_images import Shipper

            self.images = Shipper(quiet=options.quiet)
        self._refresh()

    # Nodes ------------------------------------------------------------------------------------

    def _refresh(self, nodes: list[dict[str, Any]] | None = None) -> list[_Node]:
        """Add the live nodes with CPUs not seen before; returns them."""
        added = []
        # ray.nodes() has no annotations (ray's own): a list of dicts, as its docs say
        for n in self.ray.nodes() if nodes is None else nodes:  # type: ignore[no-untyped-call]
            cpus = float(n.get("Resources", {}).get("CPU", 0))
            if not n.get("Alive") or cpus <= 0 or n["NodeID"] in self.nodes:
                continue
            node = _Node(n["NodeID"], cpus, float(n["Resources"].get("memory", 0)),
                         name=f"{n.get('NodeManagerHostname', '?')}/{n['NodeID'][:8]}")
            self.nodes[n["NodeID"]] = node
            added.append(node)
        return added

    async def _watch(self) -> None:
        """Nodes that join during the run get an actor, and trials."""
        while True:
            await asyncio.sleep(NODE_POLL_S)
            for node in self._refresh(await asyncio.to_thread(self.ray.nodes)):
                self._revivals.append(asyncio.ensure_future(self._revive(node, 0)))

    def _spawn(self, node: _Node) -> None:
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        from proctor.executors.ray_node import NodeRunner

        # Unique across heads too: a resumed run's actors never share a label with the
        # killed run's, whose leftovers a node's janitor may be sweeping.
        node.label = f"{self.run_id}-{next(self._labels)}{secrets.token_hex(3)}"
        remote = self.ray.remote(NodeRunner)
        node.actor = remote.options(
            num_cpus=0, max_concurrency=1000, max_restarts=0, max_task_retries=0,
            scheduling_strategy=NodeAffinitySchedulingStrategy(node.node_id, soft=False),
        ).remote(node.label, self.options, self.tasks, self.digest, self.bundle, self.limiter)

    def _lost(self, node: _Node) -> None:
        """The node's actor is gone: no trial goes there until a new actor on it answers
        (a killed node is still "alive" for Ray until its health checks run out)."""
        if node.actor is None:
            return
        node.actor, node.alive = None, False
        self._revivals.append(asyncio.ensure_future(self._revive(node, REVIVE_DELAY_S)))

    async def _revive(self, node: _Node, delay: float) -> None:
        """Start an actor on the node; it takes trials once it has answered."""
        try:
            await self._revive_once(node, delay)
        finally:
            await self._notify()  # waiting trials look again: revived, or give up

    async def _revive_once(self, node: _Node, delay: float) -> None:
        for _ in range(REVIVE_ATTEMPTS):
            await asyncio.sleep(delay)
            delay = REVIVE_DELAY_S
            alive = {n["NodeID"] for n in await asyncio.to_thread(self.ray.nodes)
                     if n.get("Alive")}
            if node.node_id not in alive:
                return
            self._spawn(node)
            try:
                await asyncio.wait_for(node.actor.where.remote(), REVIVE_TIMEOUT_S)
            except (self.ray.exceptions.RayError, TimeoutError) as e:
                # e.g. proctor is not installed there: said when no node is left
                node.actor = None
                node.error = (f"its actor did not answer within {REVIVE_TIMEOUT_S:g}s"
                              if isinstance(e, TimeoutError) else _first_line(e))
                continue
            node.alive = True
            return

    async def _place(self, cpus: float, memory: float) -> tuple[_Node, _Slot] | str:
        """A live node and a Ray reservation of the trial's resources on it, waiting while
        the cluster is full (other jobs' use counts); or why no node ever will hold it."""
        if self._changed is None:  # the first trial: start every node's actor
            self._changed = asyncio.Condition()
            self._revivals += [asyncio.ensure_future(self._revive(n, 0)) for n in self.nodes.values()]
            self._watcher = asyncio.ensure_future(self._watch())
        while True:
            async with self._changed:
                live = [n for n in self.nodes.values() if n.alive and n.actor is not None]
                if not live and not any(not j.done() for j in self._revivals):
                    why = "; ".join(f"{n.node_id[:8]}: {n.error}" for n in self.nodes.values()
                                    if n.error)
                    return "no live Ray node with CPUs is left" + (f" ({why})" if why else "")
                if not live:
                    await self._changed.wait()
                    continue
                fits = [n for n in live if n.cpus >= cpus
                        and (not memory or not n.memory or n.memory >= memory)]
                if not fits:
                    most = max(n.memory for n in live)
                    return (f"no Ray node can hold this trial (resources: {cpus:g} CPU, "
                            f"{memory / 2**20:.0f} MiB; the nodes have at most "
                            f"{max(n.cpus for n in live):g} CPU"
                            + (f", {most / 2**20:.0f} MiB" if most else "") + ")")
            for stale in [x for x in self._idle if x.node_id not in {n.node_id for n in live}]:
                self._idle.remove(stale)  # its node is gone (Ray would move the reservation)
                self._remove(stale)
            usable = {n.node_id for n in fits}
            slot = next((x for x in self._idle if x.size == (cpus, memory)
                         and x.node_id in usable), None)
            if slot is not None:
                self._idle.remove(slot)
            else:
                slot = await self._reserve(cpus, memory, usable, {n.node_id for n in live})
            if slot is None:  # the live nodes changed while Ray had no room: look again
                continue
            node = self.nodes.get(slot.node_id)
            if node is not None and node.alive and node.actor is not None:
                return node, slot
            self._remove(slot)

    async def _reserve(self, cpus: float, memory: float, usable: set[str],
                       live: set[str]) -> _Slot | None:
        """A new slot on one of `usable` (Ray picks) once Ray has room for it, or a slot a
        finished trial hands over first; None if the live nodes change meanwhile (one
        lost, or one whose actor has just answered and may have room)."""
        from ray.util.placement_group import (
            NODE_ID_LABEL_KEY,
            placement_group,
            placement_group_table,
        )

        bundle = {"CPU": cpus, **({"memory": memory} if memory else {})}
        group = placement_group([bundle], strategy="STRICT_PACK", bundle_label_selector=[
            {NODE_ID_LABEL_KEY: f"in({','.join(sorted(usable))})"}])  # nodes with an actor
        slot = _Slot(group, "", (cpus, memory))
        self._slots.add(slot)
        handed: asyncio.Future[_Slot] = asyncio.get_running_loop().create_future()
        self._waiting.append((slot.size, handed))
        ready = asyncio.ensure_future(group.ready())
        try:
            while True:
                await asyncio.wait([ready, handed], timeout=SLOT_POLL_S,
                                   return_when=asyncio.FIRST_COMPLETED)
                if handed.done():  # a finished trial's slot: ours is not needed
                    self._remove(slot)
                    return handed.result()
                if ready.done():
                    break
                self._make_room(slot.size)
                if live != {n.node_id for n in self.nodes.values() if n.alive and n.actor}:
                    self._remove(slot)
                    return None
        finally:
            ready.cancel()
            self._waiting.remove((slot.size, handed))
            if not handed.done():
                handed.cancel()
        table = await asyncio.to_thread(placement_group_table, group)
        slot.node_id = table["bundles_to_node_id"][0]
        return slot

    def _make_room(self, size: tuple[float, float]) -> None:
        """An idle slot of another size goes: kept only for reuse, it may hold the very room
        a trial of this size waits for (a dataset mixing sizes would wait for ever)."""
        other = next((x for x in self._idle if x.size != size), None)
        if other is not None:
            self._idle.remove(other)
            self._remove(other)

    def _remove(self, slot: _Slot) -> None:
        from ray.util.placement_group import remove_placement_group

        self._slots.discard(slot)
        with contextlib.suppress(Exception):  # its node is gone: so is the reservation
            remove_placement_group(slot.group)

    async def _release(self, slot: _Slot, reuse: bool) -> None:
        if not reuse:
            self._remove(slot)
        else:  # to a trial waiting for room of this size, else kept for the next one
            waiter = next((f for size, f in self._waiting if size == slot.size
                           and not f.done()), None)
            if waiter is not None:
                waiter.set_result(slot)
            else:
                self._idle.append(slot)
        await self._notify()

    async def _notify(self) -> None:
        """Trials waiting for room look again."""
        if self._changed is not None:  # None: no trial has asked for room yet
            async with self._changed:
                self._changed.notify_all()

    # Trials ----------------------------------------------------------------------------------

    async def run(self, trial: Trial, task: TaskDef) -> TrialRecord:
        cpus = float(task.resources.get("cpu") or 1)
        memory = float(task.resources.get("memory_bytes") or 0)
        failures: list[str] = []
        while True:
            placed = await self._place(cpus, memory)
            if isinstance(placed, str):
                raise InfrastructureError(placed, failures)
            node, slot = placed
            actor, reuse = node.actor, False
            try:
                if actor is None:  # lost by another trial in the meantime: place again
                    continue
                why = await self._images(node, actor, task)
                if why:  # the same for each trial of the task on this node, not retried
                    reuse = True
                    return error_result(trial, task, why)
                result: TrialRecord
                result, sizes, inline = await actor.run.remote(trial)
                await self._fetch(actor, trial.id, sizes, inline)
                reuse = True
                return result
            except self.ray.exceptions.RayTaskError as e:
                # proctor itself failed on the node: running it elsewhere would fail the same.
                cause = e.cause or e
                return error_result(trial, task, with_failures(
                    f"the trial crashed on Ray node {node.label}: "
                    f"{type(cause).__name__}: {_first_line(cause)}", failures))
            except self.ray.exceptions.RayError as e:  # node died, worker crashed, object lost
                failures.append(f"{node.node_id[:8]}: {_first_line(e)}")
                if node.actor is actor:
                    self._lost(node)
                if len(failures) > self.max_retries:
                    raise InfrastructureError(
                        f"the trial's Ray node or worker was lost {len(failures)} time(s) "
                        f"([ray] max_retries = {self.max_retries})", failures,
                        node=node.name) from None  # the last node it was lost on
            finally:
                await self._release(slot, reuse)

    async def _images(self, node: _Node, actor: Any, task: TaskDef) -> str:
        """'' once the node's engine has the images the task's trials run, else why not."""
        from proctor.executors.ray_images import needed

        if self.images is None or getattr(task, "unavailable", None):
            return ""
        return await self.images.ensure(node.label, node.name, actor, needed(task))

    async def _fetch(self, actor: Any, trial_id: str, sizes: dict[str, int],
                     inline: dict[str, bytes]) -> None:
        """The trial's files into the run directory, in CHUNK-sized pulls when large."""
        target = self.trial_dir(trial_id)
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir(parents=True, exist_ok=True)
        for name, size in sizes.items():
            path = target / name
            path.parent.mkdir(parents=True, exist_ok=True)
            with path.open("wb") as f:
                if name in inline:
                    f.write(inline[name])
                    continue
                offset = 0
                while offset < size:
                    chunk = await actor.read.remote(trial_id, name, offset)
                    if not chunk:
                        break
                    f.write(chunk)
                    offset += len(chunk)
        if not inline:
            await actor.drop.remote(trial_id)
        from proctor.executors.ray_node import KEEP_ARCHIVE

        archive = target / KEEP_ARCHIVE
        if archive.exists():
            workdir = self.run_dir / "workdirs" / trial_id
            shutil.rmtree(workdir, ignore_errors=True)
            workdir.mkdir(parents=True)
            from proctor.executors.ray_files import extract

            with tarfile.open(archive) as tar:
                extract(tar, workdir)
            archive.unlink()

    async def rate_limits(self) -> dict[str, Any]:
        """What the run's model-call limiter did, per endpoint ({} if it is lost)."""
        try:
            return dict(await asyncio.wait_for(self.limiter.stats.remote(), 30))
        except (self.ray.exceptions.RayError, TimeoutError):
            return {}

    async def close(self) -> None:
        """Every node cleans up before Ray goes (Ctrl-C included), then a private Ray stops."""
        for job in [*self._revivals, self._watcher]:
            if job is not None:
                job.cancel()
        for slot in list(self._slots):
            self._remove(slot)
        actors = [n.actor for n in self.nodes.values() if n.actor is not None]
        refs = [a.shutdown.remote() for a in actors]
        with contextlib.suppress(Exception):  # a node lost now is swept by its reaper
            self.ray.wait(refs, num_returns=len(refs), timeout=90)
        for a in [*actors, self.limiter]:
            with contextlib.suppress(Exception):
                self.ray.kill(a)
        if self.started_here:
            self.ray.shutdown()


def _first_line(e: BaseException) -> str:
    """What went wrong, in one line: Ray's errors wrap the cause in lines about the actor;
    the last `SomeError: message` line is the cause."""
    text = re.sub(r"\x1b\[[0-9;]*m", "", str(e)).strip()
    causes = re.findall(r"^\s*([\w.]+(?:Error|Exception): .+)$", text, re.M)
    line = causes[-1].strip() if causes else (text.splitlines()[0] if text else type(e).__name__)
    return line[:300]
