"""Where trials run besides this process: `ray` (--executor ray)."""

from __future__ import annotations

from proctor.model import TrialResult

# A trial that errored because its machine was lost, not because of anything it did: its
# `error` starts with this, and `--resume` runs it again (docs/running.md#ray).
INFRA_ERROR = "infrastructure error: "


def infra_error(result: TrialResult) -> bool:
    return result.status == "error" and (result.error or "").startswith(INFRA_ERROR)
