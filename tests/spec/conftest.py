"""Helpers for spec tests: write YAML into a temp dir (the cwd, so messages show short names)
and collect what the loader says about it."""

from __future__ import annotations

import subprocess
import textwrap
from pathlib import Path

import pytest

from proctor.errors import SpecError
from proctor.spec.load import LoadResult, load_specs
from tests.conftest import PROCTOR


@pytest.fixture
def spec_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"))
    return path


def problems(*paths: str) -> list[str]:
    """Every issue line (errors and warnings) load_specs raises for these paths."""
    with pytest.raises(SpecError) as e:
        load_specs(list(paths))
    return [str(i) for i in e.value.issues]


def loads(*paths: str) -> LoadResult:
    return load_specs(list(paths))


def run_proctor(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([PROCTOR, *args], capture_output=True, text=True, cwd=cwd, timeout=60)
