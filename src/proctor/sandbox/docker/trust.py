"""The certificate authorities a task's container must trust to reach what this machine can.

Two kinds (docs/harbor.md#downloads-at-verify-time):

* this machine's own additions (`/usr/local/share/ca-certificates/*.crt`: a lab's or a
  company's TLS-inspecting proxy), without which nothing inside reaches a package registry
  over HTTPS;
* proctor's substitutes CA (sandbox/substitutes.py), which signs the answers proctor gives
  for installer URLs this machine cannot reach.

`pems()` is what images proctor builds bake in (images.py); `install(sandbox)` adds
them to a running container: into `/usr/local/share/ca-certificates/` (so a later
`update-ca-certificates`, e.g. when the verifier apt-installs curl, keeps them) and appended
to `/etc/ssl/certs/ca-certificates.crt` when the image has that bundle already.
`PROCTOR_EXTRA_CA=0` turns the machine's own additions off.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

HOST_CA_DIR = Path("/usr/local/share/ca-certificates")
BUNDLE = "/etc/ssl/certs/ca-certificates.crt"
DROP_DIR = "/usr/local/share/ca-certificates"


def host_pems() -> dict[str, bytes]:
    """file name -> PEM of this machine's own extra CAs (what images proctor builds bake in)."""
    out: dict[str, bytes] = {}
    if os.environ.get("PROCTOR_EXTRA_CA", "1") != "0" and HOST_CA_DIR.is_dir():
        for f in sorted(HOST_CA_DIR.glob("*.crt")):
            try:
                out[f"host-{f.name}"] = f.read_bytes()
            except OSError:
                continue
    return out


def pems() -> dict[str, bytes]:
    """file name -> PEM of every CA a running container should trust."""
    out = host_pems()
    from proctor.sandbox import substitutes

    ca = substitutes.ca_pem()
    if ca:
        out["proctor-substitutes.crt"] = ca
    return out


def install(sandbox: Any) -> None:
    """Trust `pems()` inside a running container (paths resolved in its own view)."""
    certs = pems()
    if not certs:
        return
    drop = sandbox.host_path(DROP_DIR)
    if drop is not None:
        drop.mkdir(parents=True, exist_ok=True)
        for name, pem in certs.items():
            (drop / f"proctor-{name}").write_bytes(pem)
    bundle = sandbox.host_path(BUNDLE)
    if bundle is not None and bundle.is_file():
        have = bundle.read_bytes()
        extra = b"".join(p if p.endswith(b"\n") else p + b"\n" for p in certs.values() if p not in have)
        if extra:
            with open(bundle, "ab") as f:
                f.write((b"\n" if have and not have.endswith(b"\n") else b"") + extra)
