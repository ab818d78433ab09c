"""Helpers of the spec tests (their fixtures are in tests/spec/conftest.py)."""

from __future__ import annotations

import subprocess
import textwrap
from pathlib import Path

import pytest

from proctor.errors import SpecError
from proctor.spec.load import LoadResult, load_specs
from tests.helpers.cli import Cli

# A suite of one trivial task whose solution passes (the start-up tests' run).
ONE_TASK_SUITE = """cli: sh
tasks:
  - id: t1
    intent: Write the file.
    solution: ["echo hello > out.txt"]
    assert: [{file_contains: {path: out.txt, text: hello}}]
"""


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
    return Cli(cwd)(*args, timeout=60)

