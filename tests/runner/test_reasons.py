"""Why a trial did not pass: one line, `reason`, in results.json and every report; and the
SPEC §3 default without `scoring.pass_threshold` (every invariant passed)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

from proctor.report.markdown import cell
from tests.helpers.cli import results, run_dir_of

JUDGE = """import json
print(json.dumps({"passed": %s, "score": 0.9, "reason": "clear and polite"}))
"""


def scenario(spec, name: str, scoring: str = "") -> None:
    spec(f"""
    version: 1
    id: {name}
    task: {{prompt: write the file}}
    agent: {{type: oracle}}
    solution: ["echo done > out.txt"]
    invariants:
      wrote_it:
        description: the file is there
        check: {{type: file_exists, path: out.txt}}
      quality:
        description: a judge of the result (continuous score)
        weight: 0.5
        check: {{type: custom, script: judge.py}}
    {scoring}
    """, name=f"{name}.yaml")


def test_a_continuous_check_that_passed_passes_without_a_pass_threshold(cli, spec, tmp_path):
    """The judge scored 0.9 and passed: composite 0.967 < 1.0, but without `scoring:` a
    scenario passes iff every invariant passed — `proctor check` agrees."""
    (tmp_path / "judge.py").write_text(JUDGE % "True")
    scenario(spec, "judged")
    out = cli("run", "judged.yaml", "-q")
    assert out.returncode == 0, out.stdout + out.stderr
    [t] = results(run_dir_of(out))["trials"]
    assert t["status"] == "pass" and t["reason"] is None
    assert round(t["composite_score"], 3) == 0.967
    out = cli("check", "judged.yaml")
    assert out.returncode == 0, out.stdout + out.stderr


def test_every_report_says_why_a_trial_failed(cli, spec, tmp_path):
    (tmp_path / "judge.py").write_text(JUDGE % "True")
    scenario(spec, "strict", "scoring: {pass_threshold: 0.99}")
    spec("""
    cli: ls
    tasks:
      - id: list-nothing
        intent: list a missing file
        solution: ["ls nothing-here"]
        assert: [{exit_code: 0}]
    """, name="suite.yaml")
    out = cli("run", "strict.yaml", "suite.yaml", "--agent", "oracle",
              "--format", "json,junit,md,html", "--output-dir", "run")
    assert out.returncode == 1
    run = tmp_path / "run"
    trials = {t["task_id"]: t for t in results(run)["trials"]}
    below = "composite 0.97 < pass_threshold 0.99"
    assert trials["strict"]["reason"] == below
    failed = trials["list-nothing"]["reason"]
    assert failed.startswith("failed: exit_code#0: ") and "\n" not in failed
    for why in (below, failed):
        assert why in out.stdout  # the terminal, after the tables
        assert cell(why, 300) in (run / "summary.md").read_text()
        assert why in "".join(ET.parse(run / "junit.xml").getroot().itertext())
        assert why.replace("<", "&lt;") in (run / "report.html").read_text()
    shown = cli("show", "run", "--failed", env={"COLUMNS": "200"})
    assert below in shown.stdout and "failed: exit_code#0" in shown.stdout
    one = cli("show", "run", trials["strict"]["id"])
    assert f"why: {below}" in one.stdout
    out = cli("check", "strict.yaml")
    assert f"solution fails: {below}" in out.stderr


def test_an_errored_trial_gives_its_cause(cli, spec, tmp_path):
    (tmp_path / "judge.py").write_text("import sys\nprint('no model', file=sys.stderr)\n"
                                       "sys.exit(3)\n")
    scenario(spec, "broken")
    out = cli("run", "broken.yaml", "-q")
    [t] = results(run_dir_of(out))["trials"]
    assert t["status"] == "error"
    assert t["reason"].startswith("check quality errored: ") and "\n" not in t["reason"]


def test_an_older_results_json_without_reason_is_still_read(cli, spec, tmp_path):
    (tmp_path / "judge.py").write_text(JUDGE % "False")
    scenario(spec, "old")
    out = cli("run", "old.yaml", "-q", "--output-dir", "run")
    assert out.returncode == 1
    path = tmp_path / "run" / "results.json"
    data = json.loads(path.read_text())
    for t in data["trials"]:
        del t["reason"], t["timed_out"]
    path.write_text(json.dumps(data))
    for fmt in ("md", "junit", "html"):
        assert cli("report", "run", "--format", fmt).returncode == 0
    assert "quality" in cli("show", "run", "--failed").stdout
    out = cli("check", "old.yaml")
    assert "solution fails: quality" in out.stderr


def test_a_failed_weight_0_invariant_is_shown_but_does_not_fail_the_scenario(cli, spec, tmp_path):
    """SPEC §3: without `scoring.pass_threshold`, only invariants with weight > 0 (and
    gates) decide; a weight-0 invariant that failed is in the checks, informational. Its
    twin: the same invariant at weight 0.5 fails the trial."""
    (tmp_path / "judge.py").write_text(JUDGE % "False")
    for name, weight in (("informational", 0), ("weighted", 0.5)):
        spec(f"""
        version: 1
        id: {name}
        task: {{prompt: write the file}}
        agent: {{type: oracle}}
        solution: ["echo done > out.txt"]
        invariants:
          wrote_it:
            description: the file is there
            check: {{type: file_exists, path: out.txt}}
          style:
            description: informational only
            weight: {weight}
            check: {{type: custom, script: judge.py}}
        """, name=f"{name}.yaml")
    out = cli("run", "informational.yaml", "-q")
    assert out.returncode == 0, out.stdout + out.stderr
    [t] = results(run_dir_of(out))["trials"]
    assert (t["status"], t["reason"], t["composite_score"]) == ("pass", None, 1.0)
    assert [(c["name"], c["passed"], c["weight"]) for c in t["checks"]] == [
        ("wrote_it", True, 1.0), ("style", False, 0.0)]
    out = cli("run", "weighted.yaml", "-q")
    assert out.returncode == 1
    [t] = results(run_dir_of(out))["trials"]
    assert t["status"] == "fail" and t["reason"].startswith("failed: style")
