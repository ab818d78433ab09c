"""Sandbox backends by name (`--backend`, `backend =` in proctor.toml)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from proctor.registry import Registry

if TYPE_CHECKING:
    from proctor.sandbox.base import Sandbox, SandboxSpec

# A backend class has `async create(spec) -> Sandbox` and `preflight(options)`, which raises a
# SetupError naming what is missing before any trial runs.
BACKENDS: Registry = Registry("backend", {
    "local": "proctor.sandbox.local:LocalBackend",
    "docker": "proctor.sandbox.docker:DockerBackend",
})


async def create_sandbox(backend: str, spec: SandboxSpec) -> Sandbox:
    return await BACKENDS.get(backend)().create(spec)
