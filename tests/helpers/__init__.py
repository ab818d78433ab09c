"""What tests share besides fixtures (those are in the conftest.py files): import helpers
from here, never from a conftest module."""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PROCTOR = str(Path(sys.executable).parent / "proctor")  # the worktree's own executable
