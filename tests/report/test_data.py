"""The shared views: cleaning untrusted text, grouping, usage figures."""

from __future__ import annotations

import pytest

from proctor.report import data, labels
from tests.helpers.report import aggregate, trial


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


CAREFUL = "mock/models/anthropic-claude-sonnet-4-5-careful.yaml"
SLOPPY = "mock/models/anthropic-claude-sonnet-4-5-sloppy.yaml"


@pytest.mark.parametrize("n", [7, 8, 10, 12, 16, 24, 40])
def test_short_labels_stay_distinct_and_show_what_differs(n):
    names = labels.short_labels([CAREFUL, SLOPPY, "openai/gpt-4.1"], n)
    assert len(set(names.values())) == 3 and all(len(v) <= max(n, 14) for v in names.values())
    if n >= 12:  # enough room: the part that tells them apart is shown
        assert "areful" in names[CAREFUL] and "loppy" in names[SLOPPY]


def test_short_labels_keep_a_task_labels_help_mode():
    names = labels.short_labels(["git-branch-rename [injected]", "git-branch-rename [none]"], 20,
                              keep_tail=True)
    assert names == {"git-branch-rename [injected]": "git-bran… [injected]",
                     "git-branch-rename [none]": "git-branch-r… [none]"}


def test_short_labels_differing_in_the_middle():
    names = labels.short_labels(["aaaaaaaa-X-bbbbbbbb", "aaaaaaaa-Y-bbbbbbbb"], 7)
    assert names == {"aaaaaaaa-X-bbbbbbbb": "…a-X-b…", "aaaaaaaa-Y-bbbbbbbb": "…a-Y-b…"}


def test_gist_keeps_what_failed_and_why():
    message = ("`make test` exited with 2, expected exit code 0\nstdout: (empty)\nstderr:\n"
               + "=" * 70 + "\n" + "\n".join(f"compiling module {i}" for i in range(40))
               + "\n" + "-" * 70 + "\nerror: undefined reference to `main'\n")
    g = labels.gist(message, 120)
    assert len(g) <= 120 and "=" * 4 not in g
    assert g.startswith("`make test` exited with 2, expected exit code 0 … ")
    assert g.endswith("error: undefined reference to `main'")
    assert labels.gist("short\n\nmessage") == "short message"
    one = labels.gist("x" * 300, 50)
    assert len(one) == 50 and " … " in one
