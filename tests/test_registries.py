"""One registry pattern for everything found by name: every entry imports, and an unknown
name is a clear error naming the known ones."""

from __future__ import annotations

import pytest

from proctor.agents import AGENTS, INTERNAL
from proctor.checks import CHECKS
from proctor.executors import EXECUTORS
from proctor.providers import PROVIDERS
from proctor.report import FORMATS
from proctor.sandbox import BACKENDS
from proctor.services import SERVICES

REGISTRIES = [AGENTS, INTERNAL, CHECKS, PROVIDERS, FORMATS, BACKENDS, SERVICES, EXECUTORS]


@pytest.mark.parametrize("registry", REGISTRIES, ids=lambda r: r.kind)
def test_every_entry_loads(registry):
    for name, thing in registry.items():
        assert thing is not None, name


@pytest.mark.parametrize("registry", REGISTRIES, ids=lambda r: r.kind)
def test_unknown_names_say_what_is_known(registry):
    with pytest.raises(KeyError) as err:
        registry.get("no-such-thing")
    assert registry.kind in str(err.value) and registry.names()[0] in str(err.value)


def test_names_come_from_the_registries():
    # Typed once, in the registry: the CLI's choices, the scenario's agent types and
    # proctor.toml's backends are derived from it.
    from click import Choice

    from proctor.cli import run as run_cmd
    from proctor.config import ProctorConfig
    from proctor.model import EXTERNAL_AGENTS
    from proctor.spec.scenario import HOSTED, Agent

    choices = {p.name: p.type.choices for p in run_cmd.params if isinstance(p.type, Choice)}
    assert list(choices["agents"]) == AGENTS.names()  # --agent, repeatable
    assert list(choices["backend"]) == BACKENDS.names()
    assert list(choices["executor"]) == EXECUTORS.names()
    # and Keystone's hosted agents, each run by a local stand-in (docs/specs.md)
    assert (list(Agent.model_json_schema()["properties"]["type"]["enum"])
            == [*AGENTS.names(), *HOSTED])
    assert set(EXTERNAL_AGENTS) <= set(AGENTS.names())
    ProctorConfig.model_validate({"backend": "docker"}, context={"backends": BACKENDS.names()})
    with pytest.raises(ValueError, match="Input should be 'local' or 'docker'"):
        ProctorConfig.model_validate({"backend": "vm"}, context={"backends": BACKENDS.names()})
    with pytest.raises(ValueError, match="Input should be 'llm', 'command'"):
        ProctorConfig.model_validate({"stand_in_agent": "paragon"},
                                     context={"agents": AGENTS.names()})


def test_the_attacks_are_their_scripts():
    """`proctor check --attacks`' battery: one script per registered attack, each opening with
    its name and why it wins, valid shell; the attack agent is proctor's own, no spec's."""
    import subprocess

    from proctor.agents.attacks import ATTACKS, HERE, header, script

    assert {p.stem for p in HERE.glob("*.sh") if not p.name.startswith("_")} == set(ATTACKS)
    assert not set(INTERNAL) & set(AGENTS)
    for name in ATTACKS:
        assert (HERE / f"{name}.sh").read_text().startswith(f"# attack: {name}\n")
        assert len(header(name)) > 80, name  # what it does and why it would win
        text = script(name)
        assert text.startswith(f"# proctor attack {name}\n")
        done = subprocess.run(["sh", "-n"], input=text, text=True, capture_output=True)
        assert done.returncode == 0, (name, done.stderr)
