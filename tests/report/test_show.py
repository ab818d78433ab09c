"""`proctor show`: the trial list, and one trial's trace, checks, forbidden rules and audit."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from proctor.cli import main
from proctor.errors import UsageError
from proctor.report.show import show_main
from tests.helpers.report import FLAKY_TRIAL


@pytest.fixture(autouse=True)
def _wide(monkeypatch):
    monkeypatch.setenv("COLUMNS", "160")


def _show(capsys, run_dir, trial=None) -> str:
    assert show_main(run_dir, trial) == 0
    return capsys.readouterr().out


def test_list(mixed_run, capsys):
    out = _show(capsys, mixed_run)
    assert "run 20260302T101500Z-ab12cd" in out
    line = next(x for x in out.splitlines() if x.startswith("refund-order.db=mysql.r2"))
    assert "ERROR" in line and "12.0s" in line and "custom script exited 1" in line
    line = next(x for x in out.splitlines() if x.startswith(FLAKY_TRIAL))
    assert "FAIL" in line and "0.00" in line and "output_contains#1" in line
    assert sum(1 for x in out.splitlines() if ".r" in x.split(" ")[0]) == 44


def test_trial_trace_checks_and_audit(mixed_run, capsys):
    out = _show(capsys, mixed_run, FLAKY_TRIAL)
    assert out.startswith(f"{FLAKY_TRIAL}  FAIL  score 0.00")
    assert "help mode injected" in out and "tokens 1.3k in / 150 out" in out
    assert "◆ openai/gpt-4.1 · 1.2k in / 40 out · 0.80s" in out
    # the call, and on its line what the command it caused did: the command said once
    # (issue 38: `→ run_command: X`, `$ X` and `started: X` said it three times)
    assert "  → run_command: git switch -c feature   [exit 0, 0.02s]\n" in out
    trace = out[out.index("trace ─"):out.index("checks ─")]
    assert trace.count("git switch -c feature") == 1
    assert "\n$ git branch   [exit 1, 0.01s]" in out  # a command no call asked for: on its own
    assert "  line 5\n  … [32 more lines]\n  line 38" in out  # long output: head and tail
    assert "line 12" not in out
    assert "◇ agent output" in out
    assert "output_contains#1 (output_contains)" in out and "'feature' not in" in out
    assert "file     .git/HEAD  (23 bytes)" in out
    assert "db       db.refunds  +1 ~0 -0" in out
    assert "http     mail POST /send → 200" in out


def test_untrusted_text_is_inert(mixed_run, capsys):
    out = _show(capsys, mixed_run, FLAKY_TRIAL)
    assert "\x1b" not in out and "\x00" not in out and "\x07" not in out
    assert "[bold red]markup[/]" in out  # printed, not interpreted
    assert "[REDACTED:API_KEY]" in out


def test_scenario_trial_forbidden_and_weights(mixed_run, capsys):
    out = _show(capsys, mixed_run, "refund-order.db=mysql.r1")
    assert "params db=mysql" in out and "agent command" in out
    assert "VIOLATED secrets_in_logs  [REDACTED:STRIPE_KEY] printed to stdout" in out
    assert "ok       http_except" in out
    row = next(x for x in out.splitlines() if x.startswith("db_updated"))
    assert "PASS" in row and "2" in row and "gate" in row
    assert "(no trace recorded)" in out and "◇ agent output" in out
    assert "(no audit events)" in out


def test_prefix_lookup(mixed_run, capsys):
    out = _show(capsys, mixed_run, "jq-keys.openai")
    assert out.startswith("jq-keys.openai-gpt-4.1.injected.r0  ERROR")
    assert "error: provider error after 5 attempts" in out
    with pytest.raises(UsageError, match=r"'git-init' matches 12 trials: git-init\.openai"):
        show_main(mixed_run, "git-init")
    with pytest.raises(UsageError, match="no trial 'nope'"):
        show_main(mixed_run, "nope")


def test_unfinished_run_lists_what_is_there(mixed_run, capsys):
    (mixed_run / "results.json").unlink()
    with (mixed_run / "results.jsonl").open("a") as f:
        f.write('{"id": "torn')  # a crash mid-line
    out = _show(capsys, mixed_run)
    assert "(unfinished: trials so far)" in out and FLAKY_TRIAL in out


def test_cli_errors_are_one_line(tmp_path, mixed_run):
    runner = CliRunner()
    res = runner.invoke(main, ["show", str(tmp_path)])
    assert res.exit_code == 2
    assert res.output.strip().count("\n") == 0
    assert "is not a run directory" in res.output
    res = runner.invoke(main, ["show", str(mixed_run), "git-init"])
    assert res.exit_code == 2 and "matches 12 trials" in res.output
    res = runner.invoke(main, ["show", str(mixed_run), FLAKY_TRIAL])
    assert res.exit_code == 0 and "checks" in res.output


def test_long_audit_logs_are_capped_per_type(mixed_run, capsys):
    import json

    audit = mixed_run / "trials" / FLAKY_TRIAL / "audit.jsonl"
    with audit.open("a") as f:
        for i in range(100):
            f.write(json.dumps({"type": "file_write", "time": 3.0,
                                "details": {"path": f"node_modules/x{i}.js", "size": 1}}) + "\n")
    out = _show(capsys, mixed_run, FLAKY_TRIAL)
    assert "node_modules/x23.js" in out and "node_modules/x24.js" not in out
    assert "… 76 more file_write events (all 101 in " in out
    assert "http     mail POST /send → 200" in out  # other types are unaffected


def test_the_list_filters_by_outcome_task_and_model(mixed_run, capsys):
    from proctor.report.show import TrialFilter, show_main

    show_main(mixed_run, None, TrialFilter(failed=True, tasks={"git-branch"}))
    out = capsys.readouterr().out
    ids = [line.split()[1] for line in out.splitlines() if line.startswith("FAIL")]
    assert ids == ["git-branch.anthropic-claude-sonnet-4-5.injected.r1",
                   "git-branch.anthropic-claude-sonnet-4-5.none.r1"]
    show_main(mixed_run, None, TrialFilter(models={"command"}))
    out = capsys.readouterr().out
    assert "refund-order" in out and "git-init" not in out
    show_main(mixed_run, None, TrialFilter(tasks={"nope"}))
    assert "none of the run's 44 trials match" in capsys.readouterr().out


def test_notes_use_a_wide_terminal(mixed_run, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "250")
    out = _show(capsys, mixed_run)
    line = next(x for x in out.splitlines() if x.startswith("jq-filter.openai-gpt-4.1.none.r0"))
    assert len(line.rstrip()) > 200 and line.count("x") > 80  # not cut at ~120 characters


UNITTEST = ("`python3 -m unittest discover -s tests -t . -q` exited with 1, expected exit code 0\n"
            "stdout: (empty)\nstderr:\n" + "=" * 70 + "\nFAIL: test_sum (tests.test_cart.T)\n"
            + "-" * 70 + "\nTraceback (most recent call last):\n"
            '  File "tests/test_cart.py", line 8, in test_sum\n'
            "    self.assertEqual(total([1.5, 2.5, 3]), 7)\nAssertionError: 5.5 != 7\n\n"
            + "-" * 70 + "\nRan 2 tests in 0.008s\n\nFAILED (failures=2)\n")


@pytest.fixture
def unittest_run(tmp_path):
    from tests.helpers.report import check, trial, write_run

    t = trial("fix-the-bug.mock-models-anthropic-claude-sonnet-4-5-careful.yaml.r07",
              "fix-the-bug", "fail", model="mock/models/anthropic-claude-sonnet-4-5-careful.yaml",
              checks=[check("tests_pass", "command_exit", False, UNITTEST)], duration=12.5)
    return write_run(tmp_path, "r", [t])


def test_a_wide_terminal_shows_the_note_to_its_useful_end(unittest_run, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "250")
    line = next(x for x in _show(capsys, unittest_run).splitlines() if x.startswith("fix-"))
    note = line.split("│")[-1].strip()
    assert note.startswith("tests_pass: `python3 -m unittest discover -s tests -t . -q` exited "
                           "with 1, expected exit code 0 … ")
    assert note.endswith(" … Ran 2 tests in 0.008s FAILED (failures=2)")
    assert "=====" not in note and len(line) <= 250


def test_eighty_columns_keep_status_score_duration_and_put_the_note_below(unittest_run, capsys,
                                                                         monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    lines = _show(capsys, unittest_run).splitlines()
    assert all(len(x) <= 80 for x in lines)
    assert lines[1] == "agent: llm · mock/models/anthropic-claude-sonnet-4-5-careful.yaml"
    assert lines[2].split() == ["trial", "┃", "status", "┃", "score", "┃", "duration"]
    cells = [c.strip() for c in lines[4].split("│")]
    assert cells[1:] == ["FAIL", "0.00", "12.5s"]
    at = next(n for n, x in enumerate(lines) if x.startswith("  "))  # after the folded id
    below = " ".join(x.strip() for x in lines[at:at + 3])  # the whole width, under the row
    assert lines[at].startswith("  tests_pass: `python3 -m unittest") and "│" not in lines[at]
    assert "FAILED (failures=2)" in below


def test_a_trials_long_check_message_keeps_its_end(unittest_run, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    path = unittest_run / "results.json"  # 800 more characters in the middle of the message
    path.write_text(path.read_text().replace("Traceback (most recent",
                                             "x" * 800 + "\\nTraceback (most recent"))
    out = _show(capsys, unittest_run, "fix-the-bug")
    assert "exited with 1" in out and "FAILED (failures=2)" in out and "characters cut" in out


def test_a_list_of_10000_trials_is_linear_and_fits_the_terminal(tmp_path, capsys, monkeypatch):
    """10,000 trials list in well under a second (a rich Table took seconds); no line is
    wider than the terminal; an id too long for its column folds onto the next lines; a
    note too long for the terminal ends in an ellipsis."""
    import json
    import re
    import time

    from rich.cells import cell_len

    long_id = "a-task-id-far-too-long-for-a-narrow-terminal-column-" * 2 + ".r0"
    trials = [{"id": f"t{i:05d}.r0", "task_id": f"t{i:05d}", "status": "fail" if i % 3 else "pass",
               "composite_score": 0.0, "duration_s": 1.5, "error": "x" * 300 if i % 3 else None}
              for i in range(10_000)] + [{"id": long_id, "task_id": "a", "status": "error"}]
    (tmp_path / "results.json").write_text(json.dumps({"run_id": "big", "trials": trials}))
    for columns in (120, 50):
        monkeypatch.setenv("COLUMNS", str(columns))
        t0 = time.process_time()  # CPU: the shared machine's load does not count
        out = _show(capsys, tmp_path)
        elapsed = time.process_time() - t0
        rows = [x for x in out.splitlines() if " │ " in x]
        ids = [x.split(" │ ")[0].strip() for x in rows]
        assert sum(1 for i in ids if re.fullmatch(r"t\d{5}\.r0", i)) == 10_000
        first = next(n for n, i in enumerate(ids) if i.startswith("a-task"))
        assert "".join(ids[first:]) == long_id and len(ids) - first > 1  # folded
        assert "ERROR" in rows[first]
        assert max(cell_len(x) for x in out.splitlines()) <= columns
        # t00001's error, both ends within the terminal, on the whole width under its row
        # (the long id leaves no room for a note column at either width)
        lines = out.splitlines()
        at = next(n for n, x in enumerate(lines) if x.startswith("t00001"))
        below = " ".join(x.strip() for x in lines[at + 1:at + 3])
        assert below.startswith("x") and " … " in below and lines[at + 1].startswith("  x")
        assert elapsed < 3, elapsed  # ~0.15 s of CPU here; a rich Table: 2-9 s


def test_failed_keeps_each_reasons_cause_on_lines_of_its_own(tmp_path, capsys, monkeypatch):
    """Issue 27: at 160 columns `--failed` showed `agent error: mock/…yaml: … 00 at turn 0`,
    the "HTTP 500" cut away. Issue 38: each reason has lines of its own, the whole width;
    a reason too long even for them keeps its start (the cause), then its end."""
    from proctor.report.show import TrialFilter
    from tests.helpers.report import trial, write_run

    error = ("agent error: mock/scripts/outage.yaml: the model endpoint answered HTTP 500: "
             '{"error": "internal", "detail": "' + "stack frame " * 80 + '"} at turn 0')
    run = write_run(tmp_path, "r", [trial("t.r0", "t", "error", error=error),
                                    trial("u.r0", "u", "pass")])
    show_main(run, None, TrialFilter(failed=True))
    out = capsys.readouterr().out.splitlines()
    at = next(n for n, x in enumerate(out) if x.startswith("ERROR  t.r0"))
    why = " ".join(x.strip() for x in out[at + 1:] if x.startswith("  "))
    assert why.startswith("agent error: mock/scripts/outage.yaml: the model endpoint answered "
                          "HTTP 500") and why.endswith("at turn 0")
    assert " … " in why and all(len(x) <= 160 for x in out) and "u.r0" not in "".join(out)


def test_failed_at_80_columns_groups_identical_reasons_across_replicas(tmp_path, capsys,
                                                                     monkeypatch):
    """Issue 38: `show --failed` at 80 columns squeezed the reason into the trial column and
    cut the cause (`failed: exit_code#0: the last comm` …); identical reasons repeated once
    per replica. Now: one group per condition and reason, its count, its trials, and the
    whole reason on full-width lines."""
    from proctor.report.show import TrialFilter
    from tests.helpers.report import check, trial, write_run

    why = ("the last command exited with 2, expected 0: ls: cannot access 'build/output.bin': "
           "No such file or directory")
    other = "file not found: report.txt; the workspace holds: notes.md"
    model = "mock/models/anthropic-claude-sonnet-4-5-sloppy.yaml"
    trials = [trial(f"build.{i}", "build", "fail", model=model, replica=i,
                    checks=[check("exit_code#0", "exit_code", False, why)]) for i in range(5)]
    trials += [trial("build.5", "build", "fail", model=model, replica=5,
                     checks=[check("exit_code#0", "file_exists", False, other)]),
               trial("build.6", "build", "pass", model=model, replica=6)]
    run = write_run(tmp_path, "r", trials)
    monkeypatch.setenv("COLUMNS", "80")
    show_main(run, None, TrialFilter(failed=True))
    out = capsys.readouterr().out.splitlines()
    assert all(len(x) <= 80 for x in out), out
    assert out[0] == "run r: 6 trials did not pass"
    assert out[1].startswith("FAIL ×5  build.0, build.1, build.2 and 2 more  (llm · ")
    groups: list[tuple[str, list[str]]] = []
    for line in out[1:]:
        if line.startswith(("FAIL", "ERROR")):
            groups.append((line, []))
        elif line.startswith("  ") and groups:
            groups[-1][1].append(line.strip())
    assert len(groups) == 2  # not 6 lines of the same
    assert " ".join(groups[0][1]) == f"exit_code#0: {why}"  # whole, cause first
    assert groups[1][0].startswith("FAIL  build.5  (llm · ")
    assert " ".join(groups[1][1]) == f"exit_code#0: {other}"


@pytest.mark.slow
def test_the_audit_folds_the_files_git_writes_for_itself(cli, tmp_path):
    """Issue 38: the audit listed all of `git init`'s sample hooks, one line each. They are
    one line now (so are git's objects); a hook the agent planted is listed as it is."""
    (tmp_path / "spec.yaml").write_text(
        "cli: git\ntasks:\n  - id: init\n    intent: make a repository\n    solution:\n"
        "      - git init -q . && echo hi > a && git add a\n"
        "      - printf '#!/bin/sh\\nexit 0\\n' > .git/hooks/pre-commit\n"
        "    assert:\n      - file_exists: .git/HEAD\n")
    assert cli("run", "spec.yaml", "--agent", "oracle", "-q", "--output-dir", "run"
               ).returncode == 0
    out = cli("show", "run", "init", env={"COLUMNS": "120"}).stdout
    audit = out[out.index("audit ─"):].splitlines()
    (samples,) = [x for x in audit if "sample" in x]  # git 2.39: 13 of them
    assert samples.startswith("file     .git/hooks/*.sample  (") and samples.endswith(
        " files git writes for itself, folded)") and int(samples.split("(")[1].split()[0]) > 5
    assert any(x.startswith("file     .git/objects/…  (") for x in audit)
    assert "file     .git/hooks/pre-commit  (" in out  # planted: never folded
    assert "file     a  (3 bytes)" in out
