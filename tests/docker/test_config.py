"""`backend = "docker"` in proctor.toml: the default for --backend; the flag still wins."""

from __future__ import annotations

import pytest

from tests.helpers.cli import results, run_dir_of

SPEC = """\
version: 1
id: where
task: {prompt: x}
agent: {type: oracle}
solution: ["true"]
invariants:
  ok: {description: x, check: {type: command_exit, command: "true"}}
"""


@pytest.mark.slow
def test_the_config_picks_the_backend_and_the_flag_wins(base_image, cli, tmp_path):
    (tmp_path / "spec.yaml").write_text(SPEC)
    (tmp_path / "proctor.toml").write_text('backend = "docker"\n')
    out = cli("run", "spec.yaml", "-q", timeout=300)
    assert out.returncode == 0, out.stderr
    assert results(run_dir_of(out))["isolation"]["backend"] == "docker"
    out = cli("run", "spec.yaml", "-q", "--backend", "local")
    assert out.returncode == 0, out.stderr
    assert results(run_dir_of(out))["isolation"]["backend"] == "local"


def test_an_unknown_backend_in_the_config_is_a_usage_error(cli, tmp_path):
    (tmp_path / "spec.yaml").write_text(SPEC)
    (tmp_path / "proctor.toml").write_text('model = "mock/solver"\nbackend = "podman"\n')
    out = cli("run", "spec.yaml", "--output-dir", "run")
    assert out.returncode == 2 and not (tmp_path / "run").exists()
    assert out.stderr.startswith("proctor: proctor.toml:2:1: backend: Input should be 'local' "
                                 "or 'docker'"), out.stderr
