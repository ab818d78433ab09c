"""Where proctor keeps what it builds once per machine: the compiled C programs (native.py),
the docker backend's base tarballs and substitutes, the disk-limit images (disk.py).

Shared by both backends, so the local one never imports a Docker module for a path."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """$PROCTOR_CACHE, else ~/.cache/proctor (or $XDG_CACHE_HOME/proctor)."""
    given = os.environ.get("PROCTOR_CACHE")
    if given:
        return Path(given)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "proctor"
