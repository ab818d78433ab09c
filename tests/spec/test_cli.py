"""The real `proctor validate` / `schema` / `init` commands, as a user runs them."""

from __future__ import annotations

import json
import shutil

import pytest

from tests.helpers.spec import run_proctor, write

FIXTURES = "tests/fixtures/specs"


def test_valid_fixtures_validate(repo):
    proc = run_proctor("validate", f"{FIXTURES}/valid", cwd=repo)
    assert proc.returncode == 0
    # Valid specs; what this machine's configuration lacks (judge aliases, the upstream
    # examples' mock/scripted) is said as warnings, since `run` would stop on it.
    lines = proc.stderr.splitlines()
    assert lines and all(": warning: task " in line for line in lines)
    assert any("paragon-fast is not configured" in line for line in lines)
    assert any("mock script 'scripted' not found" in line for line in lines)
    assert proc.stdout == f"ok: 15 file(s), 25 task(s), {len(lines)} warning(s)\n"


def test_suite_errors_all_at_once(repo):
    proc = run_proctor("validate", f"{FIXTURES}/invalid/suite-errors.yaml", cwd=repo)
    f = f"{FIXTURES}/invalid/suite-errors.yaml"
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.splitlines() == [
        f"{f}:8:16: tasks[0].max_turns: must be at most 20, got the number 25",
        f"{f}:11:9: tasks[0].assert[1]: unknown assertion 'file_contain'; did you mean "
        "'file_contains'? (valid: exit_code, output_contains, output_equals, error_contains, "
        "file_exists, file_contains, ran, not_ran, run_count, verify, ran_in_order, tool_used, "
        "budget)",
        f"{f}:12:5: tasks[1].intent: missing required field 'intent' (What the agent is asked to "
        "do, in plain words)",
        f"{f}:13:17: tasks[1].difficulty: 'impossible' is not allowed (valid: easy, medium, hard)",
        f"{f}:16:9: tasks[2].id: duplicate task id 'init' (first at {f}:6:9); task ids must be "
        "unique across all specs loaded together",
        f"{f}:18:13: tasks[2].assert: needs at least 1 entry, got 0",
    ]


def test_scenario_errors_all_at_once(repo):
    f = f"{FIXTURES}/invalid/scenario-errors.yaml"
    proc = run_proctor("validate", f, cwd=repo)
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [
        f"{f}:2:10: version: the number 2 is not allowed (valid: 1)",
        f"{f}:4:11: task.prompt: undeclared secret 'API_TOKEN' in {{{{ secrets.API_TOKEN }}}} "
        "(declared in `secrets:`: none)",
        f"{f}:13:13: invariants.fixed.weight: must be at least 0, got the number -1",
        f"{f}:16:16: invariants.fixed.check.service: unknown service 'database' (declared under "
        "`services:`: db, smtp)",
        f"{f}:23:16: invariants.mailed.check.service: service 'smtp' (line 8) must have "
        "`record: true` for http_mock_assertions to see its requests",
    ]


def test_warnings_do_not_change_the_exit_code(repo):
    f = f"{FIXTURES}/invalid/warnings-only.yaml"
    proc = run_proctor("validate", f, cwd=repo)
    assert proc.returncode == 0
    assert proc.stdout == "ok: 1 file(s), 1 task(s), 2 warning(s)\n"
    lines = proc.stderr.splitlines()
    assert lines[0] == (f"{f}:3:9: warning: upload: proctor uploads nothing (`upload: always` "
                        "is accepted and has no effect); results stay in the run directory")
    assert lines[1].startswith(f"{f}:8:14: warning: tasks[0].assert[0].ran: invalid regex "
                               "'git rebase -i HEAD~3 ('")


def test_broken_files_never_traceback(spec_dir):
    (spec_dir / "binary.yaml").write_bytes(bytes(range(256)) * 4)
    (spec_dir / "nul.yaml").write_bytes(b"cli: x\x00\n")
    (spec_dir / "empty.yaml").write_text("")
    (spec_dir / "list.yml").write_text("- 1\n- 2\n")
    (spec_dir / "scalar.yaml").write_text("just text\n")
    (spec_dir / "syntax.yaml").write_text("cli: git\ntasks: [\n  - id: x\n")
    (spec_dir / "tabs.yaml").write_text("cli: git\n\ttasks: []\n")
    (spec_dir / "unknown.yaml").write_text("name: something else\n")
    (spec_dir / "dir.yaml").mkdir()
    (spec_dir / "multi.yaml").write_text("cli: a\n---\ncli: b\n")
    (spec_dir / "tag.yaml").write_text("cli: !!python/object:os.system x\ntasks: []\n")
    names = sorted(p.name for p in spec_dir.iterdir())
    proc = run_proctor("validate", *names, "missing.yaml", cwd=spec_dir)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.splitlines() == [
        "binary.yaml:2:118: <root>: not a UTF-8 text file",
        "dir.yaml: no .yaml or .yml files and no Harbor task (task.toml) in this directory",
        "empty.yaml:1:1: <root>: empty file; expected a spec (a suite has `cli:` and `tasks:`; a "
        "scenario has `version: 1`, `task:` and `invariants:`)",
        "list.yml:1:1: <root>: a YAML list is a task list, read through a suite's `tasks: - "
        "file://GLOB`; no suite loaded here includes it",
        "multi.yaml:2:1: <root>: YAML syntax error: expected a single document in the stream "
        "but found another document",
        "nul.yaml:1:7: <root>: not a text file (contains NUL bytes)",
        "scalar.yaml:1:1: <root>: expected a spec mapping, got 'just text' (a suite has `cli:` "
        "and `tasks:`; a scenario has `version: 1`, `task:` and `invariants:`)",
        "syntax.yaml:3:3: <root>: YAML syntax error: while parsing a flow node did not find "
        "expected node content",
        "tabs.yaml:2:1: <root>: YAML syntax error: while scanning a plain scalar found a tab "
        "character that violates indentation (hint: line 2 is indented with a tab; YAML "
        "indents with spaces only)",
        "tag.yaml:1:6: <root>: unsupported YAML tag 'tag:yaml.org,2002:python/object:os.system'; "
        "remove it",
        "unknown.yaml:1:1: <root>: not a spec: a suite has `cli:` and `tasks:`; a scenario has "
        "`version: 1`, `task:` and `invariants:`",
        "missing.yaml: no such file or directory",  # no position in a file that is not there
    ]


def test_directories_mix_dialects_and_skip_what_is_not_a_spec(spec_dir):
    write(spec_dir / "specs" / "suite.yaml", "cli: x\ntasks: [{id: a, intent: b, assert: [exit_code: 0]}]\n")
    write(spec_dir / "specs" / "deeper" / "scenario.yml",
          "version: 1\ntask: {prompt: p}\ninvariants: {i: {description: d, check: {type: file_exists, path: x}}}\n")
    write(spec_dir / "specs" / "mock-script.yaml", "responses: []\n")
    write(spec_dir / "specs" / ".hidden" / "ignored.yaml", "not: [a spec\n")
    proc = run_proctor("validate", "specs", cwd=spec_dir)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "ok: 2 file(s), 2 task(s), 1 warning(s)\n"
    assert proc.stderr == ("specs/mock-script.yaml:1:1: warning: skipped: not a spec: a suite has "
                           "`cli:` and `tasks:`; a scenario has `version: 1`, `task:` and "
                           "`invariants:`\n")


def test_schema_command_prints_json_schema(repo):
    proc = run_proctor("schema", cwd=repo)
    assert proc.returncode == 0
    schema = json.loads(proc.stdout)
    assert {"Suite", "Scenario", "SuiteTask", "Assertion"} <= set(schema["$defs"])


@pytest.mark.skipif(shutil.which("git") is None, reason="the example suite drives git")
def test_init_writes_examples_that_validate_and_refuses_to_overwrite(spec_dir):
    proc = run_proctor("init", "bench", cwd=spec_dir)
    assert proc.returncode == 0
    assert proc.stdout == "wrote bench/cli-bench.yaml\nwrote bench/scenario.yaml\n"
    proc = run_proctor("validate", "bench", cwd=spec_dir)
    assert (proc.returncode, proc.stderr) == (0, "")
    (spec_dir / "bench" / "scenario.yaml").write_text("mine\n")
    proc = run_proctor("init", "bench", cwd=spec_dir)
    assert proc.returncode == 2
    assert proc.stderr == ("proctor: bench/cli-bench.yaml and bench/scenario.yaml already exist; "
                           "use --force to overwrite\n")
    assert (spec_dir / "bench" / "scenario.yaml").read_text() == "mine\n"
    assert run_proctor("init", "bench", "--force", cwd=spec_dir).returncode == 0
    assert (spec_dir / "bench" / "scenario.yaml").read_text().startswith("# proctor scenario")



def test_a_file_named_twice_is_read_once(repo):
    f = f"{FIXTURES}/valid/hello-world.yaml"
    proc = run_proctor("validate", f, f, f"{FIXTURES}/valid", cwd=repo)
    assert proc.returncode == 0 and proc.stdout.startswith("ok: 15 file(s), 25 task(s)")


def test_a_yaml_indentation_error_says_which_lines_disagree(spec_dir):
    """Issue 38: invalid YAML got the parser's raw text and no hint. The usual cause, a line
    indented otherwise than its list or mapping (or with a tab), is said in the file's own
    terms; a missing path is named without a made-up position."""
    (spec_dir / "key.yaml").write_text(
        "cli: sh\ntasks:\n  - id: a\n    intent: x\n     assert: []\n")
    (spec_dir / "item.yaml").write_text(
        "cli: sh\ntasks:\n  - id: a\n    intent: x\n    assert:\n    - exit_code: 0\n"
        "     - ran: x\n")
    (spec_dir / "tab.yaml").write_text("cli: sh\ntasks:\n\t- id: a\n")
    (spec_dir / "colon.yaml").write_text("cli: sh\nsystem_prompt: use: this\n")
    proc = run_proctor("validate", "key.yaml", "item.yaml", "tab.yaml", "colon.yaml",
                       "nothere/", cwd=spec_dir)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    lines = proc.stderr.splitlines()
    assert lines[0].startswith("key.yaml:5:") and lines[0].endswith(
        "(hint: line 5 is indented 5 spaces, line 4 4: the keys of a mapping line up)")
    assert lines[1].startswith("item.yaml:7:6: <root>: YAML syntax error: ") and lines[1].endswith(
        "(hint: line 7 is indented 5 spaces, the mapping begun on line 3 4: the items of a "
        "list, and the keys of a mapping, line up)")
    assert lines[2].startswith("tab.yaml:3:1: ") and lines[2].endswith(
        "(hint: line 3 is indented with a tab; YAML indents with spaces only)")
    assert lines[3].startswith("colon.yaml:2:") and lines[3].endswith(
        "(hint: a value holding `: ` needs quotes)")
    assert lines[4] == "nothere/: no such file or directory"
