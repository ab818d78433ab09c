"""One registry pattern for everything found by name: every entry imports, and an unknown
name is a clear error naming the known ones."""

from __future__ import annotations

import pytest

from proctor.agents import AGENTS
from proctor.checks import CHECKS
from proctor.providers import PROVIDERS
from proctor.report import FORMATS
from proctor.sandbox import BACKENDS
from proctor.services import SERVICES

REGISTRIES = [AGENTS, CHECKS, PROVIDERS, FORMATS, BACKENDS, SERVICES]


@pytest.mark.parametrize("registry", REGISTRIES, ids=lambda r: r.kind)
def test_every_entry_loads(registry):
    for name, thing in registry.items():
        assert thing is not None, name


@pytest.mark.parametrize("registry", REGISTRIES, ids=lambda r: r.kind)
def test_unknown_names_say_what_is_known(registry):
    with pytest.raises(KeyError) as err:
        registry.get("no-such-thing")
    assert registry.kind in str(err.value) and registry.names()[0] in str(err.value)
