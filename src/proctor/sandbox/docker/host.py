"""What the engine's machine has, and each task's limits clamped to it.

A task written on a bigger machine (Harbor's `cpus = 4`, `memory_mb = 65536`) asks for more
than this one has; `docker run --cpus 4` on two CPUs is refused outright ("Range of CPUs is
from 0.01 to 2.00"). The task still runs, with what there is, and the run says so once per
task: `warning: TASK: cpus = 4, but the engine has 2 CPUs; its containers get 2`.
"""

from __future__ import annotations

import json
from typing import Any

from proctor.dockercli import ENGINE_TIMEOUT_S, api_sync, docker_sync


def capacity() -> tuple[float, int] | None:
    """(CPUs, memory in bytes) of the engine's machine, as the engine counts them (it is
    the engine that refuses more); None when it does not say. From its API socket where the
    client would use it (dockercli.api_sync), else `docker info`."""
    got = api_sync("GET", "/info")
    if got is not None and got[0] == 200:
        try:
            info = json.loads(got[1])
            return float(info["NCPU"]), int(info["MemTotal"])
        except (ValueError, KeyError, TypeError):
            pass
    done = docker_sync("info", "--format", "{{.NCPU}} {{.MemTotal}}", timeout=ENGINE_TIMEOUT_S)
    try:
        cpus, memory = done.stdout.split()
        return float(cpus), int(memory)
    except ValueError:
        return None


def clamp(tasks: list[Any], have: tuple[float, int] | None) -> list[str]:
    """Lower each task's `cpu` and `memory_bytes` to what the engine has (in place); one
    warning per value lowered, naming the task and what it asked."""
    if have is None:
        return []
    cpus, memory = have
    warnings = []
    for task in tasks:
        res = task.resources
        want = res.get("cpu")
        if want and cpus and float(want) > cpus:
            res["cpu"] = cpus
            warnings.append(f"{task.id}: cpus = {float(want):g}, but the engine has {cpus:g} "
                            f"CPU{'s' if cpus != 1 else ''}; its containers get {cpus:g}")
        want = res.get("memory_bytes")
        if want and memory and int(want) > memory:
            res["memory_bytes"] = memory
            warnings.append(f"{task.id}: memory {_mib(int(want))}, but the engine's machine has "
                            f"{_mib(memory)}; its containers get {_mib(memory)}")
    return warnings


def _mib(n: int) -> str:
    return f"{n / (1 << 20):.0f} MiB"
