"""A real multi-node Ray cluster on this machine: a head and worker nodes started with
`ray start` in private temp dirs, one of them in its own mount namespace where the spec
directory is an empty tmpfs (it cannot see the spec files). Stopped in the finalizer,
always, by killing the processes of its own temp dirs only (never `ray stop`, which would
stop every Ray on the machine)."""

from __future__ import annotations

import pytest

import ray  # noqa: F401 - in the dev extra: without Ray these tests fail, never skip
from tests.helpers.ray import blind_cluster


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with blind_cluster(tmp_path_factory.mktemp("ray-specs")) as c:
        yield c

