"""Shipping task images to a Ray node's own engine (executors/ray_images.py), without a
cluster: the head's side against a node actor stand-in, the node's side against this
machine's engine. The whole path on a real cluster with a second dockerd:
tests/ray/test_own_engine.py."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from proctor.executors import ray_images
from tests.docker.engine import require_engine


class _Call:
    def __init__(self, node: _Node, name: str):
        self.node, self.name = node, name

    def remote(self, *args):
        self.node.calls.append(self.name)
        future = asyncio.get_running_loop().create_future()
        future.set_result(getattr(self.node, "_" + self.name)(*args))
        return future


class _Node:
    """What a NodeRunner answers, counted: its engine lacks every image, loads fail."""

    def __init__(self, why: str = "write /var/lib/docker/tmp: no space left on device"):
        self.calls: list[str] = []
        self.why = why
        self.lacks_image, self.receive_image, self.load_image = (
            _Call(self, "lacks_image"), _Call(self, "receive_image"), _Call(self, "load_image"))

    def _lacks_image(self, image: str) -> bool:
        return True

    def _receive_image(self, image: str, offset: int, data: bytes) -> None:
        pass

    def _load_image(self, image: str) -> str:
        return self.why


def test_a_failed_shipment_is_one_error_for_every_trial_of_the_task_on_that_node():
    require_engine()
    node = _Node()
    shipper = ray_images.Shipper()
    image = "proctor-test-no-such-image:1"

    async def trials() -> list[str]:
        return await asyncio.gather(*[shipper.ensure("label-1", "vm/abc", node, [image])
                                      for _ in range(3)])

    whys = asyncio.run(trials())
    # `docker save` on the head fails (no such image): said once, for each trial alike
    assert len(set(whys)) == 1 and whys[0].startswith(
        f"image {image} could not be shipped: docker save on the head: "), whys
    assert node.calls == ["lacks_image"]  # asked once, not per trial
    # A new actor on the node (a new label) is asked again.
    asyncio.run(shipper.ensure("label-2", "vm/abc", node, [image]))
    assert node.calls == ["lacks_image", "lacks_image"]


@pytest.mark.slow  # proctor's base image through `docker save`: ~5-10 s
def test_a_load_the_node_refuses_is_said_with_the_engines_reason():
    require_engine()
    from proctor.sandbox.docker.images import ensure_base

    node = _Node()
    base = ensure_base()
    why = asyncio.run(ray_images.Shipper().ensure("label-1", "vm/abc", node, [base]))
    assert why == (f"image {base} could not be loaded on Ray node vm/abc: write "
                   "/var/lib/docker/tmp: no space left on device")
    assert node.calls[0] == "lacks_image" and node.calls[-1] == "load_image"
    assert node.calls.count("receive_image") >= 2  # the image in CHUNK-sized calls


def test_the_node_loads_what_it_received_or_says_why(tmp_path: Path):
    require_engine()
    image = "proctor-test-no-such-image:1"
    ray_images.receive(tmp_path, image, 0, b"not a tar")
    why = ray_images.load(tmp_path, image)
    assert why and "not a tar" not in why, why  # the engine's reason
    assert list(tmp_path.iterdir()) == []  # the received file is gone either way
    assert ray_images.lacks(image)


def test_a_trial_needs_its_image_and_its_image_services():
    from proctor.model import ServiceDef

    class Task:
        base_image = "proctor-task:1"
        services = [ServiceDef(name="web", kind="container", config={"image": "web:1"}),
                    ServiceDef(name="db", kind="postgres", config={}),
                    ServiceDef(name="api", kind="container", config={"image": "proctor-task:1"})]

    assert ray_images.needed(Task()) == ["proctor-task:1", "web:1"]
