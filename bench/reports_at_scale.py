"""Reports at scale: every format for a run of 10,000 tasks (one trial each), with every
trial's trajectory, timed in CPU and wall time, and each `proctor report` command measured
whole (CPU, peak memory).

    .venv/bin/python bench/reports_at_scale.py [--tasks 10000] [--best-of N] [--no-traces]
                                               [--keep DIR | --reuse DIR] [--browser]

The results come from the real scorer. Each trial gets a realistic trace.jsonl and audit.jsonl
in a run directory (an LLM agent's 6 turns, 6 commands with 1-8 kB of output each, a long
system prompt, 40 file writes), digested as `proctor run --format html` does when each trial
ends (the cost per trial is printed). Then each renderer (json, junit, md, html with every
trajectory embedded, the terminal table, `proctor show`'s list of every trial) is timed
alone, in this process (best of N, CPU), and `proctor report RUN --format html|md|junit` is
run as a command: its CPU time (user + sys) and its peak resident memory (bench/measure.py).
Targets (issue 27): each of html, md and junit <= 1 s of CPU, <= 300 MB, page <= 25 MB.

`--no-traces`: the formats without trajectories only (quick; the smoke test). `--keep DIR`
leaves the run directory (and its report.html) there, to open in a browser. `--browser`
opens it in headless Chromium (selenium, chromium-driver) and times loading the page and
opening a failed trial's trajectory.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import random
import resource
import shutil
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from proctor.model import AgentDef, TaskDef
from proctor.report import render
from proctor.report.show import TrialFilter, show_main
from proctor.report.terminal import print_summary
from proctor.report.trajectory import decode, digest
from proctor.results import new_check, new_trial
from proctor.scoring import summarize


def results_for(n: int) -> dict:
    tasks = [TaskDef(id=f"task-{i:05d}", dialect="suite", source="s.yaml", base_dir=".",
                     prompt="", agent=AgentDef(), checks=[]) for i in range(n)]
    trials = [new_trial(id=f"task-{i:05d}.m.r0", task_id=f"task-{i:05d}", model="mock/m",
                        help_mode="injected", replica=0, params={},
                        status="pass" if i % 3 else "fail", composite_score=float(i % 3 > 0),
                        checks=[new_check(name="exit_code#0", type="exit_code",
                                          passed=i % 3 > 0, score=1.0, weight=1.0, gate=False,
                                          message="" if i % 3 else "exited with 1")],
                        turns=2, duration_s=1.5, agent="llm")
              for i in range(n)]
    t0 = time.perf_counter()
    scored = summarize(trials, tasks)
    print(f"scoring: {time.perf_counter() - t0:.3f} s")
    return {"run_id": "bench", "started_at": "2026-01-01T00:00:00+00:00", "complete": True,
            "trials": trials, **scored}


WORDS = (
    "src", "tests", "build", "error", "warning", "main", "branch", "commit", "file", "line",
    "module", "import", "value", "config", "http", "json", "table", "index", "cache", "query",
    "result", "return", "self", "none", "true", "false")


def _output(rng: random.Random, size: int) -> str:
    lines = []
    while sum(len(x) + 1 for x in lines) < size:
        lines.append(f"{rng.choice(WORDS)}/{rng.choice(WORDS)}.py:{rng.randint(1, 999)}: "
                     + " ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 12))))
    return "\n".join(lines) + "\n"


def write_traces(run_dir: Path, trials: list[dict]) -> None:
    """A realistic trace and audit log per trial: what an LLM agent leaves behind."""
    rng = random.Random(7)
    system = "You are an agent working in a shell. " + _output(rng, 3000)
    for t in trials:
        d = run_dir / "trials" / t["id"]
        d.mkdir(parents=True)
        events, history = [], 0
        messages = [{"role": "user", "content": "Make the tests pass: " + _output(rng, 300)}]
        for turn in range(1, 7):
            command = f"{rng.choice(WORDS)} --{rng.choice(WORDS)} {rng.choice(WORDS)}"
            call = {"id": f"c{turn}", "name": "run_command",
                    "arguments": {"command": command}}
            request = {"history": history, "messages": messages[history:]}
            if turn == 1:
                request["system"] = system
            events.append({"type": "model_call", "model": "mock/m", "turn": turn,
                           "request": request,
                           "response": {"text": "Let me look. " + _output(rng, 120),
                                        "tool_calls": [call]},
                           "usage": {"input": 1500 * turn, "output": 60}, "latency_s": 0.9,
                           "attempt": 1})
            history = len(messages)
            out = _output(rng, rng.randint(1000, 8000))
            events.append({"type": "command", "command": command, "exit_code": turn % 2,
                           "stdout": out, "stderr": _output(rng, 200) if turn % 2 else "",
                           "duration_s": 0.05, "timed_out": False, "truncated": False,
                           "source": "agent"})
            messages += [{"role": "assistant", "content": "", "tool_calls": [call]},
                         {"role": "tool", "tool_call_id": call["id"], "content": out}]
        events.append({"type": "agent_output", "output": "Done: " + _output(rng, 200)})
        audit = [{"type": "file_write", "details": {"path": f"src/{rng.choice(WORDS)}{i}.py",
                                                    "size": rng.randint(10, 9000)}}
                 for i in range(40)]
        (d / "trace.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
        (d / "audit.jsonl").write_text("".join(json.dumps(e) + "\n" for e in audit))


def show_lines(run_dir: str, only: TrialFilter) -> str:
    """`proctor show RUN_DIR` (120 columns): results.json read and every trial listed."""
    with contextlib.redirect_stdout(io.StringIO()) as out:
        show_main(run_dir, None, only)
    return f"{out.getvalue().count(chr(10))} lines"


def docs_of(page: str) -> list[dict]:
    """The trajectory documents embedded in a report.html."""
    start = page.index('id="trajectories"')
    start = page.index(">", start) + 1
    return [decode(b) for b in json.loads(page[start:page.index("</script>", start)]) if b]


def report_command(run_dir: Path, fmt: str, best_of: int = 1) -> str:
    """`proctor report RUN --format FMT` as a user runs it: CPU (user + sys) and peak RSS,
    the run with the least CPU of `best_of`."""
    sys.path.insert(0, str(Path(__file__).parent))
    from measure import run as measured

    proctor = Path(sys.executable).parent / "proctor"
    runs = []
    for _ in range(best_of):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        m = measured([str(proctor), "report", str(run_dir), "--format", fmt], cwd=run_dir,
                     memory=True, interval=0.01)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if m.returncode:
            raise SystemExit(m.stderr_tail)
        runs.append(((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime),
                     m))
    cpu, m = min(runs, key=lambda r: r[0])
    return (f"cpu {cpu:.2f} s, wall {m.wall_s:.2f} s, peak RSS {m.root_peak_rss_mb:.0f} MB")


def browse(page: Path) -> None:
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    opts = Options()
    opts.binary_location = "/usr/bin/chromium"
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"):
        opts.add_argument(arg)
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=opts)
    try:
        driver.get(page.resolve().as_uri())
        loaded = driver.execute_script(
            "return performance.getEntriesByType('navigation')[0].domContentLoadedEventEnd")
        opened = driver.execute_async_script("""
            var done = arguments[arguments.length - 1], t0 = performance.now();
            var rows = document.querySelectorAll('#trials tbody[data-status=fail]');
            var tb = rows[rows.length - 1];
            tb.querySelector('tr.trial').click();
            (function wait() {
              if (tb.querySelector('.traj .step')) done(performance.now() - t0);
              else setTimeout(wait, 5);
            })();""")
        print(f"chromium: page ready {loaded / 1000:.2f} s; a failed trial's trajectory "
              f"drawn {opened:.0f} ms after the click")
    finally:
        driver.quit()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", type=int, default=10_000)
    ap.add_argument("--keep", type=Path, help="write the run directory with traces here")
    ap.add_argument("--browser", action="store_true", help="time the page in headless Chromium")
    ap.add_argument("--best-of", type=int, default=1, metavar="N",
                    help="time each format N times and print the fastest (a busy machine)")
    ap.add_argument("--no-traces", action="store_true",
                    help="only the formats without trajectories (quick)")
    ap.add_argument("--reuse", type=Path, metavar="DIR",
                    help="time the reports of a run directory an earlier --keep DIR left "
                         "(traces and digests made): quicker on a busy machine")
    args = ap.parse_args()
    if args.reuse:
        args.keep = args.reuse
        results = json.loads((args.reuse / "results.json").read_text())
    else:
        results = results_for(args.tasks)

    def timed(label: str, fn: Any) -> None:
        best, wall, note = float("inf"), float("inf"), ""
        for _ in range(args.best_of):
            t0, c0 = time.perf_counter(), time.process_time()
            note = fn()
            best = min(best, time.process_time() - c0)
            wall = min(wall, time.perf_counter() - t0)
        print(f"{label}: {wall:.3f} s, cpu {best:.3f} s{f' ({note})' if note else ''}")

    from rich.console import Console

    if args.no_traces:
        for fmt in ("json", "junit", "md", "html"):
            timed(fmt, lambda fmt=fmt: f"{len(render(fmt, results, {})) / 1e6:.1f} MB")
        timed("terminal table",
              lambda: print_summary(results, Console(file=io.StringIO(), width=120)))
        os.environ["COLUMNS"] = "120"
        with tempfile.TemporaryDirectory(prefix="proctor-bench-") as d:
            (Path(d) / "results.json").write_text(json.dumps(results))
            for label, only in (("show", TrialFilter()),
                                ("show --failed", TrialFilter(failed=True))):
                timed(label, lambda only=only, d=d: show_lines(d, only))
        return

    run_dir = args.keep or Path(tempfile.mkdtemp(prefix="proctor-bench-"))
    try:
        if not args.reuse:
            t0 = time.perf_counter()
            write_traces(run_dir, results["trials"])
            (run_dir / "results.json").write_text(json.dumps(results))
            (run_dir / "run.json").write_text(json.dumps({"run_id": "bench"}))
            raw = sum(f.stat().st_size for f in (run_dir / "trials").rglob("*.jsonl"))
            print(f"traces written: {time.perf_counter() - t0:.1f} s ({raw / 1e6:.0f} MB of "
                  "jsonl)")
            c0 = time.process_time()
            for t in results["trials"]:  # what `proctor run --format html` does as each ends
                digest(run_dir / "trials" / t["id"])
            cpu = time.process_time() - c0
            print(f"digest, when each trial ends: {1000 * cpu / len(results['trials']):.1f} ms "
                  "of cpu per trial")
        for fmt in ("json", "junit", "md"):
            timed(fmt, lambda fmt=fmt: f"{len(render(fmt, results, {}, run_dir)) / 1e6:.1f} MB")
        page = [""]

        def html() -> str:
            page[0] = render("html", results, {}, run_dir)
            return f"{len(page[0].encode()) / 1e6:.1f} MB"

        timed("html with every trajectory", html)
        (run_dir / "report.html").write_text(page[0], encoding="utf-8")
        levels = Counter(d["limit"] for d in docs_of(page[0]))
        print("characters kept per text, trials: "
              + ", ".join(f"{k}: {n}" for k, n in sorted(levels.items(), reverse=True)))
        timed("terminal table",
              lambda: print_summary(results, Console(file=io.StringIO(), width=120)))
        os.environ["COLUMNS"] = "120"
        for label, only in (("show", TrialFilter()), ("show --failed", TrialFilter(failed=True))):
            timed(label, lambda only=only: show_lines(str(run_dir), only))
        for fmt in ("html", "md", "junit"):
            print(f"proctor report --format {fmt}: "
                  f"{report_command(run_dir, fmt, args.best_of)}")
        if args.browser:
            browse(run_dir / "report.html")
    finally:
        if not args.keep:
            shutil.rmtree(run_dir)


if __name__ == "__main__":
    main()
