"""The Ray executor's entry check (see docs/running.md)."""

from __future__ import annotations

from proctor.errors import UsageError


def require_ray() -> None:
    raise UsageError("--executor ray is not available in this version of proctor; run with "
                     "--executor local (the default)")
