"""Real servers for the services tests: one PostgreSQL and one MariaDB per test session
(shared by the tests through the same Service objects the runner uses), real HTTP mocks."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from proctor.model import ServiceDef
from proctor.services import ServiceContext
from tests.helpers.services import (
    SEED,
    context,
    mysql_available,
    pg_available,
    start,
)


@pytest.fixture(scope="session")
def pg_ctx(tmp_path_factory) -> ServiceContext:
    ctx = context(tmp_path_factory, "pgsession")
    (ctx.base_dir / "seed.sql").write_text(SEED)
    return ctx


@pytest.fixture(scope="session")
def pg(pg_ctx) -> Iterator[Any]:
    """The session's PostgreSQL service `db`, seeded with SEED."""
    if not pg_available():
        pytest.skip("PostgreSQL is not installed (Debian package `postgresql`)")
    svc = start(ServiceDef("db", "postgres", {"seed_file": str(pg_ctx.base_dir / "seed.sql")}),
                pg_ctx)
    yield svc
    asyncio.run(svc.stop())


@pytest.fixture(scope="session")
def my_ctx(tmp_path_factory) -> ServiceContext:
    ctx = context(tmp_path_factory, "mysession")
    (ctx.base_dir / "seed.sql").write_text(SEED.replace("text", "varchar(200)"))
    return ctx


@pytest.fixture(scope="session")
def my(my_ctx) -> Iterator[Any]:
    """The session's MariaDB service `db`, seeded with SEED."""
    if not mysql_available():
        pytest.skip("MariaDB is not installed (Debian package `mariadb-server`)")
    svc = start(ServiceDef("db", "mysql", {"seed_file": str(my_ctx.base_dir / "seed.sql")}),
                my_ctx)
    yield svc
    asyncio.run(svc.stop())

