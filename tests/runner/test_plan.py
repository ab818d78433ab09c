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
