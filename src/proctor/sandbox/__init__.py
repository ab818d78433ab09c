"""Sandbox backends by name (`--backend`, `backend =` in proctor.toml)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from proctor.registry import Registry

if TYPE_CHECKING:
    from proctor.sandbox.base import Backend, Capabilities, Sandbox, SandboxSpec

# Each entry is a class conforming to sandbox.base.Backend; what it can do is its
# `capabilities`, read by the engine instead of its name.
BACKENDS: Registry[type[Backend]] = Registry("backend", {
    "local": "proctor.sandbox.local.backend:LocalBackend",
    "docker": "proctor.sandbox.docker.backend:DockerBackend",
})


async def create_sandbox(backend: str, spec: SandboxSpec) -> Sandbox:
    sandbox: Sandbox = await BACKENDS.get(backend)().create(spec)
    return sandbox


def capabilities(backend: str) -> Capabilities:
    """What the backend named `backend` can do at best (sandbox.base.Capabilities)."""
    return BACKENDS.get(backend).capabilities


def with_capability(name: str) -> list[str]:
    """The backends that have capability `name`, as `--backend X` would name them."""
    return [n for n, cls in BACKENDS.items() if getattr(cls.capabilities, name)]


def backend_for_run(backend: str, scratch: Path, concurrency: int) -> Backend:
    """The backend instance a run's trials share (with state kept across trials, e.g. the
    local backend's box pool); `await close_backend(it)` when the run ends."""
    return BACKENDS.get(backend).for_run(scratch, concurrency)


async def close_backend(backend: Backend) -> None:
    await backend.close()
