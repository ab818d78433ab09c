"""The shared views: cleaning untrusted text, grouping, usage figures."""

from __future__ import annotations

import pytest

from proctor.report import data
from tests.report.conftest import aggregate, trial


def test_clean_removes_escapes_and_controls():
    s = "a\x1b[1;31mred\x1b[0m b\x1b]0;evil title\x07c\x00d\r\ne\x9bf\tg"
    assert data.clean(s) == "ared bcd\nef\tg"
    assert data.clean(None) == ""


def test_cut_and_one_line():
    assert data.cut("abcdef", 3) == "abc... [3 more characters]"
    assert data.cut("abc", 3) == "abc"
    assert data.one_line("a\n  b\tc", 10) == "a b c"


@pytest.mark.parametrize(("x", "text"), [(0.02, "0.02s"), (4, "4.0s"), (75, "1m15s"),
                                         (3725, "1h02m"), (None, "–")])
def test_seconds(x, text):
    assert data.seconds(x) == text


def test_usage_figures_and_cost_per_success():
    trials = [trial("a.r0", "a", "pass", model="m", turns=2, tokens=(100, 10), cost=0.5),
              trial("a.r1", "a", "fail", model="m", turns=4, tokens=(300, 30), cost=0.5),
              trial("b.r0", "b", "fail", model="n", cost=0.2),
              trial("c.r0", "c", "pass", model="o")]
    rows = {r["model"]: r for r in data.model_rows(aggregate(trials))}
    assert rows["m"]["avg_turns"] == 3 and rows["m"]["tokens"]["input"] == 400
    assert rows["m"]["cost_per_success"] == pytest.approx(1.0)
    # The scorer's one rule: no success (or no known cost) means no cost per success.
    assert rows["n"]["cost_per_success"] is None and rows["n"]["cost_usd"] == 0.2
    assert rows["o"]["cost_per_success"] is None and rows["o"]["cost_usd"] is None


def test_task_rows_are_split_by_help_mode():
    trials = [trial("a.m.injected.r0", "a", "pass", model="m", help_mode="injected"),
              trial("a.m.none.r0", "a", "fail", model="m", help_mode="none")]
    rows = data.task_rows(aggregate(trials))
    assert [(r["task_label"], r["passed"], r["trials"]) for r in rows] == [
        ("a [injected]", 1, 1), ("a [none]", 0, 1)]


def test_model_label_for_agents_without_model():
    assert data.model_label(None, [{"model": None, "agent": "oracle"}]) == "(oracle)"
    assert data.model_label(None, []) == "(no model)"
    assert data.model_label("openai/gpt-4.1") == "openai/gpt-4.1"


def test_rows_without_aggregates_fall_back_to_trials():
    trials = [trial("a.r0", "a", "pass", model="m"), trial("a.r1", "a", "error", model="m")]
    results = {"trials": trials}
    (m,) = data.model_rows(results)
    assert m["pass_rate"] == 0.5 and m["errored"] == 1 and m["threshold"] is None
    (t,) = data.task_rows(results)  # scored as the run goes, without the tasks' rules
    assert t["status"] == "error" and t["passed"] == 1
    assert data.headline(results)["trials"] == 2


def test_money_known_to_be_zero_reads_free():
    from proctor.report.data import usd

    assert usd(0.0) == "free" and usd(None) == "–" and usd(0.0021) == "$0.0021"
