"""Task images on Ray nodes whose Docker engine is not the head's (`--backend docker`).

The head makes every image a run needs before any trial (the backend's `prepare`: built from
the task's Dockerfile, pulled, or an image map stand-in), in the head's engine. A node with an
engine of its own gets each image its trials need shipped, never built there: `docker save`
on the head, streamed to the node's actor in CHUNK-sized calls through Ray's object store
(memory bounded on both sides, nothing written on the head), `docker load` on the node.

* once per image per node actor: the trials of a task on that node wait for the one
  shipment; where the node's engine already has the image (the head's own engine, a node
  that got it for an earlier run) nothing moves;
* a failed shipment is the error of every trial of the task on that node, said the same way
  and not tried again per trial (a build that failed never gets here: the task is already
  `unavailable` on the head, its build log in the error);
* the node's engine is whatever its environment names (DOCKER_HOST of the `ray start`).

Shipping rather than building on each node (docs/benchmarks.md has the figures): a node
needs no registry, no internet and no build tools, every node runs the very image the head
built (an `apt-get install` repeated on each node an hour apart is not the same image), and
loading is several times faster than building even a small recipe from scratch.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

from proctor.dockercli import docker_sync, said

CHUNK = 8 << 20  # bytes per call: large enough that a call's overhead does not count
LOAD_TIMEOUT_S = 1800.0


def needed(task: Any) -> list[str]:
    """The images a docker trial of `task` runs: its own and its image services'."""
    images = [task.base_image] if task.base_image else []
    for svc in task.services:
        if svc.kind == "container" and svc.config.get("image"):
            images.append(str(svc.config["image"]))
    return list(dict.fromkeys(images))


class ShipError(Exception):
    """An image could not be put in a node's engine."""


class Shipper:
    """The head's side: which node actor has which image, shipping what one lacks."""

    def __init__(self, quiet: bool = True):
        self.quiet = quiet
        self._on: dict[tuple[str, str], asyncio.Future[None]] = {}  # (actor label, image)
        self.shipped: list[dict[str, Any]] = []  # {image, node, bytes, seconds}

    async def ensure(self, label: str, where: str, actor: Any, images: list[str]) -> str:
        """'' once the node actor's engine has every image, else why it cannot (the same
        text for every trial that asks). A lost actor raises Ray's error, and its label is
        never asked again (a new actor has a new label)."""
        for image in images:
            key = (label, image)
            job = self._on.get(key)
            if job is None:
                job = self._on[key] = asyncio.ensure_future(self._ship(actor, where, image))
            try:
                await asyncio.shield(job)
            except ShipError as e:
                return str(e)
        return ""

    async def _ship(self, actor: Any, where: str, image: str) -> None:
        if not await actor.lacks_image.remote(image):
            return
        t0 = time.monotonic()
        sent = await _stream(image, actor)
        why = await actor.load_image.remote(image)
        if why:
            raise ShipError(f"image {image} could not be loaded on Ray node {where}: {why}")
        seconds = time.monotonic() - t0
        self.shipped.append({"image": image, "node": where, "bytes": sent,
                             "seconds": round(seconds, 2)})
        if not self.quiet:
            print(f"proctor: image {image} shipped to Ray node {where}: "
                  f"{sent / 1e6:.0f} MB in {seconds:.1f} s", file=sys.stderr, flush=True)


async def _stream(image: str, actor: Any) -> int:
    """`docker save IMAGE` on the head, its bytes sent to the actor as they come."""
    p = await asyncio.create_subprocess_exec("docker", "save", image,
                                             stdin=asyncio.subprocess.DEVNULL,
                                             stdout=asyncio.subprocess.PIPE,
                                             stderr=asyncio.subprocess.PIPE,
                                             start_new_session=True)
    assert p.stdout is not None and p.stderr is not None
    sent = 0
    try:
        while True:
            chunk = await _read(p.stdout, CHUNK)
            if not chunk:
                break
            await actor.receive_image.remote(image, sent, chunk)
            sent += len(chunk)
        err = await p.stderr.read()
        code = await p.wait()
    finally:
        if p.returncode is None:  # cancelled, or the node was lost: no save left running
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGKILL)
            await p.wait()
    if code != 0:
        why = said(err.decode(errors="replace")) or f"exited {code}"
        raise ShipError(f"image {image} could not be shipped: docker save on the head: {why}")
    return sent


async def _read(stream: asyncio.StreamReader, n: int) -> bytes:
    """Up to n bytes, fewer only at the end."""
    parts, have = [], 0
    while have < n:
        part = await stream.read(n - have)
        if not part:
            break
        parts.append(part)
        have += len(part)
    return b"".join(parts)


# The node's side (NodeRunner's methods call these, in its engine) ---------------------------


def lacks(image: str) -> bool:
    """Whether the node's engine does not have the image."""
    return docker_sync("image", "inspect", "-f", "{{.Id}}", image, timeout=60).exit_code != 0


def _tar(where: Path, image: str) -> Path:
    return where / f"{hashlib.sha256(image.encode()).hexdigest()[:16]}.tar"


def receive(where: Path, image: str, offset: int, data: bytes) -> None:
    """A chunk of the image's `docker save` tar, at `offset` (0 starts it afresh)."""
    where.mkdir(parents=True, exist_ok=True)
    with _tar(where, image).open("wb" if offset == 0 else "r+b") as f:
        f.seek(offset)
        f.write(data)


def load(where: Path, image: str) -> str:
    """`docker load` of the received tar into the node's engine; '' or why it failed."""
    tar = _tar(where, image)
    try:
        done = docker_sync("load", "-q", "-i", str(tar), timeout=LOAD_TIMEOUT_S)
    finally:
        tar.unlink(missing_ok=True)
    if done.exit_code != 0:
        return said(done.stderr) or said(done.stdout) or (
            "timed out" if done.timed_out else f"docker load exited {done.exit_code}")
    if lacks(image):
        return f"docker load did not give {image}"
    return ""
