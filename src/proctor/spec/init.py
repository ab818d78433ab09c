"""`proctor init`: write the commented example suite and scenario (src/proctor/templates/)."""

from __future__ import annotations

import os
from importlib.resources import files

from proctor.errors import UsageError

TEMPLATES = ("cli-bench.yaml", "scenario.yaml")


def write_examples(directory: str, *, force: bool = False) -> list[str]:
    """Write every template into `directory` (created if needed); nothing is written if any
    target exists and `force` is off."""
    targets = [os.path.join(directory, name) for name in TEMPLATES]
    existing = [t for t in targets if os.path.exists(t)]
    if existing and not force:
        verb = "exists" if len(existing) == 1 else "exist"
        raise UsageError(f"{' and '.join(existing)} already {verb}; use --force to overwrite")
    os.makedirs(directory, exist_ok=True)
    source = files("proctor") / "templates"
    for name, target in zip(TEMPLATES, targets, strict=True):
        with open(target, "w", encoding="utf-8") as f:
            f.write((source / name).read_text(encoding="utf-8"))
    return targets
