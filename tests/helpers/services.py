"""Helpers of the services tests (their fixtures are in tests/services/conftest.py)."""

from __future__ import annotations

import asyncio
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from proctor.checks import registry
from proctor.checks.base import CheckContext
from proctor.model import AgentDef, CheckOutcome, ServiceDef, TaskDef, Trial
from proctor.services import ServiceContext, ServiceHandle, create

SEED = """\
-- a small shop
CREATE TABLE customers (
    id    integer PRIMARY KEY,
    name  text NOT NULL,
    email text
);
INSERT INTO customers VALUES (1, 'Ada', 'ada@example.com'), (2, 'Grace', NULL),
                             (3, 'Alan', 'alan@example.com');
CREATE TABLE orders (
    id          integer PRIMARY KEY,
    customer_id integer REFERENCES customers (id),
    total       numeric(10, 2) NOT NULL
);
INSERT INTO orders VALUES (10, 1, 12.50), (11, 1, 7.25), (12, 3, 100.00);
"""


def have(*binaries: str) -> bool:
    return all(shutil.which(b) or Path(b).exists() for b in binaries)


def pg_available() -> bool:
    from proctor.errors import SetupError
    from proctor.services.postgres import bin_dir

    try:
        bin_dir()
    except SetupError:
        return False
    return True


def mysql_available() -> bool:
    from proctor.errors import SetupError
    from proctor.services.mysql import binaries

    try:
        binaries()
    except SetupError:
        return False
    return True


def start(defn: ServiceDef, ctx: ServiceContext) -> Any:
    svc = create(defn, ctx)
    asyncio.run(svc.start())
    return svc


def context(tmp_path_factory: pytest.TempPathFactory, run_id: str) -> ServiceContext:
    base = tmp_path_factory.mktemp(f"{run_id}-spec")
    tmp = tmp_path_factory.mktemp(f"{run_id}-tmp")
    return ServiceContext(run_id=run_id, base_dir=base, tmp_dir=tmp)


def sandbox_env(*handles: ServiceHandle) -> dict[str, str]:
    """What a sandboxed command sees: the host environment plus each handle's variables, and
    none of the variables a developer's shell may have set for their own databases."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PG", "MYSQL", "DATABASE_URL"))}
    for h in handles:
        env.update(h.env)
    return env


def check_ctx(services: dict[str, ServiceHandle], tmp: Path) -> CheckContext:
    task = TaskDef(id="task", dialect="scenario", source=str(tmp / "spec.yaml"),
                   base_dir=str(tmp), prompt="p", agent=AgentDef(), checks=[])
    trial = Trial(id="task.r0", task_id="task", agent="oracle", model=None, help_mode=None,
                  replica=0)
    return CheckContext(task=task, trial=trial, sandbox=None, commands=[],  # type: ignore[arg-type]
                        agent_output="", recorder=None,  # type: ignore[arg-type]
                        services=services)


async def run_check(type_: str, services: dict[str, ServiceHandle], tmp: Path,
                    **config: Any) -> CheckOutcome:
    """Validate `config` like the spec loader does, then evaluate the check."""
    ct = registry()[type_]
    return await ct.evaluate(ct.config(**config), check_ctx(services, tmp))


def group_members(pgid: int) -> list[int]:
    """Live (non-zombie) processes in process group `pgid`."""
    out = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry.name}/stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if fields[0] != "Z" and int(fields[2]) == pgid:
            out.append(int(entry.name))
    return out

