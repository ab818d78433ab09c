"""Once a run's last trial has begun (`drain`), the box of each trial still running is
closed as that trial ends, beside the others, instead of kept idle for the run's end: no
trial will take it. Whatever is closed leaves nothing behind (process, cgroup, directory)."""

from __future__ import annotations

import os
import sys

import pytest

from proctor.sandbox.base import SandboxSpec
from proctor.sandbox.local.backend import LocalBackend
from proctor.sandbox.namespaces import missing
from proctor.sandbox.pool import BoxPool


@pytest.fixture(autouse=True)
def _boxes():
    if missing() is not None:
        pytest.skip(f"no namespace box here: {missing()}")


def _gone(slot) -> list[str]:
    """What of a closed slot is still there."""
    left = []
    if slot.box.bwrap.poll() is None:
        left.append("bubblewrap running")
    try:
        os.kill(slot.box.spawner_pid, 0)
        left.append("spawner alive")
    except ProcessLookupError:
        pass
    if slot.root.exists():
        left.append(f"{slot.root} exists")
    if slot.cgroup is not None:
        left += [f"cgroup {d}" for d in slot.cgroup.dirs.values() if d.exists()]
    return left


async def test_a_drained_pool_closes_each_box_as_its_trial_ends(tmp_path):
    backend = LocalBackend(tmp_path / "scratch", pool_size=2)

    def spec(name: str) -> SandboxSpec:
        return SandboxSpec(trial_id=name, root=tmp_path / name, env={})

    first, running = await backend.create(spec("t0")), await backend.create(spec("t1"))
    try:
        idle = first.slot
        await first.close()
        assert not idle.closed  # kept for the next trial
        backend.drain()  # the last trial begins ...
        last = await backend.create(spec("t2"))
        assert last.slot is idle  # ... and takes the idle box, as before
        assert (await last.exec("echo ok", timeout=10)).stdout.strip() == "ok"
        ended = running.slot
        await running.close()  # a trial ends while the last one runs: its box goes now
        assert ended.closed and _gone(ended) == []
        await last.close()
        assert idle.closed and _gone(idle) == []
    finally:
        await backend.close()
    assert os.listdir(tmp_path / "scratch") == []


def test_a_run_drains_its_pool_when_its_last_trial_begins(tmp_path, monkeypatch):
    """Through `proctor run`: 7 trials at concurrency 3 drain once, as the 7th begins; the
    run's end then finds fewer boxes than trials at once to close (all 3 without)."""
    from proctor import cli
    from proctor.executors import local

    began, drained, at_close = [], [], []
    real_run, real_drain, real_close = local.run_trial, BoxPool.drain, BoxPool.close

    async def run_trial(*args, **kwargs):  # type: ignore[no-untyped-def]
        began.append(1)
        return await real_run(*args, **kwargs)

    def drain(pool):  # type: ignore[no-untyped-def]
        drained.append(len(began))
        real_drain(pool)

    async def close(pool):  # type: ignore[no-untyped-def]
        at_close.append(len(pool._made))
        await real_close(pool)

    monkeypatch.setattr(local, "run_trial", run_trial)
    monkeypatch.setattr(BoxPool, "drain", drain)
    monkeypatch.setattr(BoxPool, "close", close)
    tasks = "".join(f"""
  - id: t{i}
    intent: write hello into out.txt
    solution: ["echo hello > out.txt"]
    assert: [{{file_contains: {{path: out.txt, text: hello}}}}]""" for i in range(7))
    (tmp_path / "spec.yaml").write_text("cli: sh\ntasks:" + tasks + "\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PROCTOR_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(sys, "argv", ["proctor", "run", "spec.yaml", "--agent", "oracle",
                                      "--concurrency", "3", "-q", "--output-dir", "run"])
    with pytest.raises(SystemExit) as ended:
        cli.main()
    assert ended.value.code in (0, None)
    assert drained == [6]  # called just before the 7th trial's run_trial
    assert len(at_close) == 1 and at_close[0] < 3
