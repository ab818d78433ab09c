"""Whether the docker tests may skip: only where ./setup.sh itself found no usable engine.

./setup.sh writes what it found to `.proctor/setup-docker` (`ready`, or `unavailable: WHY`).
Where it said `ready` (or never ran), an engine that does not answer is a test failure, not a
skip: CI's docker tests cannot vanish into a skip line on a machine where set-up succeeded.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from proctor.dockercli import engine_problem

STATUS = Path(__file__).resolve().parents[2] / ".proctor" / "setup-docker"


def setup_said() -> str | None:
    """What ./setup.sh recorded about the engine here, or None if it never ran."""
    try:
        return STATUS.read_text().strip()
    except OSError:
        return None


def require_engine() -> None:
    """Return when an engine answers; else skip (./setup.sh said none can run here) or fail."""
    why = engine_problem() or (None if os.geteuid() == 0 else
                               "proctor's docker backend runs as root only")
    if why is None:
        return
    said = setup_said()
    if said is not None and said.startswith("unavailable"):
        pytest.skip(f"no usable docker engine: ./setup.sh said {said!r}; now: {why}")
    told = ("./setup.sh set one up here but it does not answer now" if said is not None
            else f"./setup.sh has not recorded this machine's engine ({STATUS} is missing)")
    pytest.fail(f"no usable docker engine: {why}. {told}: run ./setup.sh, which installs and "
                "starts one, or records why none can run here (then these tests skip)",
                pytrace=False)
