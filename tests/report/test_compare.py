"""`proctor compare` on two runs with known counts, against hand-computed p-values."""

from __future__ import annotations

import json
from fractions import Fraction

import pytest
from click.testing import CliRunner

from proctor.cli import main
from proctor.report.compare import compare_main, compare_runs
from proctor.stats import hypergeom_pmf
from tests.helpers.report import counted, write_run


def _results(path):
    return json.loads((path / "results.json").read_text())


def _brute_fisher(a, b, c, d) -> float:
    """Two-sided Fisher by enumerating every table with the same margins, in exact fractions."""
    total, row1, col1 = a + b + c + d, a + b, a + c
    probs = [hypergeom_pmf(k, total, col1, row1) for k in range(0, row1 + 1)]
    observed = hypergeom_pmf(a, total, col1, row1)
    return float(sum((p for p in probs if p <= observed), Fraction(0)))


def test_task_and_model_rows(run_pair):
    a, b = run_pair
    res = compare_runs(_results(a), _results(b))
    rows = {r.task_id: r for r in res.tasks}
    assert list(rows) == ["t1", "t2", "t3"]
    t1 = rows["t1"]
    assert (t1.passed_a, t1.n_a, t1.passed_b, t1.n_b) == (10, 10, 2, 10)
    assert t1.diff == pytest.approx(-0.8)
    assert t1.p == pytest.approx(132 / 184756)  # (C(12,10) + C(12,2)) / C(20,10)
    assert t1.p_adj == pytest.approx(3 * 132 / 184756)  # Holm over 3 task comparisons
    assert t1.flag == "regression"
    lo, hi = t1.diff_ci
    assert -1 <= lo < hi < 0
    assert rows["t2"].p == pytest.approx(1.0) and rows["t2"].flag == ""  # 5/10 vs 6/10
    assert rows["t3"].p == 1.0 and rows["t3"].flag == ""
    assert res.only_a == ["t5 · llm · openai/gpt-4.1"] and res.only_b == ["t4 · llm · openai/gpt-4.1"]
    (model,) = res.models
    # pooled over the tasks both runs have (t1-t3), not t4/t5
    assert (model.passed_a, model.n_a, model.passed_b, model.n_b) == (18, 23, 11, 23)
    assert model.p == pytest.approx(_brute_fisher(18, 5, 11, 12), rel=1e-12)
    assert model.p == pytest.approx(0.0654, abs=1e-4) and model.flag == ""  # 78% → 48%: not enough
    assert [r.task_id for r in res.regressions] == ["t1"] and not res.improvements


def test_reversed_is_an_improvement(run_pair):
    a, b = run_pair
    res = compare_runs(_results(b), _results(a))
    assert [r.task_id for r in res.improvements] == ["t1"] and not res.regressions


def test_printed_table_and_exit_codes(run_pair, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "140")
    a, b = run_pair
    assert compare_main(a, b) == 0  # informational by default
    out = capsys.readouterr().out
    assert "A run-a  vs  B run-b" in out
    line = next(x for x in out.splitlines() if x.startswith("t1"))
    cells = [c.strip() for c in line.split("│")]
    assert cells == ["t1", "10/10 100%", "72–100%", "2/10 20% ~", "6–51%", "-80 pp",
                     "-94 to -38 pp", "<0.001", "0.002", "REGRESSION"]
    assert "only in A (not compared): t5 · llm · openai/gpt-4.1" in out
    assert "only in B (not compared): t4 · llm · openai/gpt-4.1" in out
    assert "1 significant regression, 0 improvements" in out
    # 3/3 vs 3/3 can never reach p < 0.05 (min p = 0.1): say so instead of implying "no change"
    assert "1 of 3 task comparisons could not reach significance" in out
    assert compare_main(a, b, fail_on_regression=True) == 1
    assert compare_main(b, a, fail_on_regression=True) == 0


def test_cli_option(run_pair):
    a, b = run_pair
    runner = CliRunner()
    res = runner.invoke(main, ["compare", str(a), str(b), "--fail-on-regression"])
    assert res.exit_code == 1, res.output
    res = runner.invoke(main, ["compare", str(a), str(b), "--fail-on-regression",
                               "--alpha", "0.0001"])
    assert res.exit_code == 0, res.output  # nothing survives alpha = 0.0001 after Holm
    res = runner.invoke(main, ["compare", str(a), str(a.parent)])
    assert res.exit_code == 2 and "not a run directory" in res.output


def test_cross_model_comparison(tmp_path):
    a = write_run(tmp_path, "ra", counted("t1", "openai/gpt-4.1", 8, 8, "a")
                  + counted("t2", "openai/gpt-4.1", 1, 2, "a"))
    b = write_run(tmp_path, "rb", counted("t1", "anthropic/claude-sonnet-4-5", 0, 8, "b")
                  + counted("t2", "anthropic/claude-sonnet-4-5", 1, 2, "b"))
    res = compare_runs(_results(a), _results(b))
    assert res.cross_model == ("llm · openai/gpt-4.1", "llm · anthropic/claude-sonnet-4-5")
    assert [r.task_id for r in res.tasks] == ["t1", "t2"]
    assert res.tasks[0].p == pytest.approx(2 / 12870)  # 8/8 vs 0/8: 2 / C(16, 8)
    assert res.models[0].label == "llm · openai/gpt-4.1 → llm · anthropic/claude-sonnet-4-5"


def test_markdown_and_json_for_a_pull_request(run_pair, capsys):
    a, b = run_pair
    assert compare_main(a, b, fmt="json") == 0
    doc = json.loads(capsys.readouterr().out)
    t1 = next(r for r in doc["tasks"] if r["task_id"] == "t1")
    assert (t1["passed_a"], t1["trials_a"], t1["passed_b"], t1["trials_b"]) == (10, 10, 2, 10)
    assert t1["flag"] == "regression" and doc["regressions"] >= 1
    assert compare_main(a, b, fmt="md") == 0
    md = capsys.readouterr().out
    assert md.startswith("## proctor compare `run-a` → `run-b`")
    assert "Agent · model `llm · openai/gpt-4.1`." in md  # one model: named once
    assert "| task | A | B | difference (95% CI) | p (adj.) | |" in md
    assert "| t1 | 10/10 | 2/10 | -80 pts (-94 to -38) | 0.002 | 🔻 regression |" in md
    assert "**Only in A:** `t5 · llm · openai/gpt-4.1`" in md


def _modes(task: str, model: str, counts: dict[str, tuple[int, int]], tag: str) -> list:
    out = []
    for mode, (passed, n) in counts.items():
        for t in counted(task, model, passed, n, f"{tag}-{mode}"):
            t["help_mode"] = mode
            t["id"] = t["id"].replace(f".{tag}-{mode}.", f".{mode}.{tag}.")
            out.append(t)
    return out


def test_help_modes_and_params_are_compared_apart(tmp_path, capsys, monkeypatch):
    """A mode that got worse is not hidden by one that got better (pooled: 10/20 both)."""
    m, other = "openai/gpt-4.1", "anthropic/claude-sonnet-4-5"
    a = write_run(tmp_path, "ra", _modes("git-init", m, {"injected": (10, 10), "none": (0, 10)},
                                         "a") + counted("t2", other, 1, 1, "a"))
    b = write_run(tmp_path, "rb", _modes("git-init", m, {"injected": (0, 10), "none": (10, 10)},
                                         "b") + counted("t2", other, 1, 1, "b"))
    res = compare_runs(_results(a), _results(b))
    rows = {r.task_label: r for r in res.tasks if r.task_id == "git-init"}
    assert set(rows) == {"git-init [injected]", "git-init [none]"}
    assert rows["git-init [injected]"].flag == "regression"
    assert rows["git-init [none]"].flag == "improvement"
    monkeypatch.setenv("COLUMNS", "80")
    compare_main(a, b)
    out = capsys.readouterr().out
    assert all(len(line) <= 80 for line in out.splitlines()), out
    lines = [x for x in out.splitlines() if x.startswith("git-init")]
    assert [x.split("│")[0].strip() for x in lines] == ["git-init [injected]", "git-init [none]"]
    assert "REGRESSION" in lines[0] and "improved" in lines[1]
    compare_main(a, b, fmt="md")
    md = capsys.readouterr().out
    assert "| task | agent · model | A | B |" in md
    assert "| git-init \\[injected\\] | llm · openai/gpt-4.1 | 10/10 | 0/10 |" in md
    compare_main(a, b, fmt="json")
    doc = json.loads(capsys.readouterr().out)
    assert {(r["task_id"], r["help_mode"]) for r in doc["tasks"]} == {
        ("git-init", "injected"), ("git-init", "none"), ("t2", None)}


def test_eighty_columns_cross_model_names_whole_words(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    long_a, long_b = "anthropic/claude-sonnet-4-5-20250929", "openai/gpt-4.1-2025-04-14"
    a = write_run(tmp_path, "ra", counted("refund-order-with-ledger", long_a, 8, 8, "a"))
    b = write_run(tmp_path, "rb", counted("refund-order-with-ledger", long_b, 0, 8, "b"))
    compare_main(a, b)
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert all(len(line) <= 80 for line in lines), out
    # both models are named (not only A's), once, and no name is folded over two lines
    assert f"comparing llm · {long_a} (A) with llm · {long_b} (B)" in " ".join(out.split())
    task = next(x for x in lines if x.startswith("refund-order-with-ledger"))
    assert "REGRESSION" in task and "anthropic" not in task  # the header names the models
    assert not any(x.startswith(("-20250929", "0929", "ger ")) for x in lines)
    # one model in both runs: named once above the table, not on every row
    c = write_run(tmp_path, "rc", counted("t1", long_a, 1, 2, "c"))
    d = write_run(tmp_path, "rd", counted("t1", long_a, 2, 2, "d"))
    compare_main(c, d)
    out = capsys.readouterr().out
    assert f"agent · model: llm · {long_a}" in " ".join(out.split())
    assert next(x for x in out.splitlines() if x.startswith("t1")).count("anthropic") == 0
