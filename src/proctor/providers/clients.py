"""SDK clients shared by a run's trials: one per provider kind and endpoint, not one per
trial. Building an `AsyncOpenAI` costs ~27 ms of CPU here (its TLS context), and a client per
trial opens a new connection per trial; a shared one keeps them alive across trials.

run/execute.py installs a `Clients` for the run and closes it at its end (`restore`). Outside one (a
Ray node's trials, a test calling a provider) `shared` returns None and each provider makes
and closes its own client, as before.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Hashable
from typing import Any


class Clients:
    """The clients of one run, made at first use in its event loop, closed by `aclose`."""

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._made: dict[Hashable, Any] = {}

    def get(self, key: Hashable, make: Callable[[], Any]) -> Any | None:
        """The client for `key` (made with `make` the first time); None outside the loop the
        run's first client was made in (a client's connections belong to one loop)."""
        loop = asyncio.get_running_loop()
        if self._loop is None:
            self._loop = loop
        elif loop is not self._loop:
            return None
        client = self._made.get(key)
        if client is None:
            client = self._made[key] = make()
        return client

    async def aclose(self) -> None:
        made, self._made = self._made, {}
        for client in made.values():
            with contextlib.suppress(Exception):  # a run's end is not failed by a socket
                await client.close()


_current: Clients | None = None


def install(clients: Clients | None) -> Clients | None:
    """Make `clients` the run's (None: none); returns the one it replaces."""
    global _current
    previous, _current = _current, clients
    return previous


def shared(key: Hashable, make: Callable[[], Any]) -> Any | None:
    """The run's client for `key`, or None when no run shares clients here."""
    return None if _current is None else _current.get(key, make)


async def restore(previous: Clients | None) -> None:
    """The run's end: `previous` made current again, the run's clients closed."""
    ended = install(previous)
    if ended is not None:
        await ended.aclose()
