"""The image map (sandbox/imagemap.py): which image stands in for one no registry gives, and
the copy of a Dockerfile the build reads. The stand-ins themselves are built (for real) by
the cookbook test and tests/harbor/test_verifier.py."""

from __future__ import annotations

import pytest

from proctor.errors import SetupError
from proctor.sandbox import dockerimages, imagemap
from tests.docker.engine import require_engine


def test_proctor_toml_comes_before_the_built_in_map():
    config = {"images": {"ubuntu:24.04": "mirror.lab/ubuntu:24.04",
                         "acme/*": {"debian": "bookworm", "packages": ["jq"]}}}
    assert imagemap.lookup("ubuntu:24.04", config) == ("ubuntu:24.04", "mirror.lab/ubuntu:24.04")
    assert imagemap.lookup("ubuntu:22.04", config) == ("ubuntu:22.04", {"debian": "bookworm"})
    assert imagemap.lookup("ubuntu:noble", {}) == ("ubuntu:*", {"debian": "trixie"})
    assert imagemap.lookup("acme/tool:3", config)[1] == {"debian": "bookworm", "packages": ["jq"]}
    key, value = imagemap.lookup("python:3.12-slim", {})
    assert key == "python:3*" and value["debian"] == "trixie" and "python3-pip" in value["packages"]
    assert imagemap.lookup("ghcr.io/laude-institute/t-bench/ubuntu-24-04:20250624", {})[1] == {
        "debian": "trixie"}
    assert imagemap.lookup("quay.io/unknown/thing:1", {}) is None


def test_the_build_reads_a_copy_naming_the_resolved_images():
    text = """\
ARG BASE=python:3.12-slim
FROM ${BASE} AS build
COPY --from=ghcr.io/astral-sh/uv:latest /uv /uvx /bin/
COPY server.py persona.md .
FROM ubuntu:24.04
COPY --from=build /app /app
COPY --from=0 /x /y
"""
    seen = []

    def resolve(image: str) -> str:
        seen.append(image)
        return f"local/{len(seen)}"

    assert imagemap.rewrite(text, resolve) == """\
ARG BASE=python:3.12-slim
FROM local/1 AS build
COPY --from=local/2 /uv /uvx /bin/
COPY server.py persona.md ./
FROM local/3
COPY --from=build /app /app
COPY --from=0 /x /y
"""
    assert seen == ["python:3.12-slim", "ghcr.io/astral-sh/uv:latest", "ubuntu:24.04"]


def test_an_image_nobody_gives_is_one_error_naming_the_map(tmp_path):
    require_engine()
    (tmp_path / "Dockerfile").write_text("FROM quay.io/nobody/nothing:1\n")
    with pytest.raises(SetupError) as e:
        dockerimages.from_dockerfile(str(tmp_path / "Dockerfile"), config={})
    assert str(e.value).startswith("--backend docker: image 'quay.io/nobody/nothing:1' is not "
                                   "local and could not be pulled, and proctor.toml's [images] "
                                   "map has no entry for it (docs/harbor.md#the-image-map)")


def test_a_recipe_needs_a_debian_release():
    with pytest.raises(SetupError, match="needs `debian = \"SUITE\"`"):
        imagemap.stand_in({"packages": ["jq"]})
