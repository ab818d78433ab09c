"""The Service contract: a backing service (database, HTTP mock) shared by a run.

One `Service` per declared service per run: `start()` once (a server, a template database),
`provision()` per trial (a fresh database cloned from the template, a fresh recording mock),
`stop()` at the end, always, even on Ctrl-C.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol


@dataclass
class ServiceHandle:
    """What one trial sees of a service."""

    name: str
    kind: str  # postgres | mysql | http_mock | container
    host: str
    port: int
    url: str
    env: dict[str, str] = field(default_factory=dict)  # injected into the agent's environment
    credentials: dict[str, Any] = field(default_factory=dict)  # user, password, database, ...

    def context(self) -> dict[str, Any]:
        """The entry for this service in a custom check's stdin context."""
        return {"host": self.host, "port": self.port, "url": self.url, "kind": self.kind,
                **self.credentials}

    async def requests(self) -> list[dict[str, Any]]:
        """Recorded HTTP requests (http_mock with record: true); empty otherwise."""
        return []

    async def release(self) -> None:
        """Drop this trial's database / stop its mock."""


class Service(Protocol):
    name: str

    async def start(self) -> None: ...

    async def provision(self, trial_id: str) -> ServiceHandle: ...

    async def stop(self) -> None: ...
