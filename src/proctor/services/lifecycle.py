"""Starting and stopping a run's services: one per declared service per spec file, started
once, stopped always (even on Ctrl-C). Used by the runner and by executors on their nodes."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from proctor.model import TaskDef
from proctor.services import create
from proctor.services.base import Service, ServiceContext


async def start_services(tasks: list[TaskDef], run_id: str,
                         tmp_root: Path) -> dict[tuple[str, str], Service]:
    services: dict[tuple[str, str], Service] = {}
    if not any(task.services for task in tasks):
        return services
    for task in tasks:
        for svc in task.services:
            key = (task.source, svc.name)
            if key not in services:
                ctx = ServiceContext(run_id=run_id, base_dir=Path(task.base_dir),
                                     tmp_dir=tmp_root / "services" / f"{len(services)}-{svc.name}")
                ctx.tmp_dir.mkdir(parents=True, exist_ok=True)
                services[key] = create(svc, ctx)
    started = []
    try:
        for service in services.values():
            await service.start()
            started.append(service)
    except BaseException:
        await stop_services({i: s for i, s in enumerate(started)})
        raise
    return services


async def stop_services(services: Mapping[Any, Service]) -> None:
    async def stop_all() -> None:
        for service in services.values():
            try:
                await service.stop()
            except Exception as e:  # keep stopping the others
                print(f"proctor: stopping service {service.name}: {e}", file=sys.stderr)

    job = asyncio.ensure_future(stop_all())
    try:
        await asyncio.shield(job)
    except asyncio.CancelledError:
        await job
        raise
