"""Sandbox backends by name (`--backend`, `backend =` in proctor.toml)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from proctor.registry import Registry

if TYPE_CHECKING:
    from proctor.sandbox.base import Sandbox, SandboxSpec

# A backend class has `async create(spec) -> Sandbox` and `preflight(options)`, which raises a
# SetupError naming what is missing before any trial runs.
BACKENDS: Registry[Any] = Registry("backend", {
    "local": "proctor.sandbox.local:LocalBackend",
    "docker": "proctor.sandbox.docker:DockerBackend",
})


async def create_sandbox(backend: str, spec: SandboxSpec) -> Sandbox:
    sandbox: Sandbox = await BACKENDS.get(backend)().create(spec)
    return sandbox


def backend_for_run(backend: str, scratch: Path, concurrency: int) -> Any:
    """The backend instance a run's trials share (with state kept across trials, e.g. the
    local backend's box pool); `await close_backend(it)` when the run ends."""
    cls = BACKENDS.get(backend)
    for_run = getattr(cls, "for_run", None)
    return for_run(scratch, concurrency) if for_run is not None else cls()


async def close_backend(backend: Any) -> None:
    close = getattr(backend, "close", None)
    if close is not None:
        await close()
