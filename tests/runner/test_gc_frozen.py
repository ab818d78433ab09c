"""What a run loads before its trials (every task, its models, the plan) lives to its end: the
cyclic collector's full passes during the trials skip it (gc.freeze), and a process that runs
again (a test, a notebook) gets it back in the collector's sight afterwards."""

from __future__ import annotations

import gc
import sys

import pytest

SUITE = """\
cli: sh
tasks:
  - id: one
    intent: write hello into out.txt
    solution: ["echo hello > out.txt"]
    assert:
      - file_contains: {path: out.txt, text: hello}
"""


def test_the_loaded_run_is_frozen_while_its_trials_run(tmp_path, monkeypatch):
    from proctor import cli
    from proctor.run import execute

    frozen: list[int] = []
    real = execute._execute

    async def spy(*args, **kwargs):  # type: ignore[no-untyped-def]
        frozen.append(gc.get_freeze_count())
        return await real(*args, **kwargs)

    monkeypatch.setattr(execute, "_execute", spy)
    (tmp_path / "spec.yaml").write_text(SUITE)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", ["proctor", "run", "spec.yaml", "--agent", "oracle",
                                      "--isolation", "none", "-q", "--output-dir", "run"])
    before = gc.get_freeze_count()
    with pytest.raises(SystemExit) as ended:
        cli.main()
    assert ended.value.code in (0, None)
    assert frozen and frozen[0] > before + 1000  # the task, its models, the plan: frozen
    assert gc.get_freeze_count() == before  # and back in sight once the run is over
