"""summary.md, rendered by a real CommonMark + tables parser (markdown-it-py, rich's own)."""

from __future__ import annotations

import json
from html.parser import HTMLParser

from markdown_it import MarkdownIt

from proctor.report import write_reports
from proctor.report.markdown import code, code_block, render_markdown


def _md(run_dir) -> str:
    results = json.loads((run_dir / "results.json").read_text())
    (path,) = write_reports(run_dir, results, ["md"])
    assert path.name == "summary.md"
    return path.read_text()


class Tables(HTMLParser):
    """Rows of every table, as lists of cell texts; and every element seen."""

    def __init__(self):
        super().__init__()
        self.tables: list[list[list[str]]] = []
        self.tags: list[str] = []
        self._cell: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        if tag == "table":
            self.tables.append([])
        elif tag == "tr":
            self.tables[-1].append([])
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self.tables[-1][-1].append("".join(self._cell).strip())
            self._cell = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


def _render(md: str) -> Tables:
    html = MarkdownIt("commonmark").enable("table").render(md)
    parser = Tables()
    parser.feed(html)
    return parser


def test_headline_models_and_tasks(mixed_run):
    md = _md(mixed_run)
    assert md.startswith("## ❌ proctor run `20260302T101500Z-ab12cd`")
    assert "**25/44 trials passed** · 16 failed · 3 errored · pass rate **57%** (95% CI 42–70%)" in md
    assert "**Threshold missed:** `llm · anthropic/claude-sonnet-4-5`" in md
    models, _help_modes, tasks = _render(md).tables
    assert models[0] == ["agent · model", "passed", "pass rate", "95% CI", "threshold", "avg turns",
                         "tokens in", "tokens out", "$ total", "$ / success", "pass@k / pass^k"]
    by_model = {r[0]: r for r in models[1:]}
    assert by_model["llm · openai/gpt-4.1"][1:5] == ["12/19", "63%", "41–81%", "60% ✅"]
    assert by_model["llm · anthropic/claude-sonnet-4-5"][4] == "70% ❌"
    # cost per success: 19 trials × $0.0021 (no cost on the errored one: 18 × 0.0021) / 12
    assert by_model["llm · openai/gpt-4.1"][8] == f"${18 * 0.0021:.4f}"  # total, next to per success
    assert by_model["llm · openai/gpt-4.1"][9] == f"${18 * 0.0021 / 12:.4f}"
    # pass@3 / pass^3: the mean over its six 3-trial rows (jq-keys ran once: not in k=3):
    # git-init 1/1 twice, git-branch 1/1 twice, jq-filter 0/0 twice
    assert by_model["llm · openai/gpt-4.1"][10] == "k=3: 67% / 67%"
    assert by_model["command"][1] == "3/6"
    assert all(len(r) == 11 for r in models)
    # the scenario aggregates replicas by majority, so a verdict column says what it decided
    assert tasks[0] == ["task", "agent · model", "status", "verdict", "passed", "pass rate",
                        "pass@k / pass^k", "avg duration"]
    rows = {(r[0], r[1]): r for r in tasks[1:]}  # one per task × model × help mode × params
    assert rows[("git-branch [injected]", "llm · anthropic/claude-sonnet-4-5")][2:4] == [
        "⚠️ flaky", "fail (all)"]
    # 2 of 3 passed: pass@3 = 1, pass^3 = 0; a single trial has no k beyond 1
    assert rows[("git-branch [injected]", "llm · anthropic/claude-sonnet-4-5")][6] == "k=3: 100% / 0%"
    assert rows[("jq-keys [injected]", "llm · openai/gpt-4.1")][6] == "–"
    assert rows[("jq-keys [injected]", "llm · openai/gpt-4.1")][2] == "💥 error"
    assert rows[("refund-order [db=mysql]", "command")][2:6] == [
        "💥 error", "fail (majority)", "0/3", "0%"]
    assert rows[("refund-order [db=postgres]", "command")][2:6] == [
        "✅ pass", "pass (majority)", "3/3", "100%"]
    assert all(len(r) == 8 for r in tasks)


def test_failing_checks_grouped_and_errors_listed(mixed_run):
    md = _md(mixed_run)
    assert "### Failing checks (15)" in md
    # grouped per identical conditions: each help mode apart
    for mode in ("injected", "none"):
        assert (f"**git-branch \\[{mode}\\]** · llm · anthropic/claude-sonnet-4-5 · "
                "`output_contains#1` (output\\_contains) failed in 1 of 3 trials") in md
    assert "`email_sent` (http\\_mock\\_assertions, gate)" not in md  # not a gate
    assert "### Forbidden rules violated (1)" in md
    assert "\\[REDACTED:STRIPE\\_KEY\\] printed to stdout" in md
    assert "### Errors (3)" in md  # grouped by cause: the provider's on both models
    assert ("<b>2 trials</b>: provider error after 5 attempts: 529 overloaded &lt;html&gt; "
            "(jq-keys · llm · anthropic/claude-sonnet-4-5, llm · openai/gpt-4.1; e.g.") in md
    # long messages are cut
    assert "x" * 400 not in md and "x … x" in md


def test_untrusted_text_never_becomes_html(mixed_run):
    md = _md(mixed_run)
    parsed = _render(md)
    assert "script" not in parsed.tags
    assert "<script>" not in md and "<unsafe>" not in md.replace("```", "")


def test_code_spans_and_blocks_survive_backticks():
    assert code("a`b") == "``a`b``"
    assert code("`x`") == "`` `x` ``"
    block = code_block("before\n````\nafter")
    assert block.startswith("`````text\n") and block.endswith("\n`````")


def test_incomplete_run_and_no_verdict_column(mixed_run):
    results = json.loads((mixed_run / "results.json").read_text())
    for e in results["tasks"]:
        e["aggregation"] = "all"
    results["complete"], results["interrupted"] = False, True
    md = render_markdown(results)
    assert "> ⚠️ **Incomplete run**" in md
    assert "| task | agent · model | status | passed |" in md  # verdict == status: no column


def test_empty_and_all_passing_runs():
    md = render_markdown({"run_id": "r", "trials": [], "tasks": [], "models": []})
    assert md.startswith("## ❌") and "0/0 trials passed" in md
    t = {"id": "a.r0", "task_id": "a", "model": None, "status": "pass", "composite_score": 1.0,
         "checks": [], "agent": "oracle", "duration_s": 0.5}
    md = render_markdown({"run_id": "r", "summary": {"trials": 1, "passed": 1, "failed": 0,
                                                      "errored": 0, "pass_rate": 1.0},
                          "trials": [t], "tasks": [], "models": []})
    assert md.startswith("## ✅") and "Failing checks" not in md and "| oracle |" in md


def test_help_modes_table_answers_does_help_help(mixed_run):
    md = _md(mixed_run)
    assert "### Help modes (does `--help` help?)" in md
    tables = _render(md).tables
    modes = next(t for t in tables if t[0][:2] == ["agent · model", "baseline"])
    assert modes[0][3:6] == ["mode", "passed", "Δ mode − baseline (95% CI)"]
    assert modes[1] == ["llm · openai/gpt-4.1", "injected", "6/9", "none", "6/9",
                        "0 pts (-38 to +38)", "1.000"]


def test_an_interrupted_run_whose_finished_trials_passed_is_not_headed_as_passed():
    """Issue 38: an interrupted run's summary.md was headed ✅ when the trials that finished
    before Ctrl-C all passed."""
    t = {"id": "a.r0", "task_id": "a", "model": None, "status": "pass", "composite_score": 1.0,
         "checks": [], "agent": "oracle", "duration_s": 0.5}
    summary = {"trials": 1, "passed": 1, "failed": 0, "errored": 0, "pass_rate": 1.0}
    md = render_markdown({"run_id": "r", "summary": summary, "trials": [t], "tasks": [],
                          "models": [], "complete": False, "interrupted": True})
    assert md.startswith("## ⏸️ proctor run `r` (incomplete)\n") and "✅" not in md.split("\n")[0]
    assert "> ⚠️ **Incomplete run**" in md
    failed = {**t, "status": "fail"}
    md = render_markdown({"run_id": "r", "trials": [failed], "tasks": [], "models": [],
                          "complete": False, "interrupted": True})
    assert md.startswith("## ❌ proctor run `r` (incomplete)\n")
