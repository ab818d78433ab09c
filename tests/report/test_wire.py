"""Model turns recorded on the wire (the proxy between an external agent and its model),
in each API's shape, streamed or not, as report.html's trajectories show them."""

from __future__ import annotations

import json

from proctor.report.trajectory import Trajectory
from proctor.report.wire import call_text, request_messages, response_calls, response_parts


def sse(*events) -> str:
    return "".join(f"event: x\ndata: {json.dumps(e)}\n\n" for e in events) + "data: [DONE]\n\n"


def _plain(msgs):
    return [{"role": m.role, "text": m.text, "calls": [c.line for c in m.calls]} for m in msgs]


def test_openai_chat_request_and_responses():
    system, msgs = request_messages({"model": "gpt", "messages": [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": [{"type": "text", "text": "list files"}]},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "1", "type": "function",
             "function": {"name": "bash", "arguments": '{"command": "ls -la"}'}}]},
        {"role": "tool", "tool_call_id": "1", "content": "a\nb"}]})
    assert system == "be brief"
    assert _plain(msgs) == [{"role": "user", "text": "list files", "calls": []},
                            {"role": "assistant", "text": "", "calls": ["bash: ls -la"]},
                            {"role": "tool", "text": "a\nb", "calls": []}]
    # the call keeps its id and arguments, the result the id of the call it answers
    assert (msgs[1].calls[0].id, msgs[1].calls[0].command, msgs[2].call_id) == ("1", "ls -la", "1")
    body = {"choices": [{"message": {"content": "done", "tool_calls": [
        {"function": {"name": "bash", "arguments": '{"command": "rm x"}'}}]}}]}
    assert response_parts(json.dumps(body)) == ("done", ["bash: rm x"])
    stream = sse({"choices": [{"delta": {"content": "do"}}]},
                 {"choices": [{"delta": {"content": "ne", "tool_calls": [
                     {"index": 0, "function": {"name": "bash", "arguments": '{"comm'}}]}}]},
                 {"choices": [{"delta": {"tool_calls": [
                     {"index": 0, "function": {"arguments": 'and": "pwd"}'}}]}}]})
    assert response_parts(stream) == ("done", ["bash: pwd"])
    stream = sse({"choices": [{"delta": {"tool_calls": [
        {"index": 0, "id": "call_9", "function": {"name": "bash", "arguments": '{}'}}]}}]})
    assert response_calls(stream)[1][0].id == "call_9"


def test_anthropic_messages_request_and_stream():
    system, msgs = request_messages({"system": [{"type": "text", "text": "you are an agent"}],
                                     "messages": [
        {"role": "user", "content": "fix it"},
        {"role": "assistant", "content": [{"type": "text", "text": "looking"},
                                          {"type": "tool_use", "id": "t", "name": "Bash",
                                           "input": {"command": "git status"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t",
                                      "content": [{"type": "text", "text": "clean"}]}]}]})
    assert system == "you are an agent"
    assert _plain(msgs)[1] == {"role": "assistant", "text": "looking", "calls": ["Bash: git status"]}
    assert _plain(msgs)[2] == {"role": "tool", "text": "clean", "calls": []}
    assert msgs[1].calls[0].id == "t" and msgs[2].call_id == "t"
    # two results of parallel calls in one user message: one tool message each
    _, both = request_messages({"messages": [{"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "a", "content": "A"},
        {"type": "tool_result", "tool_use_id": "b", "content": "B"}]}]})
    assert [(m.role, m.call_id, m.text) for m in both] == [("tool", "a", "A"), ("tool", "b", "B")]
    stream = sse({"type": "message_start"},
                 {"type": "content_block_start", "index": 0, "content_block": {"type": "text"}},
                 {"type": "content_block_delta", "index": 0,
                  "delta": {"type": "text_delta", "text": "ok"}},
                 {"type": "content_block_start", "index": 1,
                  "content_block": {"type": "tool_use", "name": "Bash"}},
                 {"type": "content_block_delta", "index": 1,
                  "delta": {"type": "input_json_delta", "partial_json": '{"command": "make'}},
                 {"type": "content_block_delta", "index": 1,
                  "delta": {"type": "input_json_delta", "partial_json": ' test"}'}})
    assert response_parts(stream) == ("ok", ["Bash: make test"])


def test_openai_responses_api():
    system, msgs = request_messages({"instructions": "sys", "input": [
        {"role": "user", "content": [{"type": "input_text", "text": "go"}]},
        {"type": "reasoning", "summary": []},
        {"type": "function_call", "name": "shell", "arguments": '{"command": ["ls", "-a"]}'},
        {"type": "function_call_output", "output": "x"}]})
    assert system == "sys" and [m.role for m in msgs] == ["user", "assistant", "tool"]
    assert [c.line for c in msgs[1].calls] == ["shell: ls -a"]
    done = {"type": "response.completed", "response": {"output": [
        {"type": "message", "content": [{"type": "output_text", "text": "hi"}]},
        {"type": "function_call", "name": "shell", "arguments": '{"command": ["pwd"]}'}]}}
    assert response_parts(sse({"type": "response.output_text.delta", "delta": "h"}, done)) == (
        "hi", ["shell: pwd"])


def test_unknown_shapes_are_text_never_errors():
    assert response_parts("plain words") == ("plain words", [])
    assert response_parts(None) == ("", [])
    assert request_messages("not json")[1][0].text == "not json"
    assert call_text("t", "{bad json") == "t({bad json)"
    assert call_text("t", {"a": 1, "b": 2}) == 't({"a": 1, "b": 2})'


def test_proxy_turns_show_only_what_is_new():
    def call(n_messages, turn, side=False):
        msgs = [{"role": "user", "content": "task"}] + [
            {"role": "assistant" if i % 2 else "user", "content": f"m{i}"}
            for i in range(1, n_messages)]
        ev = {"type": "model_call", "source": "proxy", "path": "/v1/messages", "turn": turn,
              "request": {"model": "claude", "system": "S", "messages": msgs},
              "response": json.dumps({"content": [{"type": "text", "text": f"r{turn}"}]}),
              "usage": {"input": 10, "output": 2}, "latency_s": 0.1}
        if side:
            ev["side"] = True
        return ev

    doc = Trajectory([call(1, 1), call(3, 2), call(2, 0, side=True), call(5, 3)], []).at()
    first, second, side, third = doc["items"]
    assert first["sys"][0] == "system prompt" and first["sys"][1] == "S"
    assert [m["role"] for m in first["msgs"]] == ["user"] and first["text"] == "r1"
    assert first["model"] == "claude"
    # later turns: the new user messages only (the model's own answers are the turns above)
    assert [m["parts"] for m in second["msgs"]] == [["m2"]] and "sys" not in second
    assert side["side"] == "side call" and "sys" in side
    assert [m["parts"] for m in third["msgs"]] == [["m4"]]
    ignored = Trajectory([{"type": "command", "command": "node cli.js", "exit_code": 0,
                           "ignored": "the agent program", "stdout": "x" * 9000}], []).at()
    assert ignored["items"] == [{"k": "aside", "label": "set aside",
                                 "lines": [["node cli.js", "the agent program"]]}]


def test_a_command_call_reads_as_the_command():
    assert call_text("Bash", {"command": "make", "description": "build"}) == \
        'Bash: make  ("description": "build")'
    assert call_text("shell", '{"command": ["ls", "-a"]}') == "shell: ls -a"
