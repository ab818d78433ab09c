"""The end-of-run tables, captured with rich's recording console."""

from __future__ import annotations

import io
import json
import re

from rich.console import Console

from proctor.report.terminal import print_summary


def _results(run_dir) -> dict:
    return json.loads((run_dir / "results.json").read_text())


def _print(results, **kw) -> tuple[str, Console]:
    console = Console(record=True, file=io.StringIO(), **kw)
    print_summary(results, console)
    return console.export_text(styles=False), console


def test_wide_table_has_everything(mixed_run):
    text, _ = _print(_results(mixed_run), width=140, color_system=None)
    assert "44 trials: 25 passed, 16 failed, 3 errored · pass rate 57% (95% CI 42–70%)" in text
    lines = text.splitlines()
    # One row per identical conditions: the help modes are rows of their own.
    row = next(line for line in lines if "git-branch [injected]" in line and "anthropic" in line)
    assert "FLAKY" in row and "2/3 67%" in row and "3.0" in row and "5.0s" in row
    assert "k=3: 100% / 0%" in row  # pass@3 / pass^3 of 2 passes in 3
    row = next(line for line in lines if line.startswith("llm · openai/gpt-4.1"))
    # total cost next to cost per success, and the model's mean pass@3 / pass^3
    for cell in ("12/19 63%", "41–81%", "23.4k/2.7k", "$0.0378", "$0.0032", "60% met",
                 "k=3: 67% / 67%"):
        assert cell in row
    row = next(line for line in lines if line.startswith("llm · anthropic/claude-sonnet-4-5"))
    assert "70% MISSED" in row
    assert any("refund-order" in line and "command" in line for line in lines)


def test_narrow_terminal_drops_columns_not_meaning(mixed_run):
    text, _ = _print(_results(mixed_run), width=60, color_system=None)
    assert "turns" not in text and "tokens" not in text
    assert "FLAKY" in text and "MISSED" in text and "ERROR" in text
    assert max(len(line) for line in text.splitlines()) <= 60


def test_eighty_columns_keep_tokens_cost_and_every_help_mode_figure(mixed_run):
    text, _ = _print(_results(mixed_run), width=80, color_system=None)
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= 80
    row = next(line for line in lines if line.startswith("llm · openai/gpt-4.1"))
    # tokens and the total cost stay below 100 columns; the model name gives way
    assert "23.4k/2.7k" in row and "$0.0378" in row and "60% met" in row
    row = next(line for line in lines if line.startswith("…c/claude-sonnet-4-5"))
    assert "$0.0612" in row and "70% MISSED" in row
    # a task label keeps its help mode when cut; no name is folded onto a second line
    assert any(line.startswith("git-bra… [injected]") for line in lines)
    assert not any(line.startswith(" ") and "│" in line for line in lines)
    # the help-mode figures, all of them, under each model's whole name
    at = lines.index("llm · anthropic/claude-sonnet-4-5")
    assert lines[at + 1].split() == ["baseline", "┃", "passed", "┃", "mode", "┃", "passed",
                                     "┃", "Δ", "┃", "95%", "CI", "┃", "p"]
    assert lines[at + 3].split() == ["injected", "│", "5/9", "│", "none", "│", "5/9", "│",
                                     "0", "pts", "│", "-39", "to", "+39", "│", "1.000"]


def test_help_mode_effects_name_their_baseline(mixed_run):
    text, _ = _print(_results(mixed_run), width=140, color_system=None)
    row = next(line for line in text.splitlines()
               if line.startswith("llm · openai/gpt-4.1") and "injected" in line)
    assert row.split("│")[1:] == [" injected ", "    6/9 ", " none ", "    6/9 ", " 0 pts ",
                                  " -38 to +38 ", " 1.000"]
    assert "Δ: the mode's pass rate minus the baseline's" in text


def test_no_color_means_no_colour_codes(mixed_run, monkeypatch):
    def written(**kw) -> str:
        out = io.StringIO()
        print_summary(_results(mixed_run), Console(file=out, force_terminal=True, width=120, **kw))
        return out.getvalue()

    monkeypatch.setenv("NO_COLOR", "1")
    plain = written()
    assert not re.search(r"\x1b\[[0-9;]*3[0-7]m", plain)  # bold may stay, colour may not
    assert "FLAKY" in plain and "MISSED" in plain
    monkeypatch.delenv("NO_COLOR")
    assert re.search(r"\x1b\[[0-9;]*3[0-7]m", written(color_system="standard"))


def test_markup_in_names_is_literal():
    t = {"id": "x.r0", "task_id": "[bold red]task[/]", "model": "[link=x]m[/link]",
         "status": "pass", "composite_score": 1.0, "duration_s": 1.0}
    results = {"trials": [t]}  # scored by the real scorer, as for a run still going
    text, _ = _print(results, width=120, color_system=None)
    assert "[bold red]task[/]" in text and "[link=x]m[/link]" in text


def test_no_trials_prints_headline_only():
    text, _ = _print({"trials": [], "summary": {"trials": 0, "passed": 0, "failed": 0,
                                                "errored": 0, "pass_rate": 0.0}},
                     width=80, color_system=None)
    assert text.strip() == "0 trials: 0 passed, 0 failed, 0 errored · pass rate 0% (95% CI 0–100%)"


def test_verdict_column_and_incomplete_headline(mixed_run):
    results = _results(mixed_run)
    text, _ = _print(results, width=140, color_system=None)
    row = next(line for line in text.splitlines() if line.startswith("refund-order [db=mysql]"))
    assert "ERROR" in row and "fail (majority)" in row
    results["complete"] = False
    text, _ = _print(results, width=140, color_system=None)
    assert text.rstrip().endswith("INCOMPLETE (interrupted)")


def test_a_huge_run_shows_the_rows_that_need_a_look_first():
    from proctor.report import terminal

    trials = [{"id": f"t{i}.r0", "task_id": f"t{i:04d}", "model": "m",
               "status": "fail" if i == 177 else "pass", "composite_score": 1.0,
               "duration_s": 1.0} for i in range(terminal.MAX_TASK_ROWS + 50)]
    text, _ = _print({"trials": trials}, width=140, color_system=None)
    lines = text.splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("t0"))
    assert lines[first].startswith("t0177")  # the failing task leads
    assert "… and 50 more rows" in text
