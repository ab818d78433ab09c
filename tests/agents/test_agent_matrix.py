"""Agents as a matrix dimension (SPEC §1, issue 38): `--agent llm --agent claude-code --agent
codex` is one run of agent × model × help mode × task, each report names every row's agent
and model together, thresholds judge each agent × model row, and `compare RUN --by agent`
tests the agents against each other with Fisher's exact test, as it tests two runs."""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET
from math import comb

import pytest

from tests.helpers import REPO
from tests.helpers.agents import need_agent
from tests.helpers.cli import Cli, results

pytestmark = pytest.mark.slow

EXAMPLE = REPO / "examples" / "external-agents"
AGENTS = ("llm", "claude-code", "codex")
GOOD, WRONG = "mock/scripts/count.yaml", "mock/scripts/wrong-count.yaml"


def _brute_fisher(a: int, b: int, c: int, d: int) -> float:
    """Two-sided Fisher's exact test from the hypergeometric distribution, summed directly."""
    n1, n2, k = a + b, c + d, a + c
    n = n1 + n2

    def p(x: int) -> float:
        return comb(n1, x) * comb(n2, k - x) / comb(n, k)

    observed = p(a)
    return min(1.0, sum(p(x) for x in range(max(0, k - n2), min(k, n1) + 1)
                        if p(x) <= observed * (1 + 1e-7)))


@pytest.fixture(scope="module")
def matrix_run(tmp_path_factory):
    for agent in AGENTS[1:]:
        need_agent(agent)
    root = tmp_path_factory.mktemp("matrix")
    shutil.copytree(EXAMPLE, root / "spec")
    suite = root / "spec" / "cli-bench.yaml"
    suite.write_text(suite.read_text() + "\nthresholds: {default: 100}\n")
    cli = Cli(root, env={"COLUMNS": "200", "PROCTOR_HOME": str(root / "home")})
    out = cli("run", "spec", *(x for a in AGENTS for x in ("--agent", a)), "--model", GOOD,
              "--model", WRONG, "--output-dir", "run", "--format", "junit,md,html",
              timeout=900)
    # every agent passes with the good script and fails with the wrong one: the thresholds
    # (100%) are missed by the wrong-count rows
    assert out.returncode == 1, out.stdout + out.stderr
    return cli, root / "run", out.stdout


def test_one_run_holds_every_agent_under_every_model(matrix_run):
    cli, run, _ = matrix_run
    res = results(run)
    trials = res["trials"]
    assert len(trials) == 6 and len({t["id"] for t in trials}) == 6
    assert {(t["agent"], t["model"]): t["status"] for t in trials} == {
        (a, m): "pass" if m == GOOD else "fail" for a in AGENTS for m in (GOOD, WRONG)}
    # a trial id names its agent in a run of several (each its own sandbox, its own line)
    assert {t["id"].split(".")[1] for t in trials} == set(AGENTS)
    rows = {(r["agent"], r["model"]): r for r in res["models"]}
    assert len(rows) == 6  # one row per agent × model, each judged by the threshold
    for (label, model), row in rows.items():
        assert row["threshold"] == 100 and row["met"] is (model == GOOD), (label, row)
    # --resume knows each agent's trials apart: with Codex's lost, only they run again
    lines = (run / "results.jsonl").read_text().splitlines()
    kept = [x for x in lines if json.loads(x)["agent"] != "codex"]
    assert len(kept) == 4
    (run / "results.jsonl").write_text("".join(x + "\n" for x in kept))
    again = cli("run", "--resume", "run", "-q", timeout=600)
    assert again.stdout.startswith("3/6 passed, 3 failed"), again.stdout + again.stderr
    after = (run / "results.jsonl").read_text().splitlines()
    assert after[:4] == kept and sorted(json.loads(x)["agent"] for x in after[4:]) == [
        "codex", "codex"]
    assert sorted(t["id"] for t in results(run)["trials"]) == sorted(t["id"] for t in trials)


def test_every_report_names_each_agent_and_model(matrix_run):
    cli, run, stdout = matrix_run
    names = [f"{a} · {m}" for a in AGENTS for m in (GOOD, WRONG)]
    md = (run / "summary.md").read_text()
    html = (run / "report.html").read_text()
    props = [p.get("value") for p in ET.parse(run / "junit.xml").iter("property")
             if p.get("name") == "agent_model"]
    suites = [s.get("name") for s in ET.parse(run / "junit.xml").iter("testsuite")]
    shown = cli("show", "run").stdout
    head = " ".join(shown.split("\ntrial ")[0].split()[2:])  # after `run ID`, before the table
    failed = cli("show", "run", "--failed").stdout
    listed = cli("runs", env={"COLUMNS": "400"}).stdout
    for name in names:
        assert name in stdout, name  # the terminal's tables
        assert f"| {name} |" in md, name  # summary.md's agents and tasks tables
        assert name in html, name
        assert name in props and f"count-orders [{name}, injected]" in suites, name
        assert name in head, name  # show's header: who was under test
        assert name in listed, name  # proctor runs
    for agent in AGENTS:  # the failures, each group named by who failed
        assert f"({agent} · {WRONG})" in failed
    assert not any(f"({agent} · {GOOD})" in failed for agent in AGENTS)


def test_compare_by_agent_gives_the_exact_tests_p_value(matrix_run):
    cli, run, _ = matrix_run
    out = cli("compare", "run", "--by", "agent", "--format", "json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["by"] == "agent" and len(data["comparisons"]) == 2  # each against llm
    for comparison, agent in zip(data["comparisons"], AGENTS[1:], strict=True):
        assert comparison["run_a"].endswith(" · llm")
        assert comparison["run_b"].endswith(f" · {agent}")
        # the same task under the same model, one agent against the other
        assert {r["label"] for r in comparison["tasks"]} == {GOOD, WRONG}
        for row in comparison["tasks"] + comparison["models"]:
            a, n_a, b, n_b = row["passed_a"], row["trials_a"], row["passed_b"], row["trials_b"]
            assert n_a == n_b == 1
            assert row["p"] == pytest.approx(_brute_fisher(a, n_a - a, b, n_b - b), rel=1e-12)
    text = cli("compare", "run", "--by", "agent").stdout
    assert "· llm  vs  B" in text and "· claude-code" in text and "· codex" in text
    alone = cli("compare", "run")
    assert alone.returncode == 2 and "--by agent" in alone.stderr
