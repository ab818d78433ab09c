"""`proctor mock-llm` speaks what the official SDKs speak: streaming and not, token counts,
model lists, provider-shaped ids, usage and errors — each through the real `openai` and
`anthropic` clients over loopback."""

from __future__ import annotations

import anthropic
import openai
import pytest

TOOLS_OPENAI = [{"type": "function", "function": {
    "name": "run_command", "parameters": {"type": "object",
                                          "properties": {"command": {"type": "string"}}}}}]
TOOLS_ANTHROPIC = [{"name": "run_command", "input_schema": {
    "type": "object", "properties": {"command": {"type": "string"}}}}]


@pytest.fixture
def oai(wire_server):
    return openai.OpenAI(base_url=wire_server.url + "/v1", api_key="k", max_retries=0)


@pytest.fixture
def ant(wire_server):
    return anthropic.Anthropic(base_url=wire_server.url, api_key="k", max_retries=0)


def test_chat_completions_stream_matches_the_unstreamed_answer(oai):
    ask = {"model": "m", "tools": TOOLS_OPENAI,
           "messages": [{"role": "user", "content": "SDK-STREAM openai"}]}
    whole = oai.chat.completions.create(**ask)
    stream = oai.chat.completions.create(**ask, stream=True,
                                         stream_options={"include_usage": True})
    text, calls, finish, usage = "", {}, None, None
    for chunk in stream:
        if chunk.usage is not None:
            usage = chunk.usage
        for choice in chunk.choices:
            text += choice.delta.content or ""
            for tc in choice.delta.tool_calls or []:
                call = calls.setdefault(tc.index, {"id": tc.id, "name": "", "args": ""})
                call["name"] += tc.function.name or ""
                call["args"] += tc.function.arguments or ""
            finish = choice.finish_reason or finish
    message = whole.choices[0].message
    assert text == message.content == "Listing the files, then done."
    assert [(c["id"], c["name"], c["args"]) for c in calls.values()] == [
        (t.id, t.function.name, t.function.arguments) for t in message.tool_calls]
    assert message.tool_calls[0].id == "call_0_0"
    assert finish == whole.choices[0].finish_reason == "tool_calls"
    assert (usage.prompt_tokens, usage.completion_tokens) == (42, 7)
    assert whole.usage.prompt_tokens_details.cached_tokens == 0


def test_messages_stream_and_helper_match_the_unstreamed_answer(ant):
    ask = {"model": "m", "max_tokens": 100, "tools": TOOLS_ANTHROPIC,
           "messages": [{"role": "user", "content": "SDK-STREAM anthropic"}]}
    whole = ant.messages.create(**ask)
    events = [e.type for e in ant.messages.create(**ask, stream=True)]
    assert events[0] == "message_start" and events[-1] == "message_stop"
    assert "content_block_delta" in events and "message_delta" in events
    with ant.messages.stream(**ask) as stream:
        final = stream.get_final_message()
    assert [b.model_dump() for b in final.content] == [b.model_dump() for b in whole.content]
    assert whole.content[1].id == "toolu_0_0"
    assert whole.content[1].input == {"command": "ls -la"}
    assert final.stop_reason == whole.stop_reason == "tool_use"
    assert final.usage.output_tokens == whole.usage.output_tokens == 7
    assert whole.usage.cache_read_input_tokens == 0


def test_count_tokens_and_model_lists(ant, oai):
    n = ant.messages.count_tokens(model="m", messages=[{"role": "user", "content": "hello"}])
    assert n.input_tokens > 0
    assert [m.id for m in ant.models.list()] == ["mock"]
    assert [m.id for m in oai.models.list()] == ["mock"]


def test_a_later_user_message_can_name_the_conversation(oai):
    answer = oai.chat.completions.create(model="m", messages=[
        {"role": "user", "content": "<environment_context>cwd=/w</environment_context>"},
        {"role": "user", "content": "SDK-LATER please"}])
    assert answer.choices[0].message.content == "found in a later user message"


def test_errors_are_provider_shaped(ant):
    with pytest.raises(anthropic.BadRequestError) as err:
        ant.messages.create(model="m", max_tokens=10,
                            messages=[{"role": "user", "content": "NO-SUCH-CONVERSATION"}])
    assert err.value.body["type"] == "error" and "error" in err.value.body


TOOLS_RESPONSES = [{"type": "function", "name": "run_command",
                    "parameters": {"type": "object",
                                   "properties": {"command": {"type": "string"}}}}]


def test_responses_stream_matches_the_unstreamed_answer(oai):
    # Codex's shape: an <environment_context> user message before the task's own.
    ask = {"model": "m", "tools": TOOLS_RESPONSES, "instructions": "be brief",
           "input": [{"role": "user", "content": "<environment_context>cwd=/w</environment_context>"},
                     {"role": "user", "content": [{"type": "input_text",
                                                   "text": "SDK-STREAM responses"}]}]}
    whole = oai.responses.create(**ask)
    assert whole.id.startswith("resp_") and whole.status == "completed"
    assert [o.type for o in whole.output] == ["message", "function_call"]
    assert whole.output_text == "Listing the files, then done."
    call = whole.output[1]
    assert (call.id, call.call_id, call.name) == ("fc_0_0", "call_0_0", "run_command")
    assert call.arguments == '{"command": "ls -la"}'
    assert (whole.usage.input_tokens, whole.usage.output_tokens) == (42, 7)
    assert whole.usage.input_tokens_details.cached_tokens == 0
    events = list(oai.responses.create(**ask, stream=True))
    assert events[0].type == "response.created" and events[-1].type == "response.completed"
    assert [e.sequence_number for e in events] == list(range(len(events)))
    text = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    args = "".join(e.delta for e in events if e.type == "response.function_call_arguments.delta")
    assert (text, args) == (whole.output_text, call.arguments)
    final = events[-1].response
    assert ([o.model_dump(exclude={"id"}) for o in final.output]
            == [o.model_dump(exclude={"id"}) for o in whole.output])
    assert final.usage.output_tokens == 7


def test_responses_message_and_its_calls_are_one_turn(oai):
    first = oai.responses.create(model="m", tools=TOOLS_RESPONSES,
                                 input="SDK-STREAM responses turn")
    items = [{"role": "user", "content": "SDK-STREAM responses turn"}]
    items += [o.model_dump(exclude_none=True) for o in first.output]
    call = first.output[1]
    items.append({"type": "function_call_output", "call_id": call.call_id, "output": "a b"})
    second = oai.responses.create(model="m", tools=TOOLS_RESPONSES, input=items)
    assert second.output_text == "All done." and len(second.output) == 1


def test_responses_errors_are_openai_shaped(oai):
    import openai as sdk
    with pytest.raises(sdk.BadRequestError) as err:
        oai.responses.create(model="m", input="NO-SUCH-CONVERSATION")
    assert "error" in err.value.body or "message" in err.value.body


def test_responses_stream_helper_accumulates_the_response(oai):
    with oai.responses.stream(model="m", tools=TOOLS_RESPONSES,
                              input="SDK-STREAM helper") as stream:
        final = stream.get_final_response()
    assert final.output_text == "Listing the files, then done."
    assert [o.type for o in final.output] == ["message", "function_call"]
