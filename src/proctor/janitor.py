"""Cleaning up after a run that could not clean up after itself (SIGKILL, power loss).

Every process a run starts carries PROCTOR_RUN_ID in its environment, and every temp dir is
named after the run, so `--resume` can find and remove what the killed run left behind.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from proctor.proc import RUN_ID_VAR, environments, kill_until_gone
from proctor.sandbox import cgroup, disk

__all__ = ["RUN_ID_VAR", "leftover_pids", "sweep", "sweep_containers"]


def leftover_pids(run_id: str) -> list[int]:
    marker = f"{RUN_ID_VAR}={run_id}".encode()
    me = os.getpid()
    return [pid for pid, env in environments() if pid != me and marker in env]


def sweep_containers(run_id: str) -> int:
    """The docker backend's containers and networks of the run (labelled `proctor.run`)."""
    from proctor.dockercli import sweep as docker_sweep

    return docker_sweep(run_id)


def sweep(run_id: str) -> tuple[int, int]:
    """Kill the run's leftover processes and remove its temp dirs; returns (procs, dirs)."""
    killed = kill_until_gone(lambda: leftover_pids(run_id))
    cgroup.sweep_stale()
    sweep_containers(run_id)
    dirs = 0
    for path in Path(tempfile.gettempdir()).glob(f"proctor-{run_id}-*"):
        disk.sweep(path)  # the boxes' file systems (sandbox/disk.py) first
        shutil.rmtree(path, ignore_errors=True)
        dirs += 1
    return killed, dirs


def sweep_node(label: str) -> tuple[int, int]:
    """`sweep` plus the database data dirs (/dev/shm or $PROCTOR_DB_DIR) named after the
    run: what a Ray node's janitor removes when a run's trials on it end or die."""
    from proctor.services._dbserver import DIR_VAR, SHM

    killed, dirs = sweep(label)
    for parent in {SHM, Path(os.environ.get(DIR_VAR) or SHM)}:
        for path in parent.glob(f"proctor-{label}-*") if parent.is_dir() else ():
            shutil.rmtree(path, ignore_errors=True)
            dirs += 1
    return killed, dirs
