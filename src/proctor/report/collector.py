"""`collector_paused()`: no cyclic garbage collection while a large run is read or rendered.
Its own module because both the report package (`render`) and `report.data` (`load_run`)
pause it, and `report.data` must not import the package it serves (a circle)."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """No cyclic garbage collection inside: reading a large run's results and rendering its
    reports make millions of objects and no cycles, and the collector's passes over them (a
    million at 10,000 trials) find nothing."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
