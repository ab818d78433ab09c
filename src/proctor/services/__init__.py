"""Backing services for trials: `create(defn, ctx)` builds the Service for a declared one."""

from __future__ import annotations

from proctor.errors import SetupError
from proctor.model import ServiceDef
from proctor.services.base import Service, ServiceContext, ServiceHandle

__all__ = ["Service", "ServiceContext", "ServiceHandle", "create"]


def create(defn: ServiceDef, ctx: ServiceContext) -> Service:
    """The Service for `defn` with the local backend (modules are imported on demand, so a
    run without databases never loads a database driver)."""
    if defn.kind == "postgres":
        from proctor.services.postgres import PostgresService

        return PostgresService(defn, ctx)
    if defn.kind == "mysql":
        from proctor.services.mysql import MysqlService

        return MysqlService(defn, ctx)
    if defn.kind == "http_mock":
        from proctor.services.http_mock import HttpMockService

        return HttpMockService(defn, ctx)
    if defn.kind == "container":
        image = defn.config.get("image", "")
        raise SetupError(f"service {defn.name!r}: image services{f' ({image})' if image else ''} "
                         "need --backend docker; the local backend runs only postgres, mysql "
                         "and http_mock services")
    raise SetupError(f"service {defn.name!r}: unknown service kind {defn.kind!r}")
