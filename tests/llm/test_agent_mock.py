"""mock-llm as an external agent's model: `run:` turns in the agent's own shell tool, a
final answer as its finishing command, and side calls for other models answered plainly."""

from __future__ import annotations

import json

import httpx

from proctor.providers.mock_server import SIDE_ANSWER, MockServer
from proctor.providers.script import Script

SCRIPT = Script.model_validate({"turns": [{"run": "ls -l"}, {"say": "all done"}]})


def bash(command: str) -> tuple[str, dict]:
    return "Bash", {"command": command, "description": "run"}


async def chat(url: str, model: str, assistant_turns: int) -> dict:
    messages = [{"role": "user", "content": "hi"}]
    messages += [{"role": "assistant", "content": "…"}] * assistant_turns
    async with httpx.AsyncClient() as client:
        r = await client.post(f"{url}/v1/chat/completions",
                              json={"model": model, "messages": messages}, timeout=10)
    return r.json()


async def test_run_turns_use_the_agents_shell_tool():
    async with MockServer(SCRIPT, run_as=bash, main_model="mock") as server:
        first = (await chat(server.url, "mock", 0))["choices"][0]["message"]
        [call] = first["tool_calls"]
        assert call["function"]["name"] == "Bash"
        assert json.loads(call["function"]["arguments"]) == {"command": "ls -l",
                                                             "description": "run"}
        assert (await chat(server.url, "mock", 1))["choices"][0]["message"]["content"] == "all done"
        # Another model (Claude Code's titles): a plain short answer, the script untouched.
        side = (await chat(server.url, "claude-haiku", 0))["choices"][0]["message"]
        assert side["content"] == SIDE_ANSWER and "tool_calls" not in side


async def test_a_final_answer_becomes_the_finishing_command():
    async with MockServer(SCRIPT, run_as=bash, finish="echo SUBMIT") as server:
        end = (await chat(server.url, "mock", 1))["choices"][0]["message"]
        assert end["content"] == "all done"
        assert json.loads(end["tool_calls"][0]["function"]["arguments"])["command"] == "echo SUBMIT"
