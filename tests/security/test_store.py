"""The store cannot be forged, and --resume re-reads no changed spec: every results.jsonl
line is signed with a per-run key kept outside the run directory."""

from __future__ import annotations

import json
import signal
import time

from tests.helpers.cli import results

FAILING = """
cli: sh
tasks:
  - id: graded
    intent: answer
    solution: ["echo wrong > answer.txt"]
    assert: [{file_contains: {path: answer.txt, text: right}}]
"""

SLOW = "cli: sh\ntasks:\n" + "".join(
    f"  - id: t{i}\n    intent: x\n    solution: ['sleep 0.3; echo {i} > f']\n"
    f"    assert: [{{file_contains: {{path: f, text: '{i}'}}}}]\n" for i in range(8))


def forged(line: dict) -> str:
    return json.dumps({**line, "status": "pass", "composite_score": 1.0,
                       "checks": [{**c, "passed": True, "score": 1.0} for c in line["checks"]]})


def test_a_forged_line_is_rejected_and_its_trial_runs_again(cli, tmp_path):
    (tmp_path / "spec.yaml").write_text(FAILING)
    out = cli("run", "spec.yaml", "--agent", "oracle", "--output-dir", "run", "-q")
    assert out.returncode == 1
    jsonl = tmp_path / "run" / "results.jsonl"
    [real] = [json.loads(x) for x in jsonl.read_text().splitlines()]
    assert "sig" in real and real["status"] == "fail"
    real.pop("sig")
    with jsonl.open("a") as f:  # unsigned, and signed with a made-up key
        f.write(forged(real) + "\n")
        f.write(json.dumps({**json.loads(forged(real)), "sig": "0" * 64}) + "\n")
    (tmp_path / "run" / "results.json").unlink()
    out = cli("run", "--resume", "run", "-q")
    assert "2 line(s) not written by this run" in out.stderr, out.stderr
    r = results(tmp_path / "run")
    assert [t["status"] for t in r["trials"]] == ["fail"]
    assert '"status": "pass"' not in jsonl.read_text()


def test_a_line_from_another_run_is_not_trusted(cli, tmp_path):
    (tmp_path / "spec.yaml").write_text(FAILING)
    assert cli("run", "spec.yaml", "--agent", "oracle", "--output-dir", "a", "-q").returncode == 1
    assert cli("run", "spec.yaml", "--agent", "oracle", "--output-dir", "b", "-q").returncode == 1
    line = (tmp_path / "a" / "results.jsonl").read_text()
    (tmp_path / "b" / "results.jsonl").write_text(line)
    (tmp_path / "b" / "results.json").unlink()
    out = cli("run", "--resume", "b", "-q")
    assert "1 line(s) not written by this run" in out.stderr


def test_resume_refuses_a_changed_spec_and_resumes_an_unchanged_one(cli, tmp_path):
    spec = tmp_path / "spec.yaml"
    for changed in (True, False):
        spec.write_text(SLOW)
        run = f"run-{changed}"
        proc = cli.popen("run", "spec.yaml", "--agent", "oracle", "--output-dir", run, "-q",
                         "--concurrency", "1")
        jsonl = tmp_path / run / "results.jsonl"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and (
                not jsonl.exists() or len(jsonl.read_text().splitlines()) < 2):
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=30)
        if changed:
            spec.write_text(SLOW.replace("echo 7 > f", "echo 8 > f"))
        out = cli("run", "--resume", run, "-q")
        if changed:
            assert out.returncode == 2, out.stdout + out.stderr
            assert str(spec.resolve()) in out.stderr and "changed since the run started" \
                in out.stderr
        else:
            assert out.returncode == 0, out.stdout + out.stderr
            assert results(tmp_path / run)["summary"]["passed"] == 8
