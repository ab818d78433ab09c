"""The docker backend's entry check.

Trials in containers need a running Docker engine; this build runs trials with the local
backend only, so asking for docker is a clear usage error rather than a silent fallback.
"""

from __future__ import annotations

from proctor.errors import UsageError


def require_docker() -> None:
    raise UsageError("--backend docker is not available in this version of proctor; run with "
                     "--backend local (the default), which gives each trial its own workdir, "
                     "PostgreSQL/MariaDB databases and HTTP mocks without containers")
