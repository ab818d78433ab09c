"""Helpers for spec tests: write YAML into a temp dir (the cwd, so messages show short names)
and collect what the loader says about it."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def spec_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path

