"""The backend contract (docs/internals.md, "Adding a backend"): every registered backend
declares its capabilities and the five methods; the runner chooses by capability, never by
name; local and docker are siblings over the shared place files."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from proctor.errors import UsageError
from proctor.model import RunOptions
from proctor.run import prepare as runner
from proctor.sandbox import BACKENDS, capabilities, with_capability
from proctor.sandbox.base import Capabilities
from proctor.sandbox.local.backend import LocalSandbox
from proctor.sandbox.placefiles import PlaceFiles
from proctor.spec.load import load_specs

SRC = Path(__file__).resolve().parents[2] / "src" / "proctor"


class ImagesBackend:
    """A third backend, registered only for these tests: containers, no isolation needed."""

    capabilities = Capabilities(isolated=True, image_services=True, image_environment=True,
                                installs_packages=True)

    @classmethod
    def for_run(cls, scratch, concurrency):
        return cls()

    def preflight(self, isolation="auto"):
        return True

    def prepare(self, tasks, *, quiet=False, config=None):
        pass

    async def create(self, spec):
        raise NotImplementedError

    async def close(self):
        pass


@pytest.fixture
def third_backend(monkeypatch):
    monkeypatch.setitem(BACKENDS._entries, "images", f"{__name__}:ImagesBackend")
    monkeypatch.setitem(BACKENDS._loaded, "images", ImagesBackend)
    return "images"


@pytest.mark.parametrize("name", BACKENDS.names())
async def test_every_backend_declares_capabilities_and_the_methods(name, tmp_path):
    cls = BACKENDS.get(name)
    assert isinstance(cls.capabilities, Capabilities)
    backend = cls.for_run(tmp_path, 2)
    for method in ("preflight", "prepare", "create", "close"):
        assert callable(getattr(backend, method)), (name, method)
    backend.prepare([], quiet=True, config=None)  # no tasks: nothing to make ready
    await backend.close()


def test_local_and_docker_are_siblings_over_the_shared_place_files():
    docker = BACKENDS.get("docker")
    from proctor.sandbox.docker.container import DockerSandbox

    assert issubclass(DockerSandbox, PlaceFiles) and issubclass(LocalSandbox, PlaceFiles)
    assert not issubclass(DockerSandbox, LocalSandbox)
    # Behaviour differs by data, never by overriding the shared path view.
    for name in ("host_path", "_map", "_holds_mounts", "_own", "_writable", "snapshot"):
        assert name not in vars(DockerSandbox) and name not in vars(LocalSandbox), name
    assert docker.capabilities.image_environment
    assert not DockerSandbox.capabilities.image_environment  # proctor's places in the image


def test_a_sandbox_says_what_it_has_not_what_its_backend_could(tmp_path):
    sb = LocalSandbox(tmp_path / "sb", env={})  # --isolation none
    assert not sb.capabilities.isolated and not sb.capabilities.grader_box
    assert not sb.capabilities.serves_inside and sb.capabilities.host_files
    assert capabilities("local").grader_box  # in a box it would have one


def test_nothing_above_the_sandbox_layer_asks_for_a_backend_by_name():
    probes = re.compile(r"getattr\((sb|sandbox|ctx\.sandbox|backend)\b|backend [!=]= \"")
    found = [f"{p.relative_to(SRC)}:{n}" for p in SRC.rglob("*.py")
             if p.relative_to(SRC).parts[0] != "sandbox"  # the sandbox layer and its rooms
             for n, line in enumerate(p.read_text().splitlines(), 1) if probes.search(line)]
    assert not found, found


def test_the_runner_suggests_and_picks_backends_by_capability(third_backend, tmp_path):
    assert with_capability("image_environment") == ["docker", "images"]
    spec = tmp_path / "s.yaml"
    spec.write_text("version: 1\ntask: {prompt: p}\nservices:\n  - {name: c, image: redis:7}\n"
                    "invariants: {ok: {description: d, check: {type: file_exists, path: x}}}\n")
    tasks = load_specs([str(spec)]).tasks
    with pytest.raises(UsageError, match="need --backend docker or --backend images; "
                                         "the local backend runs only"):
        runner._containers_need_docker(tasks, RunOptions(backend="local"))
    runner._containers_need_docker(tasks, RunOptions(backend=third_backend))  # it runs them
    assert runner._ignored_by_backend(tasks, RunOptions(backend=third_backend)) == []
