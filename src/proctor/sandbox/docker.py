"""The docker backend's entry point in the backend registry.

`preflight` checks, before any trial runs, that a container engine answers (exit 2 with the
engine's own reason otherwise). Trials in containers are not built yet (issue 16): `create`
is a clear usage error, never a silent fallback to the local backend.
"""

from __future__ import annotations

import shutil
import subprocess
from typing import Any, NoReturn

from proctor.errors import SetupError, UsageError

NOT_AVAILABLE = ("--backend docker is not available in this version of proctor; run with "
                 "--backend local (the default), which isolates each trial with Linux "
                 "namespaces and gives it its own PostgreSQL/MariaDB databases and HTTP mocks")
ENGINE_TIMEOUT_S = 20.0  # a daemon that has not answered by then is as good as absent


def engine_problem(docker: str = "docker") -> str | None:
    """Why no container engine can be used here, or None when the daemon answers."""
    binary = shutil.which(docker)
    if binary is None:
        return f"no container engine: `{docker}` is not on PATH (install a Docker engine, e.g. Debian's docker.io, and start dockerd)"
    try:
        done = subprocess.run([binary, "version", "--format", "{{.Server.Version}}"],
                              capture_output=True, text=True, timeout=ENGINE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return f"the container engine did not answer within {ENGINE_TIMEOUT_S:g} s"
    if done.returncode != 0 or not done.stdout.strip():
        # The client prints why (daemon not running, permission denied on the socket) last.
        lines = [ln for ln in done.stderr.splitlines() if ln.strip()]
        why = lines[-1].strip() if lines else f"`docker version` exited {done.returncode}"
        return f"the container engine is not usable: {why}"
    return None


class DockerBackend:
    def preflight(self, options: Any) -> NoReturn:
        why = engine_problem()
        if why is not None:
            raise SetupError(f"--backend docker: {why}")
        raise UsageError(NOT_AVAILABLE)

    async def create(self, spec: Any) -> NoReturn:
        raise UsageError(NOT_AVAILABLE)
