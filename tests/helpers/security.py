"""Helpers of the security tests (their fixtures are in tests/security/conftest.py)."""

from __future__ import annotations

from pathlib import Path


def trial(results: dict, prefix: str = "") -> dict:
    [t] = [t for t in results["trials"] if t["id"].startswith(prefix)]
    return t


def run_texts(run_dir: Path) -> str:
    """Everything proctor wrote for a run, as one text (to search for leaked values)."""
    return "\n".join(p.read_text(errors="replace") for p in run_dir.rglob("*") if p.is_file())

