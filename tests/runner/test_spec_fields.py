"""Spec fields no code acts on are never silently ignored: version_command is run and
recorded, setup.packages / base are named with the backend that uses them, `audit` warns."""

from __future__ import annotations

import json

from tests.helpers.cli import results


def test_version_command_is_recorded_in_run_json_and_the_report(cli, spec, tmp_path):
    spec("""
    cli: sh
    version_command: echo "mytool 1.2.3"; echo more
    tasks:
      - id: t
        intent: x
        solution: ["true"]
        assert: [{exit_code: 0}]
    """)
    out = cli("run", "spec.yaml", "--agent", "oracle", "--output-dir", "run", "-q",
              "--format", "html")
    assert out.returncode == 0, out.stderr
    meta = json.loads((tmp_path / "run" / "run.json").read_text())
    assert meta["versions"]["cli sh"] == "mytool 1.2.3"
    assert "sh mytool 1.2.3" in (tmp_path / "run" / "report.html").read_text()


def test_a_failing_version_command_says_so(cli, spec, tmp_path):
    spec("""
    cli: sh
    version_command: nosuch --version
    tasks:
      - {id: t, intent: x, solution: ["true"], assert: [{exit_code: 0}]}
    """)
    assert cli("run", "spec.yaml", "--agent", "oracle", "--output-dir", "run", "-q"
               ).returncode == 0
    meta = json.loads((tmp_path / "run" / "run.json").read_text())
    assert meta["versions"]["cli sh"].startswith("`nosuch --version` failed (exit 127)")


def test_packages_and_base_are_named_for_the_local_backend(cli, spec, tmp_path):
    spec("""
    version: 1
    id: pk
    base: debian:bookworm
    setup: {packages: [jq]}
    task: {prompt: x}
    agent: {type: oracle}
    solution: ["true"]
    invariants:
      ok: {description: x, check: {type: command_exit, command: "true"}}
    """)
    out = cli("run", "spec.yaml", "--output-dir", "run")
    assert out.returncode == 0, out.stderr
    assert "pk: setup.packages / base are for --backend docker" in out.stderr
    assert results(tmp_path / "run")["summary"]["passed"] == 1


def test_an_audit_block_warns_at_validation(cli, spec):
    spec("""
    version: 1
    id: au
    audit: {record_http: false}
    task: {prompt: x}
    invariants:
      ok: {description: x, check: {type: command_exit, command: "true"}}
    """)
    out = cli("validate", "spec.yaml")
    assert out.returncode == 0
    assert "spec.yaml:4:8: warning: audit: proctor records every command" in out.stderr


def test_params_expand_in_agent_command(cli, spec, tmp_path):
    spec("""
    version: 1
    id: cmd
    task: {prompt: say it}
    agent: {type: command, command: "echo {{ params.word }} {{prompt}} > said.txt"}
    parallelism: {matrix: {word: [alpha, beta]}}
    invariants:
      said:
        description: the param reached the agent's command
        check: {type: file_content, path: said.txt, contains: "{{ params.word }} say it"}
    """)
    out = cli("run", "spec.yaml", "--output-dir", "run", "-q")
    assert out.returncode == 0, out.stdout + out.stderr
    assert results(tmp_path / "run")["summary"]["passed"] == 2


def test_a_fractional_threshold_warning_quotes_the_value(cli, spec):
    spec("""
    cli: sh
    thresholds: {default: 0.75}
    tasks:
      - {id: t, intent: x, assert: [{exit_code: 0}]}
    """)
    out = cli("validate", "spec.yaml")
    assert "0.75 means 0.75%; write 75 for 75%" in out.stderr, out.stderr
