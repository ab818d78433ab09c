"""proctor.toml: run-wide configuration (providers, base URLs, prices, judge aliases).

Looked up at --config PATH, else ./proctor.toml; absent means defaults. Environment variables
override it where docs/models.md says so.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from proctor.errors import UsageError


def load_config(path: str | None = None) -> dict[str, Any]:
    candidate = Path(path) if path else Path(os.environ.get("PROCTOR_CONFIG", "proctor.toml"))
    if not candidate.exists():
        if path:
            raise UsageError(f"config file not found: {path}")
        return {}
    import tomllib

    try:
        with candidate.open("rb") as f:
            return tomllib.load(f)
    except tomllib.TOMLDecodeError as e:
        raise UsageError(f"{candidate}: invalid TOML: {e}") from None
