"""The docker backend's preflight: a clear exit-2 error before any trial, never a traceback."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import pytest

from proctor.dockercli import engine_problem
from proctor.errors import SetupError
from proctor.sandbox.docker.backend import DockerBackend
from tests.docker.engine import require_engine


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
        DockerBackend().preflight()
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
    assert DockerBackend().preflight() is True  # trials are isolated (in containers)


def test_real_client_without_daemon(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The real client (./setup.sh installs one), pointed at a socket no daemon listens on."""
    if shutil.which("docker") is None:
        require_engine()  # skips where ./setup.sh said no engine can run; fails otherwise
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-daemon.sock")
    why = engine_problem()
    assert why is not None and "Cannot connect to the Docker daemon" in why
    assert f"unix://{tmp_path}/no-daemon.sock" in why


def test_not_root_is_a_clear_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _fake_docker(tmp_path, "echo 28.2.2\n")
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    with pytest.raises(SetupError, match="--backend docker needs proctor to run as root"):
        DockerBackend().preflight()


@pytest.mark.parametrize(("said", "outcome"), [
    ("unavailable: dockerd did not start", pytest.skip.Exception),
    ("ready", pytest.fail.Exception),
    (None, pytest.fail.Exception),  # ./setup.sh never ran here
])
def test_the_docker_tests_skip_only_where_setup_found_no_engine(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, said, outcome) -> None:
    from tests.docker import engine

    _fake_docker(tmp_path, "echo 'Cannot connect to the Docker daemon.' >&2; exit 1\n")
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    # No engine on the socket either (the real one here would answer `GET /_ping`).
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-daemon.sock")
    monkeypatch.setattr(engine, "STATUS", tmp_path / "setup-docker")
    if said is not None:
        (tmp_path / "setup-docker").write_text(said + "\n")
    with pytest.raises(outcome) as raised:
        engine.require_engine()
    assert "Cannot connect to the Docker daemon." in str(raised.value)
    if said is not None and said.startswith("unavailable"):
        assert "dockerd did not start" in str(raised.value)
    else:
        assert "run ./setup.sh" in str(raised.value)


def test_an_answering_engine_is_required_not_skipped(monkeypatch: pytest.MonkeyPatch,
                                                      tmp_path: Path) -> None:
    from tests.docker import engine

    _fake_docker(tmp_path, "echo 28.2.2\n")
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(engine, "STATUS", tmp_path / "setup-docker")
    (tmp_path / "setup-docker").write_text("unavailable: stale\n")
    assert engine.require_engine() is None  # whatever setup said then, it answers now
