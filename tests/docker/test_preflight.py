"""The docker backend's preflight: a clear exit-2 error before any trial, never a traceback."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from proctor.errors import SetupError
from proctor.sandbox.docker import DockerBackend, engine_problem


def _fake_docker(tmp_path: Path, script: str) -> str:
    exe = tmp_path / "docker"
    exe.write_text("#!/bin/sh\n" + script)
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    return str(exe)


def test_no_binary_says_what_to_install(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    why = engine_problem()
    assert why is not None and "not on PATH" in why and "docker.io" in why
    with pytest.raises(SetupError) as err:
        DockerBackend().preflight(None)
    assert err.value.exit_code == 2 and "--backend docker: no container engine" in str(err.value)


def test_daemon_down_gives_the_clients_reason(tmp_path: Path) -> None:
    exe = _fake_docker(tmp_path, "echo 'Client: 28' \necho 'Cannot connect to the Docker "
                                 "daemon at unix:///var/run/docker.sock.' >&2\nexit 1\n")
    why = engine_problem(exe)
    assert why == ("the container engine is not usable: Cannot connect to the Docker daemon "
                   "at unix:///var/run/docker.sock.")


def test_daemon_answering_is_no_problem(tmp_path: Path) -> None:
    assert engine_problem(_fake_docker(tmp_path, "echo 28.2.2\n")) is None


def test_a_daemon_that_answers_passes_preflight(monkeypatch: pytest.MonkeyPatch,
                                                tmp_path: Path) -> None:
    _fake_docker(tmp_path, "echo 28.2.2\n")
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    assert DockerBackend().preflight(None) is True  # trials are isolated (in containers)


@pytest.mark.skipif(not os.path.exists("/usr/local/bin/docker") or
                    os.path.exists("/var/run/docker.sock"),
                    reason="needs the docker client with no daemon running")
def test_real_client_without_daemon() -> None:
    why = engine_problem()
    assert why is not None and "Cannot connect to the Docker daemon" in why


def test_not_root_is_a_clear_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _fake_docker(tmp_path, "echo 28.2.2\n")
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    with pytest.raises(SetupError, match="--backend docker needs proctor to run as root"):
        DockerBackend().preflight(None)
