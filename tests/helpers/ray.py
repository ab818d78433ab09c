"""Helpers of the ray tests (their fixtures are in tests/ray/conftest.py)."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

RAY = str(Path(sys.executable).parent / "ray")


# A machine-wide ~/.ray/auth_token would make the head demand a token its nodes lack.
ENV = {**os.environ, "RAY_AUTH_MODE": "disabled", "RAY_ADDRESS": ""}


NODE_MEMORY = 4 << 30  # each node's `memory` resource: what trials' resources.memory reserve


@dataclass
class Node:
    temp_dir: Path

    def pids(self) -> list[int]:
        """Every process of this node: its command line names its temp dir."""
        marker = str(self.temp_dir).encode()
        out = []
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit():
                continue
            try:
                with open(f"/proc/{entry.name}/cmdline", "rb") as f:
                    if marker in f.read():
                        out.append(int(entry.name))
            except OSError:
                continue
        return out

    def workers(self) -> list[int]:
        """The node's Ray worker processes (children of its raylet)."""
        raylets = {p for p in self.pids() if _comm(p) == "raylet"}
        return [int(p) for p in os.listdir("/proc") if p.isdigit() and _ppid(int(p)) in raylets]

    def homes(self) -> list[Path]:
        """The home dirs of the node's proctor actors (`proctor-<label>-node-*`, each holding
        a lock in it open)."""
        out = []
        for pid in self.workers():
            with contextlib.suppress(OSError):
                for fd in os.listdir(f"/proc/{pid}/fd"):
                    link = os.readlink(f"/proc/{pid}/fd/{fd}")
                    if link.endswith("/lock") and "-node-" in link:
                        out.append(Path(link).parent)
        return out

    def label(self) -> str:
        """The run label of the node's actor; "" until one has started."""
        return next((h.name.removeprefix("proctor-").rsplit("-node-", 1)[0]
                     for h in self.homes()), "")

    def kill(self) -> None:
        """SIGKILL the node: its Ray workers (their titles no longer name the temp dir)
        and its raylet, object store, GCS."""
        workers = self.workers() if self.pids() else []
        for pid in [*workers, *self.pids()]:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


@dataclass
class Cluster:
    address: str
    spec_dir: Path  # invisible to `hidden`
    head: Node
    nodes: list[Node] = field(default_factory=list)
    hidden: Node | None = None

    def add_node(self, cpus: int = 2, hide: Path | None = None,
                 env: dict[str, str] | None = None) -> Node:
        """A worker node (`env`: added to its environment, e.g. DOCKER_HOST: an engine of its
        own)."""
        temp = Path(tempfile.mkdtemp(prefix="rt-", dir="/tmp"))  # short: socket paths
        argv = [RAY, "start", "--address", self.address, "--num-cpus", str(cpus),
                "--memory", str(NODE_MEMORY), "--temp-dir", str(temp), "--disable-usage-stats"]
        if hide is not None:
            script = f"mount -t tmpfs proctor-test {hide} && exec \"$@\""
            argv = ["unshare", "-m", "sh", "-c", script, "sh", *argv]
        subprocess.run(argv, env={**ENV, **(env or {})}, check=True, capture_output=True,
                       timeout=120)
        node = Node(temp)
        self.nodes.append(node)
        return node

    def stop(self) -> None:
        for node in [*self.nodes, self.head]:
            node.kill()
            shutil.rmtree(node.temp_dir, ignore_errors=True)


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def _ppid(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return 0


def _can_hide() -> bool:
    return os.geteuid() == 0 and shutil.which("unshare") is not None


def start_cluster(head_cpus: int = 2, spec_dir: Path | None = None) -> Cluster:
    if not _can_hide():
        pytest.fail("tests/ray need root and unshare (./setup.sh runs them as root)")
    temp = Path(tempfile.mkdtemp(prefix="rt-", dir="/tmp"))
    subprocess.run([RAY, "start", "--head", "--port", "0", "--num-cpus", str(head_cpus),
                    "--memory", str(NODE_MEMORY), "--temp-dir", str(temp), "--include-dashboard", "false",
                    "--disable-usage-stats"], env=ENV, check=True, capture_output=True,
                   timeout=120)
    return Cluster((temp / "ray_current_cluster").read_text().strip(), spec_dir or temp,
                   Node(temp))


@contextlib.contextmanager
def blind_cluster(spec_dir: Path, head_cpus: int = 2, node_cpus: int = 2):
    """A head and a second node that cannot see `spec_dir` (`c.hidden`), both up; stopped
    on leaving."""
    c = start_cluster(head_cpus=head_cpus, spec_dir=spec_dir)
    try:
        c.hidden = c.add_node(cpus=node_cpus, hide=spec_dir)
        _wait_nodes(c, 2)
        yield c
    finally:
        c.stop()


def _wait_nodes(c: Cluster, n: int, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if sum(1 for node in [c.head, *c.nodes] if node.pids()) >= n:
            return
        time.sleep(0.2)
    raise AssertionError(f"{n} Ray nodes did not come up")


def proctor_leftovers(run_id: str) -> tuple[list[int], list[str]]:
    """Processes carrying the run's marker (any of its node labels) and temp / database
    dirs named after it, on this machine (every node of the test cluster is here)."""
    from proctor.proc import RUN_ID_VAR, environments

    marker = f"{RUN_ID_VAR}={run_id}".encode()
    pids = [pid for pid, env in environments()
            if any(v == marker or v.startswith(marker + b"-") for v in env)]
    dirs = [str(p) for parent in (Path(tempfile.gettempdir()), Path("/dev/shm"))
            for p in parent.glob(f"proctor-{run_id}-*")]
    return pids, dirs

