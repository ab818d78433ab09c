"""Hostile agents, run through the real `proctor run`: each attack is contained, and the
honest twin of the same task still passes."""

from __future__ import annotations

import json
import textwrap

import pytest


@pytest.fixture
def run_spec(tmp_path, cli):
    """run_spec(yaml, *args) -> results.json of `proctor run spec.yaml --agent oracle`."""
    counter = iter(range(1000))

    def run(text: str, *args: str, name: str = "spec.yaml", expect: int | None = None,
            env: dict | None = None, timeout: float = 180) -> dict:
        spec = tmp_path / name
        spec.parent.mkdir(parents=True, exist_ok=True)
        spec.write_text(textwrap.dedent(text))
        out_dir = f"run{next(counter)}"
        argv = ["run", name, "--output-dir", out_dir, "-q", *args]
        if "--agent" not in args:
            argv += ["--agent", "oracle"]
        proc = cli(*argv, env=env, timeout=timeout)
        assert "Traceback" not in proc.stderr, proc.stderr
        if expect is not None:
            assert proc.returncode == expect, proc.stdout + proc.stderr
        path = tmp_path / out_dir / "results.json"
        assert path.exists(), proc.stdout + proc.stderr
        return json.loads(path.read_text())
    return run

