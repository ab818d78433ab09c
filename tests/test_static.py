"""The static checks CI runs with the tests: the layers of docs/internals.md hold (each layer
imports only the layers below it: `[tool.importlinter]` in pyproject.toml), the type checker
passes (`[tool.mypy]`: strict on the foundations) and ruff passes over src, tests and bench."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def _tool(name: str) -> str:
    exe = shutil.which(name, path=str(Path(sys.executable).parent))
    assert exe, f"{name} is in the dev extras: pip install -e '.[dev]'"
    return exe


def _passes(*argv: str, timeout: float) -> None:
    out = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=timeout)
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]


def test_import_layers_are_kept():
    _passes(_tool("lint-imports"), timeout=120)


def test_types_check():
    # Incremental: .mypy_cache makes a re-run after an edit take seconds (a cold run ~1 min).
    _passes(_tool("mypy"), timeout=600)


def test_ruff_is_clean():
    _passes(_tool("ruff"), "check", "src", "tests", "bench", timeout=120)
