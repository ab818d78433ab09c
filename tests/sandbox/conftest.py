"""Fixtures of the sandbox tests."""

from __future__ import annotations

import pytest

from proctor.sandbox.namespaces import Box, missing


@pytest.fixture
async def box():
    """A bare namespace box (no mounts, workdir /), talked to through its spawner."""
    if missing() is not None:
        pytest.skip(f"no namespace box here: {missing()}")
    box = await Box.start([], workdir="/", hosts_file=None, env={})
    try:
        yield box
    finally:
        await box.close()
