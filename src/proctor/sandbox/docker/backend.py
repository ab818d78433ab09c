"""The docker backend (`--backend docker`, docs/docker.md): images made ready before any trial,
then one container per trial: proctor's places in the task's image (container.py) or, for a
Harbor task, the image as the environment (taskenv.py)."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from proctor.dockercli import engine_problem
from proctor.errors import SetupError
from proctor.sandbox.base import SandboxSpec
from proctor.sandbox.docker.container import CONTAINER, DockerSandbox
from proctor.sandbox.docker.taskenv import ImageSandbox

if TYPE_CHECKING:
    from proctor.config import ProctorConfig


class DockerBackend:
    """`--backend docker`: a container per trial; images are made ready by `prepare`."""

    capabilities = CONTAINER

    def __init__(self) -> None:
        # No container is kept across trials; what is: each image's config, read once a
        # run (its images are made ready before any trial and stay as they are).
        self.image_configs: dict[str, dict[str, Any]] = {}

    @classmethod
    def for_run(cls, scratch: Path, concurrency: int) -> DockerBackend:
        return cls()

    async def close(self) -> None:
        """Nothing kept across trials."""

    def preflight(self, isolation: str = "auto") -> bool:
        why = engine_problem()
        if why is not None:
            raise SetupError(f"--backend docker: {why}")
        if os.geteuid() != 0:  # entering a container's network namespace takes CAP_SYS_ADMIN
            raise SetupError("--backend docker needs proctor to run as root: the trial's "
                             "services and egress proxy are bound inside each container's "
                             "network namespace (or use --backend local, which needs no root)")
        return True

    def prepare(self, tasks: Sequence[Any], *, quiet: bool = False,
                config: ProctorConfig | None = None) -> None:
        """Every image the tasks need is local (built or pulled) before any trial runs; each
        task's CPU and memory limits within what the engine has (host.py)."""
        from proctor.sandbox.docker import host as dockerhost
        from proctor.sandbox.docker import images as dockerimages

        for warning in dockerhost.clamp(list(tasks), dockerhost.capacity()):
            if not quiet:
                print(f"proctor: warning: {warning}", file=sys.stderr, flush=True)
        dockerimages.prepare(list(tasks), quiet=quiet, config=config)

    async def create(self, spec: SandboxSpec) -> DockerSandbox:
        from proctor.sandbox.docker import images as dockerimages

        image = spec.image
        if not image:
            image = await asyncio.to_thread(dockerimages.ensure_base)
        if spec.image_env is not None:  # the image is the environment (a Harbor task's)
            sandbox: DockerSandbox = await ImageSandbox.make(spec, image, self.image_configs)
        else:
            sandbox = DockerSandbox(spec, image)
        try:
            await sandbox.start(spec)
        except BaseException:
            await sandbox.close()
            raise
        return sandbox
