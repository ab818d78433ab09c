"""Nothing is lost and nothing is left behind: SIGKILL then --resume, Ctrl-C, SIGTERM."""

from __future__ import annotations

import json
import os
import signal
import tempfile
import time
import uuid
from pathlib import Path

import pytest

from proctor.janitor import leftover_pids
from tests.helpers.cli import results

SLOW_SUITE = "cli: sh\ntasks:\n" + "".join(
    f"  - id: t{i:02d}\n    intent: x\n    solution: ['sleep 0.4; echo {i} > f; sleep 30 &']\n"
    f"    assert: [{{file_contains: {{path: f, text: '{i}'}}}}]\n" for i in range(12))


def wait_for_lines(path: Path, n: int, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and len(path.read_text().splitlines()) >= n:
            return
        time.sleep(0.05)
    raise AssertionError(f"{path} never reached {n} lines")


def marked_processes(marker: str) -> list[int]:
    pids = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            env = Path(f"/proc/{entry.name}/environ").read_bytes()
            state = Path(f"/proc/{entry.name}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if f"TEST_MARKER={marker}".encode() in env and state != "Z":
            cmd = Path(f"/proc/{entry.name}/cmdline").read_bytes().replace(b"\0", b" ")
            pids.append((int(entry.name), cmd.decode(errors="replace")))
    return pids


def temp_dirs(run_id: str) -> list[Path]:
    return list(Path(tempfile.gettempdir()).glob(f"proctor-{run_id}-*"))


@pytest.mark.slow
def test_sigkill_then_resume_holds_every_trial_exactly_once(cli, spec, tmp_path):
    spec(SLOW_SUITE)
    marker = uuid.uuid4().hex
    proc = cli.popen("run", "spec.yaml", "--agent", "oracle", "--concurrency", "2",
                     "--output-dir", "run", "-q", env={"TEST_MARKER": marker})
    jsonl = tmp_path / "run" / "results.jsonl"
    wait_for_lines(jsonl, 3)
    proc.kill()
    proc.wait()
    run_id = json.loads((tmp_path / "run" / "run.json").read_text())["run_id"]
    done_before = len(jsonl.read_text().splitlines())
    assert 3 <= done_before < 12
    # A line cut in half by the kill must not poison the resume.
    with jsonl.open("a") as f:
        f.write('{"id": "t99.r0", "task_')
    out = cli("run", "--resume", "run", "-q", env={"TEST_MARKER": marker})
    assert out.returncode == 0, out.stdout + out.stderr
    r = results(tmp_path / "run")
    ids = [t["id"] for t in r["trials"]]
    assert sorted(ids) == [f"t{i:02d}.r0" for i in range(12)]
    assert r["summary"]["passed"] == 12 and r["complete"] is True
    # The resume cleaned up what the killed run left: its processes and its temp dir.
    assert marked_processes(marker) == []
    assert temp_dirs(run_id) == []
    assert leftover_pids(run_id) == []


@pytest.mark.slow
@pytest.mark.parametrize("sig,code", [(signal.SIGINT, 130), (signal.SIGTERM, 130)])
def test_interrupt_keeps_finished_trials_and_leaves_nothing_behind(cli, spec, tmp_path, sig, code):
    spec(SLOW_SUITE)
    marker = uuid.uuid4().hex
    proc = cli.popen("run", "spec.yaml", "--agent", "oracle", "--concurrency", "2",
                     "--output-dir", "run", "-q", env={"TEST_MARKER": marker})
    jsonl = tmp_path / "run" / "results.jsonl"
    wait_for_lines(jsonl, 2)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == code, err
    assert "Traceback" not in err
    assert "Finish the run with:\n  proctor run --resume run\n" in err  # what to do next
    run_id = json.loads((tmp_path / "run" / "run.json").read_text())["run_id"]
    r = results(tmp_path / "run")
    assert r["interrupted"] is True and r["complete"] is False
    assert len(r["trials"]) == len(jsonl.read_text().splitlines()) >= 2
    assert marked_processes(marker) == []
    assert temp_dirs(run_id) == []
    # ... and --resume finishes the rest.
    out = cli("run", "--resume", "run", "-q")
    assert out.returncode == 0, out.stderr
    assert results(tmp_path / "run")["summary"]["trials"] == 12


# PID 1 of a fresh PID namespace that reaps nothing but proctor itself, as a container's
# PID 1 may: whatever proctor leaves unreaped (a box's bubblewrap orphaned at Ctrl-C) stays
# here as a zombie, and is listed.
_NO_REAPER = r"""
import json, os, signal, subprocess, sys, time
from pathlib import Path
signal.signal(signal.SIGINT, signal.SIG_DFL)
jsonl = Path(sys.argv[1])
p = subprocess.Popen(sys.argv[2:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
deadline = time.monotonic() + 60
while time.monotonic() < deadline and (not jsonl.exists() or len(jsonl.read_text().splitlines()) < 2):
    time.sleep(0.05)
p.send_signal(signal.SIGINT)
p.wait(60)
time.sleep(0.5)
zombies = []
for pid in filter(str.isdigit, os.listdir("/proc")):
    stat = Path(f"/proc/{pid}/stat").read_text()
    if stat.rsplit(")", 1)[1].split()[0] == "Z":
        zombies.append(stat)
print(json.dumps({"rc": p.returncode, "zombies": zombies}))
"""


@pytest.mark.slow
def test_ctrl_c_leaves_no_zombie(spec, tmp_path):
    import shutil
    import subprocess
    import sys

    from tests.helpers import PROCTOR

    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("needs root and unshare(1) for a PID namespace of its own")
    spec(SLOW_SUITE)
    argv = ["unshare", "--pid", "--fork", "--mount-proc", sys.executable, "-c", _NO_REAPER,
            str(tmp_path / "run" / "results.jsonl"), PROCTOR, "run", "spec.yaml", "--agent",
            "oracle", "--concurrency", "4", "--output-dir", "run", "-q"]
    out = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=180)
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert report["rc"] == 130, out.stderr
    assert report["zombies"] == []
