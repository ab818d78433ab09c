"""The docker backend's entry point in the backend registry.

Trials in containers are not built yet (see the open Docker issue): asking for docker is a
clear usage error before any trial runs, never a silent fallback to the local backend.
"""

from __future__ import annotations

from typing import Any, NoReturn

from proctor.errors import UsageError

NOT_AVAILABLE = ("--backend docker is not available in this version of proctor; run with "
                 "--backend local (the default), which isolates each trial with Linux "
                 "namespaces and gives it its own PostgreSQL/MariaDB databases and HTTP mocks")


class DockerBackend:
    def preflight(self, options: Any) -> NoReturn:
        raise UsageError(NOT_AVAILABLE)

    async def create(self, spec: Any) -> NoReturn:
        raise UsageError(NOT_AVAILABLE)
