"""`proctor init` examples: they validate, and their solutions really solve them."""

from __future__ import annotations

import os
import re
import shutil
import subprocess

import pytest

from proctor.spec.init import write_examples
from proctor.spec.load import load_specs


@pytest.mark.skipif(shutil.which("git") is None, reason="the example suite drives git")
def test_example_solutions_pass_their_checks(tmp_path):
    # Not the runner: a smoke test that each solution satisfies its own checks.
    write_examples(str(tmp_path / "ex"))
    for task in load_specs([str(tmp_path / "ex")]).tasks:
        work = tmp_path / task.id
        work.mkdir()
        for path, content in task.files.items():
            (work / path).write_text(content)
        env = {**os.environ, **task.env}
        out = ""
        for cmd in task.setup + task.solution:
            proc = subprocess.run(["sh", "-c", cmd], cwd=work, env=env, capture_output=True, text=True)
            assert proc.returncode == 0, (task.id, cmd, proc.stderr)
            out = proc.stdout
        for check in task.checks:
            cfg = check.config
            if check.type in ("file_exists",):
                assert (work / cfg.path).exists(), (task.id, check.name)
            elif check.type == "output_equals":
                assert out.strip() == cfg.text.strip()
            elif check.type in ("verify", "command_exit"):
                proc = subprocess.run(["sh", "-c", getattr(cfg, "run", None) or cfg.command],
                                      cwd=work, env=env, capture_output=True, text=True)
                assert proc.returncode == 0, (task.id, check.name)
                if check.type == "verify" and cfg.output_equals is not None:
                    assert proc.stdout.strip() == cfg.output_equals
            elif check.type == "file_content":
                text = (work / cfg.path).read_text()
                assert cfg.contains in text and re.search(cfg.pattern, text, re.MULTILINE)


def test_write_examples_is_all_or_nothing(tmp_path):
    (tmp_path / "scenario.yaml").write_text("mine\n")
    from proctor.errors import UsageError

    with pytest.raises(UsageError):
        write_examples(str(tmp_path))
    assert not (tmp_path / "cli-bench.yaml").exists()
