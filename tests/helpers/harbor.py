"""Helpers of the harbor tests (their fixtures are in tests/harbor/conftest.py)."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest

from tests.helpers import REPO

TOML = """\
version = "1.0"

[verifier]
timeout_sec = 120.0

[agent]
timeout_sec = 120.0

[environment]
build_timeout_sec = 600.0
cpus = 1
memory_mb = 1024
storage_mb = 10240
"""


def task(root: Path, name: str = "t", *, toml: str = TOML, instruction: str = "Do it.\n",
         test: str | None = "echo 1 > /logs/verifier/reward.txt\n",
         solve: str | None = "true\n", dockerfile: str | None = "FROM ubuntu:24.04\nWORKDIR /app\n",
         files: dict[str, str] | None = None) -> Path:
    """A Harbor task directory under `root`; None leaves a part out."""
    d = root / name
    parts = {"task.toml": toml, "instruction.md": instruction, "tests/test.sh": test,
             "solution/solve.sh": solve, "environment/Dockerfile": dockerfile, **(files or {})}
    for rel, text in parts.items():
        if text is None:
            continue
        path = d / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return d


def corpus(name: str) -> Path:
    """A corpus from `../shared/corpora/` beside the repository (the same in CI); locally
    $PROCTOR_CORPORA may point elsewhere. Missing: a skip here, a failure under CI=1."""
    base = Path(os.environ.get("PROCTOR_CORPORA") or REPO.parent / "shared" / "corpora")
    path = base / name
    if not path.is_dir():
        why = f"corpus {name} not found at {path} (../shared/corpora/ beside the repository)"
        if os.environ.get("CI"):
            pytest.fail(why)
        pytest.skip(why)
    return path


REGISTRIES = ("pypi.org", "files.pythonhosted.org", "deb.debian.org", "security.debian.org",
              "registry.npmjs.org")


def public_addresses() -> list[str]:
    """What this machine's resolver answers for the package registries when that is not a
    public address (a lab's gateway): proctor.toml's `public_addresses` for it, as an
    operator of such a machine writes it (docs/harbor.md#downloads-at-verify-time)."""
    import ipaddress
    import socket

    found = set()
    for host in REGISTRIES:
        try:
            infos = socket.getaddrinfo(host, 443, type=socket.SOCK_STREAM)
        except OSError:
            continue
        for info in infos:
            ip = ipaddress.ip_address(info[4][0].split("%")[0])
            if not ip.is_global and not ip.is_loopback:
                found.add(str(ip))
    return sorted(found)
