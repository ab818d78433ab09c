"""mock/…'s counts of a conversation (the answers so far, which pick the scripted turn, and the
characters its usage estimate is made of) are carried from call to call (providers/mock.py
Tally): each call reads only the messages new since the last, and a conversation that
changed otherwise is counted afresh, as a provider that never saw it counts it."""

from __future__ import annotations

from typing import Any

from proctor.providers.mock import MockProvider, script_for

SOLUTION = [f"echo step-{j} >> log.txt" for j in range(6)]


class Read(dict[str, Any]):
    """A message that counts how often it is read."""

    reads = 0

    def get(self, key: str, default: Any = None) -> Any:
        Read.reads += 1
        return super().get(key, default)


def _solver() -> MockProvider:
    return MockProvider("mock/solver", script_for("solver", None, SOLUTION))


async def _answer(provider: MockProvider, messages: list[dict[str, Any]]) -> tuple[Any, ...]:
    r = await provider.complete("system", messages, [])
    return r.text, [c.to_dict() for c in r.tool_calls], r.usage.input, r.usage.output


async def _fresh(messages: list[dict[str, Any]]) -> tuple[Any, ...]:
    return await _answer(_solver(), list(messages))


async def test_a_growing_conversation_is_answered_as_a_fresh_provider_answers_it():
    provider, messages = _solver(), [Read(role="user", content="Write the log.")]
    reads = 0  # of the messages, by the provider that carries its counts
    for turn in range(len(SOLUTION) + 1):
        before = Read.reads
        got = await _answer(provider, messages)
        reads += Read.reads - before
        assert got == await _fresh(messages), turn
        assert got[1] == ([] if turn == len(SOLUTION) else [
            {"id": f"call_{turn}_0", "name": "run_command",
             "arguments": {"command": SOLUTION[turn]}}])
        if not got[1]:
            break
        messages += [Read(role="assistant", content="", tool_calls=got[1]),
                     Read(role="tool", tool_call_id=got[1][0]["id"], name="run_command",
                          content="exit code: 0\n" + "x" * (10 * turn))]
    # Each message read once (its content and role), plus the prompt (the first user
    # message) once a call; counting every message at every call reads 112 times here.
    assert reads == 2 * len(messages) + 2 * (len(SOLUTION) + 1), reads


async def test_a_changed_conversation_is_counted_afresh():
    provider = _solver()
    first = [{"role": "user", "content": "Write the log."}]
    await _answer(provider, first)
    grown = first + [{"role": "assistant", "content": "", "tool_calls": []},
                     {"role": "tool", "content": "y" * 400}]
    assert await _answer(provider, grown) == await _fresh(grown)  # another list
    grown[-1] = {"role": "tool", "content": "z"}  # its last message replaced
    assert await _answer(provider, grown) == await _fresh(grown)
    del grown[1:]  # cut shorter, then grown again with other messages
    assert await _answer(provider, grown) == await _fresh(grown)
    grown += [{"role": "assistant", "content": "a" * 50}, {"role": "user", "content": "b"},
              {"role": "assistant", "content": ""}]
    assert await _answer(provider, grown) == await _fresh(grown)
    assert (await _answer(provider, grown))[1][0]["id"] == "call_2_0"  # two answers so far


def test_the_usage_estimate_counts_a_calls_arguments_as_json_dumps_writes_them():
    """The answer's characters are its text and each call's arguments as `json.dumps`
    writes them: counted from the strings' JSON forms (providers/mock.py json_length), the
    same length for any text (quotes, escapes, non-ASCII, lone surrogates) and any other
    arguments (written whole)."""
    import json

    from proctor.providers.mock import json_length

    for args in ({}, {"command": "echo hi"}, {"command": 'say "é"\n\t\\', "why": "ü" * 3},
                 {"command": "\ud800 x"}, {"n": 1}, {"l": [1, "a"]}, {1: "x"},
                 {"a": None, "b": "c"}):
        assert json_length(args) == len(json.dumps(args)), args
