"""An external agent's final answer (the trial's `output`, the launcher's stdout)."""

from __future__ import annotations

from proctor.agents.claude_code import ClaudeCode
from proctor.agents.mini_swe_agent import final_message


def test_mini_swe_agent_answer_is_its_submission_else_its_last_message():
    said = {"role": "assistant", "content": "count.txt holds 3"}
    task = {"role": "user", "content": "Please solve this issue: never delete files"}
    assert final_message({"info": {"submission": ""}, "messages": [task, said,
                                                                   {"role": "exit"}]}) == \
        "count.txt holds 3"
    assert final_message({"info": {"submission": "diff --git a/x"}, "messages": [said]}) == \
        "diff --git a/x"
    parts = {"role": "assistant", "content": [{"type": "text", "text": "a"},
                                              {"type": "text", "text": "b"}]}
    assert final_message({"messages": [parts]}) == "ab"
    # nothing said, or not a trajectory at all: no answer, never the prompt
    for odd in ({"messages": [task]}, {"messages": "x"}, [], None, {"info": 3}):
        assert final_message(odd) == ""


def test_claude_code_answer_is_the_result_field():
    assert ClaudeCode().answer('{"type": "result", "is_error": false, "result": "3 rows"}') == \
        "3 rows"
    assert ClaudeCode().answer("not json") == "not json"
