"""A suite's `cli` found without a probe box (clipath.on_system_path) only where a box is
sure to find it too: every answer compared with `command -v` in a real local box."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from proctor import clipath
from proctor.model import AgentDef, RunOptions, TaskDef
from proctor.sandbox.base import SandboxSpec
from proctor.sandbox.local.backend import LocalBackend
from proctor.sandbox.namespaces import missing


@pytest.fixture
def system_dir(tmp_path):
    """A directory under /opt (a system directory every box shows as it is), removed after:
    programs there that a box finds, and ones it does not."""
    if missing() is not None:
        pytest.skip(f"no namespace box here: {missing()}")
    if not os.access("/opt", os.W_OK):
        pytest.skip("/opt is not writable here")
    top = Path(tempfile.mkdtemp(prefix="proctor-test-cli-", dir="/opt"))
    try:
        top.chmod(0o755)
        (top / "bin").mkdir(mode=0o755)
        (top / "lib").mkdir(mode=0o755)
        (top / "closed").mkdir(mode=0o700)
        for path, mode in ((top / "bin" / "tool", 0o755), (top / "bin" / "private", 0o700),
                           (top / "lib" / "real", 0o755), (top / "closed" / "hidden", 0o755),
                           (tmp_path / "outside", 0o755)):
            path.write_text("#!/bin/sh\necho hi\n")
            path.chmod(mode)
        (top / "bin" / "inward").symlink_to("../lib/real")  # stays in /opt: shown
        (top / "bin" / "outward").symlink_to(tmp_path / "outside")  # leaves it: not shown
        (top / "bin" / "loop").symlink_to("loop")
        (top / "bin" / "adir").mkdir(mode=0o755)
        yield top
    finally:
        shutil.rmtree(top, ignore_errors=True)


async def test_a_cli_found_without_a_box_is_found_in_the_box(system_dir, tmp_path):
    path = f"{system_dir}/closed:{system_dir}/bin:/usr/bin:/bin"
    cases = {"tool": True, "inward": True, "sh": True,  # sure: no box needed
             # not sure (a box may or may not find it): asked of a box
             "private": False, "outward": False, "hidden": False, "loop": False,
             "adir": False, "cd": False, "no-such-cli": False, f"{system_dir}/bin/tool": False}
    backend = LocalBackend(tmp_path / "scratch")
    sandbox = await backend.create(SandboxSpec(trial_id="probe", root=tmp_path / "probe",
                                               env={"PATH": path}))
    try:
        for name, sure in cases.items():
            assert clipath.on_system_path(name, path) is sure, name
            res = await sandbox.exec(f"command -v '{name}'", timeout=10)
            in_box = res.exit_code == 0 and bool(res.stdout.strip())
            assert in_box or not sure, (name, res)
        # What the shortcut leaves to a box: the box's own answers, for the record.
        res = await sandbox.exec("command -v outward hidden loop adir", timeout=10)
        assert res.stdout.strip() == "", res
    finally:
        await sandbox.close()
        await backend.close()


def test_the_trivial_suites_cli_builds_no_probe_box(monkeypatch):
    """`cli: sh` on the local backend: no sandbox (its own backend, box and loop) is built
    to find it; with a version to run, a sandbox is still asked."""
    asked: list[str] = []

    async def probe(tasks, options, env):
        asked.extend(t.cli for t in tasks)
        return {f"cli {t.cli}": "v1" for t in tasks if t.version_command}

    monkeypatch.setattr(clipath, "_check_all", probe)

    def task(**kw):
        return TaskDef(id="t", dialect="suite", source="s.yaml", base_dir=".", prompt="p",
                       agent=AgentDef(type="oracle"), checks=[], **kw)

    options = RunOptions()
    assert clipath.check_clis([task(cli="sh")], options, {}) == {}
    assert asked == []
    assert clipath.check_clis([task(cli="sh", version_command="sh -c 'echo v1'")],
                              options, {}) == {"cli sh": "v1"}
    assert clipath.check_clis([task(cli="sh", env={"PATH": "/nowhere"})], options, {}) == {}
    assert clipath.check_clis([task(cli="sh")], RunOptions(backend="docker"), {}) == {}
    assert asked == ["sh", "sh", "sh"]


def test_a_suites_cli_is_looked_up_once_per_path(monkeypatch):
    """1,000 tasks of one `cli` walk PATH once, not once a task (it was ~0.1 s of a
    1,000-task run's start); a task with another PATH gets its own look."""
    looks: list[tuple[str, str]] = []
    real = clipath.on_system_path

    def counted(name: str, path: str) -> bool:
        looks.append((name, path))
        return real(name, path)

    monkeypatch.setattr(clipath, "on_system_path", counted)

    def task(i: int, **kw):
        return TaskDef(id=f"t{i}", dialect="suite", source="s.yaml", base_dir=".", prompt="p",
                       agent=AgentDef(type="oracle"), checks=[], cli="sh", **kw)

    tasks = [task(i) for i in range(50)] + [task(50, env={"PATH": "/usr/bin:/bin"})]
    assert clipath.check_clis(tasks, RunOptions(), {}) == {}
    assert [name for name, _ in looks] == ["sh", "sh"]
    assert looks[1][1] == "/usr/bin:/bin" != looks[0][1]
