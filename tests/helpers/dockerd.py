"""A second Docker engine on this machine, for a Ray node that must not share the first one.

`dockerd` with its own data root, exec root (its own containerd), pidfile and socket, no
default bridge (`--bridge=none`) and no iptables rules, started in a network namespace of its
own: `--bridge=none` deletes any `docker0` the daemon sees at start, and in the machine's
namespace that would be the first engine's. proctor's containers need no bridge (they run
with `--network none`; proctor reaches them through their network namespaces), and nothing
is pulled or built in this engine: what it runs is shipped to it. Torn down on leaving: its
containers removed, the daemon stopped, its directories deleted. The first engine is never
touched.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Engine:
    host: str  # DOCKER_HOST
    root: Path
    pid: int  # dockerd

    def docker(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
        return subprocess.run(["docker", *args], env={**os.environ, "DOCKER_HOST": self.host},
                              capture_output=True, text=True, timeout=timeout)

    def images(self) -> set[str]:
        out = self.docker("images", "--format", "{{.Repository}}:{{.Tag}}").stdout
        return set(out.split())

    def containers(self, label_prefix: str) -> list[str]:
        """Containers whose `proctor.run` label starts with `label_prefix` (a run id)."""
        out = self.docker("ps", "-a", "--filter", "label=proctor.run",
                          "--format", '{{.ID}} {{.Label "proctor.run"}}').stdout
        return [ln for ln in out.splitlines() if ln.split(" ", 1)[1].startswith(label_prefix)]


@contextlib.contextmanager
def second_engine() -> Iterator[Engine]:
    root = Path(tempfile.mkdtemp(prefix="de-", dir="/tmp"))  # short: socket paths
    sock, pidfile = root / "docker.sock", root / "docker.pid"
    script = ("ip link set lo up && exec dockerd "
              f"--data-root {root}/data --exec-root {root}/exec --pidfile {pidfile} "
              f"--host unix://{sock} --bridge=none --iptables=false --ip-masq=false "
              f"--cgroup-parent=proctor-test-{root.name}")
    log = (root / "dockerd.log").open("wb")
    p = subprocess.Popen(["unshare", "--net", "--fork", "sh", "-c", script],
                         stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                         start_new_session=True)
    engine = Engine(f"unix://{sock}", root, 0)
    try:
        deadline = time.monotonic() + 60
        while engine.docker("version", timeout=20).returncode != 0:
            if p.poll() is not None or time.monotonic() > deadline:
                raise AssertionError("the second dockerd did not start: "
                                     + (root / "dockerd.log").read_text()[-2000:])
            time.sleep(0.3)
        engine.pid = int(pidfile.read_text())
        yield engine
    finally:
        _stop(engine, p)
        log.close()


def _stop(engine: Engine, p: subprocess.Popen) -> None:
    ids = engine.docker("ps", "-aq").stdout.split() if engine.pid else []
    if ids:
        engine.docker("rm", "-f", "-v", *ids)
    if engine.pid:
        with contextlib.suppress(ProcessLookupError):
            os.kill(engine.pid, signal.SIGTERM)  # it stops its own containerd
    try:
        p.wait(timeout=60)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(p.pid, signal.SIGKILL)
        p.wait()
    # Whatever the daemon left mounted under its root (it unmounts on a clean stop).
    mounts = [line.split()[1] for line in Path("/proc/mounts").read_text().splitlines()
              if line.split()[1].startswith(str(engine.root) + "/")]
    for mount in sorted(mounts, key=len, reverse=True):
        subprocess.run(["umount", "-l", mount], capture_output=True)
    _remove_cgroups(f"proctor-test-{engine.root.name}")
    shutil.rmtree(engine.root, ignore_errors=True)


def _remove_cgroups(name: str) -> None:
    """The daemon's --cgroup-parent, which it makes and never removes (one directory per
    controller on cgroup v1), with what is left under it: empty once its containers are."""
    for top in [Path("/sys/fs/cgroup") / name, *Path("/sys/fs/cgroup").glob(f"*/{name}")]:
        if top.is_dir():
            for d in sorted((p for p in top.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)):
                with contextlib.suppress(OSError):
                    d.rmdir()
            with contextlib.suppress(OSError):
                top.rmdir()
