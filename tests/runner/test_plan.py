from __future__ import annotations

from proctor.model import AgentDef, RunOptions, TaskDef
from proctor.plan import plan, select, trial_id


def task(id="t", **kw):
    kw.setdefault("agent", AgentDef(type="llm"))
    return TaskDef(id=id, dialect=kw.pop("dialect", "suite"), source="s.yaml", base_dir=".",
                   prompt="p", checks=[], **kw)


def test_models_help_modes_and_repeats_multiply():
    t = task(models=["openai/a", "anthropic/b"], help_modes=["injected", "none"], repeat=3)
    trials = plan([t], RunOptions())
    assert len(trials) == 2 * 2 * 3
    assert {tr.model for tr in trials} == {"openai/a", "anthropic/b"}
    assert {tr.replica for tr in trials} == {0, 1, 2}
    assert len({tr.id for tr in trials}) == len(trials)


def test_non_llm_agents_have_no_model_or_help_mode():
    t = task(models=["openai/a"], help_modes=["injected", "none"])
    trials = plan([t], RunOptions(agent="oracle"))
    assert [(tr.model, tr.help_mode) for tr in trials] == [(None, None)]


def test_matrix_cross_product_and_replicas():
    t = task(dialect="scenario", agent=AgentDef(type="command", command="x"),
             matrix={"size": [1, 2], "mode": ["a", "b", "c"]}, repeat=2)
    trials = plan([t], RunOptions())
    assert len(trials) == 2 * 3 * 2
    assert {tuple(sorted(tr.params.items())) for tr in trials} == {
        (("mode", m), ("size", s)) for m in "abc" for s in (1, 2)}


def test_cli_overrides_models_and_repeat():
    t = task(models=["openai/a"], repeat=5)
    trials = plan([t], RunOptions(models=["mock/x"], repeat=2))
    assert {tr.model for tr in trials} == {"mock/x"} and len(trials) * 1 == 2


def test_trial_ids_are_deterministic_and_safe():
    a = trial_id("task one", "openai/gpt-4.1", "injected", {"k": "v/w"}, 2)
    assert a == trial_id("task one", "openai/gpt-4.1", "injected", {"k": "v/w"}, 2)
    assert a.startswith("task-one.openai-gpt-4.1.injected.k=v-w.r2.")
    assert trial_id("t", "openai/gpt-4.1", None, {}, 0) == "t.openai-gpt-4.1.r0"


def test_trial_ids_that_sanitize_alike_stay_apart():
    assert trial_id("build app", None, None, {}, 0) != trial_id("build/app", None, None, {}, 0)


def test_select_by_task_and_category():
    ts = [task("a", category="x"), task("b", category="y"), task("c")]
    assert [t.id for t in select(ts, RunOptions(tasks=["a", "c"]))] == ["a", "c"]
    assert [t.id for t in select(ts, RunOptions(categories=["y"]))] == ["b"]


def test_replica_ids_are_zero_padded_to_sort_in_order():
    task = TaskDef(id="t", dialect="scenario", source="s.yaml", base_dir=".", prompt="p",
                   agent=AgentDef(type="oracle"), checks=[], repeat=11)
    ids = [t.id for t in plan([task], RunOptions())]
    assert ids[:2] == ["t.r00", "t.r01"] and ids[-1] == "t.r10" and sorted(ids) == ids
    # up to 10 replicas the ids are what they always were
    assert [t.id for t in plan([task], RunOptions(repeat=3))] == ["t.r0", "t.r1", "t.r2"]
    # a run planned before padding keeps its ids, so --resume finds its finished trials
    assert [t.id for t in plan([task], RunOptions(), pad=False)][-1] == "t.r10"
    assert trial_id("t", None, None, {}, 7, width=3) == "t.r007"


def test_agents_are_a_dimension_and_each_trial_id_names_its_agent():
    """Issue 38: `--agent claude-code --agent codex` ran only codex. Every agent runs every
    task (its models and help modes, as it alone would); with several agents each id names
    its agent, and with one the ids stay as they were (a run of one resumes unchanged)."""
    t = task(models=["mock/a", "mock/b"], help_modes=["injected", "none"])
    trials = plan([t], RunOptions(agent="llm", agents=["llm", "claude-code", "oracle"]))
    got = {(tr.agent, tr.model, tr.help_mode) for tr in trials}
    assert got == {(a, m, h) for a in ("llm", "claude-code") for m in ("mock/a", "mock/b")
                   for h in ("injected", "none")} | {("oracle", None, None)}
    assert len(trials) == 9 and len({tr.id for tr in trials}) == 9
    assert "t.claude-code.mock-a.injected.r0" in {tr.id for tr in trials}
    assert "t.oracle.r0" in {tr.id for tr in trials}
    one = plan([t], RunOptions(agent="claude-code", agents=["claude-code"]))
    assert [tr.id for tr in one][0] == "t.mock-a.injected.r0"
    assert plan([t], RunOptions(agent="oracle"))[0].id == "t.r0"  # a run.json before `agents`


def test_agents_from_proctor_toml_and_a_wrong_name_is_exit_2(cli, tmp_path):
    (tmp_path / "spec.yaml").write_text(
        "cli: sh\ntasks:\n  - id: count\n    intent: print 3\n    solution: ['echo 3']\n"
        "    assert:\n      - output_equals: '3'\n")
    (tmp_path / "proctor.toml").write_text('agents = ["oracle", "nop"]\n')
    out = cli("run", "spec.yaml", "-q", "--output-dir", "run")
    assert out.returncode == 1 and out.stdout.startswith("1/2 passed, 1 failed")
    import json

    meta = json.loads((tmp_path / "run" / "run.json").read_text())
    assert meta["options"]["agents"] == ["oracle", "nop"]  # kept for --resume
    over = cli("run", "spec.yaml", "-q", "--agent", "oracle")  # --agent wins over the file
    assert over.returncode == 0 and over.stdout.startswith("1/1 passed")
    (tmp_path / "proctor.toml").write_text('agents = ["oracle", "gpt"]\n')
    bad = cli("run", "spec.yaml", "-q")
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    assert bad.stderr.startswith("proctor: proctor.toml:1:1: agents: 'gpt' is not an agent: "
                                 "expected 'llm', "), bad.stderr


def test_tasks_with_and_without_a_matrix_each_their_own_agent_or_the_runs():
    plain = task("p", agent=AgentDef(type="oracle"), repeat=2)
    grid = task("g", dialect="scenario", agent=AgentDef(type="nop"), matrix={"n": [1, 2]})
    trials = plan([plain, grid], RunOptions())
    assert [(tr.id, tr.agent, tr.params) for tr in trials] == [
        ("p.r0", "oracle", {}), ("p.r1", "oracle", {}),
        ("g.n=1.r0", "nop", {"n": 1}), ("g.n=2.r0", "nop", {"n": 2})]
    trials = plan([plain, grid], RunOptions(agents=["oracle", "nop"]))
    assert [tr.id for tr in trials] == ["p.oracle.r0", "p.oracle.r1", "p.nop.r0", "p.nop.r1",
                                        "g.oracle.n=1.r0", "g.oracle.n=2.r0", "g.nop.n=1.r0",
                                        "g.nop.n=2.r0"]
