"""Backing services for trials: `create(defn, ctx)` builds the Service for a declared one."""

from __future__ import annotations

from collections.abc import Callable

from proctor.errors import SetupError
from proctor.model import ServiceDef
from proctor.registry import Registry
from proctor.services.base import Service, ServiceContext, ServiceHandle

__all__ = ["SERVICES", "Service", "ServiceContext", "ServiceHandle", "create"]


# Adding a service kind = a module with a Service class + a line here.
SERVICES: Registry[Callable[[ServiceDef, ServiceContext], Service]] = Registry("service", {
    "postgres": "proctor.services.postgres:PostgresService",
    "mysql": "proctor.services.mysql:MysqlService",
    "http_mock": "proctor.services.http_mock:HttpMockService",
    "container": "proctor.services.container:ContainerService",
})


def create(defn: ServiceDef, ctx: ServiceContext) -> Service:
    """The Service for `defn` (modules are imported on demand, so a run without databases
    never loads a database driver)."""
    if defn.kind in SERVICES:
        return SERVICES.get(defn.kind)(defn, ctx)
    raise SetupError(f"service {defn.name!r}: unknown service kind {defn.kind!r}")
