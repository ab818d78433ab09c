"""Help modes for every agent that takes a prompt (SPEC §4): the real Claude Code, Codex and
mini-swe-agent, and `llm` beside them, against proctor's mock model, whose proxy records
every request — the help text reaches the model under `injected` and not under `none`;
`discoverable` says how to get it; the suite's system_prompt goes along in every mode. The
`command` agent finds it in its prompt; `oracle` runs one trial and the report says why."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.helpers import REPO
from tests.helpers.agents import AGENTS, need_agent
from tests.helpers.cli import Cli, results, run_dir_of

pytestmark = pytest.mark.slow

SUITE = """
cli: wc
providers: [mock/scripts/count.yaml]
help_modes: [injected, discoverable, none]
system_prompt: Always count with wc.
tasks:
  - id: count-orders
    intent: >-
      Count the data rows of orders.csv (not the header line) with shell tools and write
      just the number into count.txt.
    setup: ["printf 'id,customer,total\\\\n1,ada,10.50\\\\n2,bob,15.00\\\\n3,cy,7.25\\\\n' > orders.csv"]
    solution: ["tail -n +2 orders.csv | wc -l > count.txt"]
    timeout: 120
    assert:
      - verify: {run: "tr -d ' \\\\n' < count.txt", output_equals: "3"}
"""
HELP = "Usage: wc [OPTION]"  # the first line of `wc --help` (GNU coreutils)


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    shutil.copytree(REPO / "examples" / "external-agents" / "scripts", tmp_path / "scripts")
    (tmp_path / "cli-bench.yaml").write_text(SUITE)
    return tmp_path


def requests_by_mode(run: Path) -> dict[str, str]:
    """Every model request of each trial, as one text, by help mode."""
    out = {}
    for t in results(run)["trials"]:
        events = [json.loads(line) for line in
                  (run / "trials" / t["id"] / "trace.jsonl").read_text().splitlines()]
        out[t["help_mode"]] = "\n".join(json.dumps(e.get("request")) for e in events
                                        if e["type"] == "model_call")
    return out


@pytest.mark.parametrize("agent", ["llm", *AGENTS])
def test_the_help_text_reaches_the_model_only_when_injected(agent, suite):
    if agent != "llm":
        need_agent(agent)
    proc = Cli(suite)("run", "cli-bench.yaml", "--agent", agent, "-q", timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    run = run_dir_of(proc)
    sent = requests_by_mode(run)
    assert set(sent) == {"injected", "discoverable", "none"}  # one trial per mode, none dropped
    assert HELP in sent["injected"]
    assert HELP not in sent["none"] and HELP not in sent["discoverable"]
    assert "Run `wc --help`" in sent["discoverable"] and "Run `wc --help`" not in sent["none"]
    assert all("Always count with wc." in text for text in sent.values())
    # "Does --help help this agent?": the Help modes rows of results.json (and every report).
    effects = results(run)["help_modes"]
    assert {(e["mode_a"], e["mode_b"]) for e in effects} == {
        ("injected", "discoverable"), ("injected", "none")}
    label = effects[0]["agent"]
    assert label.startswith(f"{agent}:") if agent != "llm" else label.startswith("mock/")


def test_claude_code_gets_it_in_its_system_prompt_codex_in_agents_md(suite):
    """Where each agent reads it: Claude Code's system prompt (not a user message); Codex's
    global AGENTS.md, which it sends as its first instructions."""
    for agent in ("claude-code", "codex"):
        need_agent(agent)
    proc = Cli(suite)("run", "cli-bench.yaml", "--agent", "claude-code", "-q", timeout=600)
    run = run_dir_of(proc)
    [t] = [t for t in results(run)["trials"] if t["help_mode"] == "injected"]
    calls = [json.loads(line) for line in (run / "trials" / t["id"] / "trace.jsonl")
             .read_text().splitlines()]
    main = [c["request"] for c in calls if c["type"] == "model_call" and not c.get("side")]
    assert HELP in json.dumps(main[0]["system"]) and HELP not in json.dumps(main[0]["messages"])
    proc = Cli(suite)("run", "cli-bench.yaml", "--agent", "codex", "-q", timeout=600)
    run = run_dir_of(proc)
    [t] = [t for t in results(run)["trials"] if t["help_mode"] == "injected"]
    calls = [json.loads(line) for line in (run / "trials" / t["id"] / "trace.jsonl")
             .read_text().splitlines()]
    first = next(c["request"] for c in calls if c["type"] == "model_call")
    told = [m for m in first["input"] if HELP in json.dumps(m)]
    assert told and "AGENTS.md" in json.dumps(told[0])


def test_a_command_agent_finds_it_ahead_of_its_prompt(suite):
    (suite / "cli-bench.yaml").write_text(SUITE.replace(
        "      - verify:", "      - file_contains: {path: prompt.txt, text: 'Count the data rows'}"
        "\n      - file_contains: {path: prompt.txt, text: '" + HELP + "'}\n      - verify:"))
    proc = Cli(suite)("run", "cli-bench.yaml", "--agent", "command", "-q", "--agent-command",
                      "sh -c 'printf %s \"$0\" > prompt.txt; tail -n +2 orders.csv | wc -l "
                      "> count.txt' {{prompt}}")
    trials = {t["help_mode"]: t for t in results(run_dir_of(proc))["trials"]}
    assert trials["injected"]["status"] == "pass"
    for mode in ("discoverable", "none"):  # the task is there, the help text is not
        failed = [c["name"] for c in trials[mode]["checks"] if not c["passed"]]
        assert failed == ["file_contains#1"], trials[mode]


def test_oracle_runs_one_trial_and_the_report_says_why(suite):
    proc = Cli(suite)("run", "cli-bench.yaml", "--agent", "oracle", "--format", "md")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    run = run_dir_of(proc)
    doc = results(run)
    assert [t["help_mode"] for t in doc["trials"]] == [None]
    why = ("oracle takes no prompt, so help_modes [injected, discoverable, none] do not apply "
           "to it: one trial per task (1 task)")
    assert doc["notes"] == [why]
    assert f"note: {why}" in " ".join(proc.stdout.split())  # folded to the width
    assert "help\\_modes \\[injected, discoverable, none\\]" in (run / "summary.md").read_text()
