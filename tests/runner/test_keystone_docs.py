"""Keystone's documented specs load and run unchanged: hosted agent types, durations as
Keystone writes them, `source: dashboard` secrets, a `custom` check with `runs_in: sandbox`
reading the audit log (the docs' own validate script)."""

from __future__ import annotations

import json
import os

from tests.helpers.cli import results, run_dir_of

SCENARIO = """\
version: 1
id: summarize
task:
  prompt: Write a summary of notes.txt to summary.txt.
agent: {type: paragon}
resources: {timeout: 1h}
secrets:
  - {name: SMTP_TOKEN, source: dashboard}
setup:
  files: {notes.txt: "three notes"}
invariants:
  summary_written:
    description: The summary exists
    check: {type: command_exit, command: "test -s summary.txt", timeout: 30s}
  audit_seen:
    description: Every command the agent ran is in the audit log
    check: {type: custom, script: checks/validate.py, runs_in: sandbox, timeout: 1m}
solution:
  - cat notes.txt > summary.txt
"""

# Shaped like the docs' validate script: it opens ctx["audit_log_path"] where it runs.
VALIDATE = """\
import json, sys
ctx = json.load(sys.stdin)
events = [json.loads(line) for line in open(ctx["audit_log_path"])]
trace = open(ctx["trace_path"]).read()
writes = [e["details"]["path"] for e in events if e["type"] == "file_write"]
print(json.dumps({"passed": "summary.txt" in writes and "command" in trace,
                  "reason": f"writes: {writes}"}))
"""


def _secrets_file(tmp_path, text='SMTP_TOKEN = "tok-123"\n', mode=0o600):
    path = tmp_path / "secrets.toml"
    path.write_text(text)
    path.chmod(mode)
    return {"PROCTOR_SECRETS": str(path)}


def _write(spec, tmp_path, text=SCENARIO):
    spec(text, "scenario.yaml")
    spec(VALIDATE, "checks/validate.py")


def test_the_docs_example_loads_and_a_local_agent_stands_in_once(cli, spec, tmp_path):
    _write(spec, tmp_path)
    env = _secrets_file(tmp_path)
    proc = cli("validate", "scenario.yaml", env=env)
    assert proc.returncode == 0, proc.stderr
    # No model for the stand-in: the error says why llm is asked for, even under -q.
    proc = cli("run", "scenario.yaml", "-q", env={**env, "PROCTOR_MODEL": ""})
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert ("task summarize (its agent `paragon` runs only on Keystone's hosted service and "
            "`llm` stands in; --agent or proctor.toml's stand_in_agent picks another): no model "
            "for the llm agent") in proc.stderr
    (tmp_path / "proctor.toml").write_text('stand_in_agent = "oracle"\n')
    proc = cli("run", "scenario.yaml", env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    notes = [ln for ln in proc.stderr.splitlines() if "hosted service" in ln]
    assert notes == ["proctor: note: agent `paragon` runs only on Keystone's hosted service; "
                     "`oracle` runs here instead (proctor.toml's stand_in_agent): summarize"]
    run = run_dir_of(proc)
    trial = results(run)["trials"][0]
    assert trial["agent"] == "oracle" and trial["status"] == "pass"
    assert {c["name"]: c["passed"] for c in trial["checks"]} == {
        "summary_written": True, "audit_seen": True}
    assert json.loads((run / "run.json").read_text())["notes"] == [notes[0][len("proctor: note: "):]]
    # --agent wins, and says so.
    proc = cli("run", "scenario.yaml", "--agent", "nop", env=env)
    assert "`nop` runs here instead (--agent): summarize" in proc.stderr
    assert results(run_dir_of(proc))["trials"][0]["status"] == "fail"


def test_snapshot_needs_its_name(cli, spec, tmp_path):
    _write(spec, tmp_path, SCENARIO.replace("{type: paragon}", "{type: snapshot}"))
    proc = cli("validate", "scenario.yaml", env=_secrets_file(tmp_path))
    assert proc.returncode == 2
    assert "agent: type: snapshot needs `snapshot:` (the snapshot's name)" in proc.stderr
    _write(spec, tmp_path, SCENARIO.replace("{type: paragon}", "{type: snapshot, snapshot: v3}"))
    proc = cli("run", "scenario.yaml", "--agent", "oracle", env=_secrets_file(tmp_path))
    assert "agent `snapshot v3` runs only on Keystone's hosted service" in proc.stderr
    assert proc.returncode == 0, proc.stderr


def test_durations_wherever_a_timeout_is_given(spec, tmp_path, monkeypatch):
    from proctor.spec.load import load_specs

    _write(spec, tmp_path, SCENARIO.replace("{type: paragon}", "{type: llm, timeout: 5m}"))
    monkeypatch.setenv("PROCTOR_SECRETS", _secrets_file(tmp_path)["PROCTOR_SECRETS"])
    (task,) = load_specs([str(tmp_path / "scenario.yaml")]).tasks
    assert task.timeout == 300 and task.resources["timeout"] == 3600
    assert [c.config.timeout for c in task.checks] == [30, 60]
    _write(spec, tmp_path, SCENARIO.replace("timeout: 1h", "timeout: 1 hour"))
    from proctor.errors import SpecError

    try:
        load_specs([str(tmp_path / "scenario.yaml")])
        raise AssertionError("a bad duration loaded")
    except SpecError as e:
        assert [str(i) for i in e.issues] == [
            f"{tmp_path}/scenario.yaml:6:22: resources.timeout: '1 hour' is not a duration: "
            "write seconds (300) or a number with a unit: 30s, 5m, 1h, 1h30m"]


def test_dashboard_secrets_come_from_the_local_store(cli, spec, tmp_path):
    _write(spec, tmp_path)
    proc = cli("validate", "scenario.yaml", env={"PROCTOR_SECRETS": str(tmp_path / "none.toml")})
    assert proc.returncode == 2
    assert ("secrets[0].source: secret 'SMTP_TOKEN': `source: dashboard` reads proctor's local "
            f"secrets file, and {tmp_path}/none.toml does not exist; add `SMTP_TOKEN = \"...\"` "
            f"to {tmp_path}/none.toml") in proc.stderr
    proc = cli("validate", "scenario.yaml", env=_secrets_file(tmp_path, 'OTHER = "x"\n'))
    assert "has no value for 'SMTP_TOKEN'" in proc.stderr and proc.returncode == 2
    proc = cli("validate", "scenario.yaml", env=_secrets_file(tmp_path, mode=0o644))
    assert proc.returncode == 2 and "can be read by other users (mode 644)" in proc.stderr
    # The value is redacted like any secret's.
    spec(SCENARIO.replace("cat notes.txt > summary.txt", "echo $SMTP_TOKEN; cat notes.txt > summary.txt"),
         "scenario.yaml")
    proc = cli("run", "scenario.yaml", "--agent", "oracle", env=_secrets_file(tmp_path))
    run = run_dir_of(proc)
    trace = next((run / "trials").iterdir()) / "trace.jsonl"
    assert "[REDACTED:SMTP_TOKEN]" in trace.read_text() and "tok-123" not in trace.read_text()
    assert os.environ.get("SMTP_TOKEN") is None
