"""Service names as host names (`psql -h db`, `curl http://smtp/...`) in the local sandbox.

Every service listens on a loopback address of its own (see services/_net.py), so a name only
has to resolve to that address: a per-trial hosts file over /etc/hosts. An isolated sandbox
mounts it in its box (sandbox/namespaces.py). Without isolation, each command runs in a
private mount namespace in which the file is bind-mounted over /etc/hosts:

* as root: `unshare --mount` (needs CAP_SYS_ADMIN, which a root proctor has outside
  locked-down containers);
* as another user: an unprivileged user namespace (`unshare --user --map-root-user --mount`)
  to mount, then a nested one that maps the caller's own uid back, so the command still runs
  as that user (needs util-linux >= 2.38 and unprivileged user namespaces).

Costs one `unshare` + `sh` exec per command (a few ms). Where neither works, `wrap()` returns
the command unchanged and names do not resolve; the variables (`DATABASE_URL`, `PGHOST`,
`NAME_URL`, ...) always carry the address, so agents that use them work everywhere.

Why not HOSTALIASES: glibc applies it inside the DNS resolver only, so the alias target must
itself resolve through DNS; on most machines `localhost` and IP literals do not.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from proctor import proc

_HOSTNAME = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9_-]*[A-Za-z0-9])?$")
_MOUNT_AND_RUN = 'mount --bind "$0" /etc/hosts && exec "$@"'


def aliases(handles: Iterable[Any]) -> dict[str, str]:
    """name -> address for every service (with `.name`, `.host`) whose name can be a host name."""
    return {h.name: h.host for h in handles if _HOSTNAME.match(h.name) and h.host}


def hosts_text(names: dict[str, str]) -> str:
    """The machine's /etc/hosts plus one line per service."""
    try:
        base = Path("/etc/hosts").read_text()
    except OSError:
        base = "127.0.0.1 localhost\n::1 localhost\n"
    lines = "".join(f"{addr} {name}\n" for name, addr in sorted(names.items()))
    return f"{base.rstrip()}\n# proctor services\n{lines}"


def write_hosts_file(names: dict[str, str], directory: Path, *,
                     for_namespace: bool = False) -> Path | None:
    """Write `directory/hosts` for these names; None if there is nothing to alias or (for
    `wrap`) the platform cannot apply it."""
    if not names or (not for_namespace and _mode() is None):
        return None
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "hosts"
    path.write_text(hosts_text(names))
    path.chmod(0o644)
    return path


def wrap(argv: list[str], hosts_file: Path | None) -> list[str]:
    """argv run with `hosts_file` as its /etc/hosts, when the platform allows it."""
    if hosts_file is None:
        return argv
    prefix = _prefix(_mode())
    return [*prefix, str(hosts_file), *argv] if prefix else argv


def supported() -> bool:
    return _mode() is not None


def _prefix(mode: str | None) -> list[str]:
    unshare, mount = shutil.which("unshare"), shutil.which("mount")
    if mode is None or not unshare or not mount:
        return []
    script = _MOUNT_AND_RUN.replace("mount ", f"{mount} ")
    if mode == "root":
        return [unshare, "--mount", "--propagation", "private", "--", "/bin/sh", "-c", script]
    uid, gid = os.getuid(), os.getgid()
    script = script.replace('exec "$@"', f'exec {unshare} --user --map-user={uid} '
                                          f'--map-group={gid} -- "$@"')
    return [unshare, "--user", "--map-root-user", "--mount", "--", "/bin/sh", "-c", script]


@functools.cache
def _mode() -> str | None:
    """"root", "user" or None: which namespace recipe works here (probed once)."""
    if not Path("/etc/hosts").exists():
        return None
    with tempfile.TemporaryDirectory(prefix="proctor-hosts-probe-") as d:
        probe = Path(d) / "hosts"
        probe.write_text("127.0.0.1 proctor-hosts-probe\n")
        probe.chmod(0o644)
        Path(d).chmod(0o755)
        for mode in (("root", "user") if os.geteuid() == 0 else ("user",)):
            prefix = _prefix(mode)
            if not prefix:
                continue
            argv = [*prefix, str(probe), "grep", "-q", "proctor-hosts-probe", "/etc/hosts"]
            if proc.run_sync(argv, timeout=10).exit_code == 0:
                return mode
    return None
