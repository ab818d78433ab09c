"""Helpers of the security tests (their fixtures are in tests/security/conftest.py)."""

from __future__ import annotations

import json
from pathlib import Path


def trial(results: dict, prefix: str = "") -> dict:
    [t] = [t for t in results["trials"] if t["id"].startswith(prefix)]
    return t


def run_texts(run_dir: Path) -> str:
    """Everything proctor wrote for a run, as one text (to search for leaked values)."""
    return "\n".join(p.read_text(errors="replace") for p in run_dir.rglob("*") if p.is_file())



def one_command_suite(command: str) -> str:
    """A suite of one task whose oracle runs `command` and passes if out.txt holds `ok`."""
    return ("cli: sh\ntasks:\n  - id: t1\n    intent: Write the file.\n"
            f"    solution: [{json.dumps(command)}]\n"
            "    assert: [{file_contains: {path: out.txt, text: ok}}]\n")
