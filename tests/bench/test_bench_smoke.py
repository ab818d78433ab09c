"""Keeps bench/run working: workload 1 with 20 trials, proctor only (no Inspect AI, no
network). Times are printed by the bench, never asserted here."""

from __future__ import annotations

import json
import os
import py_compile
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BENCH = REPO / "bench"
sys.path.insert(0, str(BENCH))

import measure  # noqa: E402
import workloads  # noqa: E402


def test_throughput_workload_runs_for_proctor(tmp_path: Path) -> None:
    results = tmp_path / "latest.json"
    proc = subprocess.run(
        [str(BENCH / "run"), "--proctor-only", "--workloads", "throughput,cold", "--trials", "20",
         "--runs", "1", "--results", str(results), "--work-dir", str(tmp_path / "work")],
        capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(results.read_text())
    throughput = report["results"]["throughput"]
    assert throughput["trials"] == 20 and len(throughput["proctor"]["runs_s"]) == 1
    assert "inspect" not in throughput and "inspect_ai" not in report["versions"]
    assert report["machine"]["cores"] == os.cpu_count()
    assert report["command"].startswith("bench/run --proctor-only")
    assert "throughput, 20 trials" in proc.stdout
    assert not (tmp_path / "work").exists()  # the bench cleans up after itself


def test_agent_loop_workload_runs_for_proctor(tmp_path: Path) -> None:
    """The agent-loop row (issue 37's table): every trial takes its ten tool turns (the bench
    checks each passed) and the row is printed."""
    results = tmp_path / "latest.json"
    proc = subprocess.run(
        [str(BENCH / "run"), "--proctor-only", "--workloads", "agentloop", "--agent-trials", "3",
         "--runs", "1", "--results", str(results), "--work-dir", str(tmp_path / "work")],
        capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    row = json.loads(results.read_text())["results"]["agentloop"]
    assert row["trials"] == 3 and len(row["proctor"]["runs_s"]) == 1 and "inspect" not in row
    assert "agent loop, 3 trials × 10 tool-calling turns" in proc.stdout


def test_agent_suite_takes_ten_tool_turns(tmp_path: Path) -> None:
    suite = workloads.agent_suite(tmp_path / "suite", 2)
    out = tmp_path / "out"
    proc = subprocess.run(workloads.proctor_agent_argv(suite, 1, out), capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    trials = json.loads((out / "results.json").read_text())["trials"]
    assert [(t["status"], t["turns"]) for t in trials] == [("pass", 11)] * 2
    commands = [json.loads(line) for line in (out / "trials" / trials[0]["id"] / "trace.jsonl")
                .read_text().splitlines()]
    assert [c["command"] for c in commands if c["type"] == "command"] == [
        workloads.agent_command(j) for j in range(workloads.AGENT_TURNS)]


def test_generated_suite_is_valid(tmp_path: Path) -> None:
    suite = workloads.proctor_suite(tmp_path / "suite", 5)
    proc = subprocess.run([str(workloads.PROCTOR), "validate", str(suite)], capture_output=True,
                          text=True)
    assert proc.returncode == 0, proc.stderr
    assert "5 task(s)" in proc.stdout


def test_inspect_task_file_compiles(tmp_path: Path) -> None:
    # The peer is not installed here; the file must at least be valid Python.
    py_compile.compile(str(BENCH / "inspect_task.py"), cfile=str(tmp_path / "x.pyc"), doraise=True)
    args = workloads.inspect_argv(7, 3, tmp_path)
    assert args[args.index("-T") + 1] == "trials=7" and "--max-sandboxes" not in args
    args = workloads.inspect_agent_argv(7, 3, tmp_path)
    assert "inspect_task.py@agent_loop" in args and "turns=10" in args


def test_memory_of_a_process_tree(tmp_path: Path) -> None:
    # A parent holding ~50 MB and a child of its own: both are counted, each once.
    code = ("import subprocess, time; x = bytearray(50 * 2**20); x[::4096] = b'1' * len(x[::4096]);"
            "subprocess.run(['sleep', '0.5'])")
    m = measure.run([sys.executable, "-c", code], cwd=tmp_path, memory=True, interval=0.01)
    assert m.returncode == 0 and m.samples > 5
    assert 50 <= m.root_peak_rss_mb <= m.tree_peak_rss_mb < 2 * m.root_peak_rss_mb


def test_cpu_of_a_process_tree(tmp_path: Path) -> None:
    """A run's CPU time is its whole tree's: a child that burns 0.2 s of CPU counts (the
    bench keeps it beside the wall time), and the load average it started under."""
    burn = "import time\nwhile time.process_time() < 0.2: pass"
    code = f"import subprocess, sys; subprocess.run([sys.executable, '-c', {burn!r}])"
    m = measure.run([sys.executable, "-c", code], cwd=tmp_path)
    assert m.returncode == 0 and m.cpu_s >= 0.2 and m.load >= 0 and m.others_cpu_s >= 0
    # What the rest of the machine did meanwhile: a process outside the measured tree that
    # burns 0.3 s of CPU while the measured one sleeps is counted there, not in cpu_s.
    other = subprocess.Popen([sys.executable, "-c", burn.replace("0.2", "0.3")])
    m = measure.run([sys.executable, "-c", "import time; time.sleep(0.6)"], cwd=tmp_path)
    other.wait()
    assert m.cpu_s < 0.2 and m.others_cpu_s >= 0.2


def test_settling_before_a_run() -> None:
    """measure.settle writes dirty pages back, then says whether a quiet window came: any
    window is at least 0 % idle; none is more than 100 %."""
    assert measure.settle(max_wait=0, idle=0.0, window=0.01) is True
    assert measure.settle(max_wait=0, idle=1.01, window=0.01) is False


def test_reports_at_scale_runs(tmp_path: Path) -> None:
    """bench/reports_at_scale.py (docs/benchmarks.md's report figures) still runs: every
    format, the terminal table and `proctor show`, on 300 tasks."""
    proc = subprocess.run([sys.executable, str(BENCH / "reports_at_scale.py"), "--tasks", "300",
                           "--no-traces"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    labels = [line.split(":")[0] for line in proc.stdout.splitlines()]
    assert labels == ["scoring", "json", "junit", "md", "html", "terminal table", "show",
                      "show --failed"], proc.stdout
    assert "show: " in proc.stdout and "(306 lines)" in proc.stdout  # with `agents:`


def test_trial_requests_counts_what_a_trial_asks_of_its_box() -> None:
    """bench/trial_requests.py (docs/benchmarks.md's one-trial-at-a-time rows) still runs,
    and sees a trivial isolated trial's requests: one command (a traced one, given to the
    trial's tracer: its answer Z), one file opened, one kill, one new trial (not the first
    trial's: its box is new)."""
    proc = subprocess.run([sys.executable, str(BENCH / "trial_requests.py"), "--trials", "10"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    per_trial = {" ".join(line.split()[:3]): float(line.split()[3])
                 for line in proc.stdout.splitlines() if "per trial   median" in line}
    assert per_trial["OPEN -> O"] == 1.0, proc.stdout
    # `cli: sh` is found without a probe box of its own (clipath.on_system_path): no command
    # and no kill besides the trials' own
    assert per_trial["ORDER -> Z"] == per_trial["KILLALL -> A"] == 1.0, proc.stdout
    assert "RUN -> X" not in per_trial, proc.stdout  # the spawner starts none of it
    assert 0.85 <= per_trial["NEWTRIAL -> T"] <= 1.0, proc.stdout


def test_loop_time_splits_the_wall_time_of_the_loop() -> None:
    """bench/loop_time.py (docs/benchmarks.md's on-CPU / run-delay rows) still runs and reads
    the loop thread's scheduler statistics: time on a CPU, no more than the wall time."""
    proc = subprocess.run([sys.executable, str(BENCH / "loop_time.py"), "--trials", "10"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    wall = float(proc.stdout.split("wall ")[1].split()[0])
    on_cpu, waiting = (float(proc.stdout.split(k)[1].split()[0])
                       for k in ("on a CPU ", "waiting for one "))
    assert 0 < on_cpu <= wall and 0 <= waiting <= wall, proc.stdout


def test_view_at_scale_runs() -> None:
    """bench/view_at_scale.py (docs/benchmarks.md's `proctor view` figures) still runs: every
    page it times answers 200, on 300 tasks."""
    proc = subprocess.run([sys.executable, str(BENCH / "view_at_scale.py"), "--tasks", "300",
                           "--traced", "6"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    labels = [line.split(":")[0] for line in proc.stdout.splitlines()]
    assert labels == ["scoring", "index", "report, first (read, render)", "report, again",
                      "trial page", "trial page, traced", "side by side, traced", "next x20"]


def test_limiter_bench_runs_both_kinds_of_limit() -> None:
    """bench/limiter.py (docs/benchmarks.md's adaptive-vs-fixed rows) still runs: a
    rate-limited mock provider, the adaptive limit and a fixed one, every call served."""
    proc = subprocess.run([sys.executable, str(BENCH / "limiter.py"), "--limit", "1",
                           "--trials", "3", "--turns", "2", "--delay", "0.05",
                           "--retry-after", "0.1", "--fixed", "1"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout.splitlines()[-1])
    assert [r["config"] for r in rows] == ["adaptive", "fixed-1"]
    assert all(r["served"] == 6 and r["passed"] == 3 for r in rows), rows
    assert rows[0]["limiter"]["adaptive"] is True and rows[1]["refused"] == 0, rows


def test_the_harbor_floor_does_the_trials_work_and_checks_its_reward(tmp_path: Path) -> None:
    """bench/run's harbor row times the bare engine's sequence (run, cp, exec, cp, exec, cp,
    rm) against proctor: it must do the whole trial, exit non-zero when the reward is not 1,
    and leave no container behind."""
    from tests.docker.engine import require_engine

    require_engine()
    from proctor.sandbox.docker.images import ensure_base

    image = ensure_base()
    task = workloads.harbor_task(tmp_path / "good", image)
    assert subprocess.run(workloads.harbor_floor_argv(task, image), capture_output=True,
                          timeout=120).returncode == 0
    bad = workloads.harbor_task(tmp_path / "bad", image)
    (bad / "solution" / "solve.sh").write_text("true\n")  # never writes /tmp/done
    assert subprocess.run(workloads.harbor_floor_argv(bad, image), capture_output=True,
                          timeout=120).returncode != 0
    left = subprocess.run(["docker", "ps", "-aq", "--filter", "label=proctor.bench=floor"],
                          capture_output=True, text=True, check=True).stdout.split()
    assert left == []
    assert subprocess.run(workloads.docker_floor_argv(image, 2), capture_output=True,
                          timeout=120).returncode == 0


def test_both_tools_scratch_lies_on_the_work_dirs_file_system(tmp_path: Path) -> None:
    """bench/main.py: each tool's TMPDIR is under the work dir (a tmpfs by default where there
    is one), and the results say which file system that was."""
    import main as bench_main

    env = bench_main.env_for(tmp_path)
    assert Path(env["TMPDIR"]).is_dir() and Path(env["TMPDIR"]).parent == tmp_path
    if Path("/dev/shm").is_dir() and os.access("/dev/shm", os.W_OK):
        assert bench_main.default_work_dir().startswith("/dev/shm/")
        assert bench_main.file_system(Path("/dev/shm/proctor-bench")) == "tmpfs"
    assert bench_main.file_system(Path("/proc/self")) == "proc"


def test_a_ratio_is_judged_and_shown_unrounded() -> None:
    """19.9x faster is not 20x: the verdict and the table read the ratio of the medians
    (kept to 5 decimals), not one rounded to 3 (0.0502 -> 0.050, a goal "met")."""
    import main as bench

    loop = {"trials": 100, "proctor": {"median_s": 0.794}, "inspect": {"median_s": 15.82}}
    loop["ratio"] = round(0.794 / 15.82, bench.RATIO_DIGITS)
    (verdict,) = bench.judge({"agentloop": loop})
    assert not verdict["met"] and verdict["value"] == 0.05019
    row = bench.table({"agentloop": loop}, {"cores": 2, "cpu": "x", "memory_gb": 24})
    assert "**19.9×**" in row and "MISSED" in row
