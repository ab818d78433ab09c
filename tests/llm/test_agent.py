"""The LLM agent loop with in-process mock models (mock/solver, mock/PATH) in a real sandbox."""

from __future__ import annotations

import asyncio

from proctor.agents.llm import BASE_PROMPT, system_prompt
from proctor.text import cut
from tests.helpers.llm import make_task


async def test_solver_replays_the_solution_then_answers_done(run_agent, tmp_path):
    task = make_task(tmp_path, solution=["echo one > a.txt", "cat a.txt"], max_turns=5)
    run = await run_agent(task, "mock/solver", {})
    assert run.result.error is None
    assert [c.command for c in run.env.commands] == ["echo one > a.txt", "cat a.txt"]
    assert (run.workdir / "a.txt").read_text() == "one\n"
    assert run.result.output == "done" and run.result.turns == 3
    assert run.result.tokens_in > 0 and run.result.tokens_out > 0
    assert run.result.cost_usd == 0.0  # mock models are free, and known to be
    first = run.events("model_call")[0]
    assert first["request"]["system"].startswith(BASE_PROMPT)
    assert first["request"]["tools"][0]["name"] == "run_command"
    # Later calls carry only the messages that are new since the previous one.
    second = run.events("model_call")[1]["request"]
    assert second["history"] == 1 and [m["role"] for m in second["messages"]] == ["assistant", "tool"]
    assert "exit code: 0" in second["messages"][1]["content"]


async def test_model_from_task_agent_or_default(run_agent, tmp_path, monkeypatch):
    task = make_task(tmp_path, model="mock/done")
    assert (await run_agent(task, None, {})).result.output == "done"
    run = await run_agent(make_task(tmp_path), None, {})
    assert run.result.error is not None and "no model" in run.result.error
    monkeypatch.setenv("PROCTOR_MODEL", "mock/done")
    assert (await run_agent(make_task(tmp_path), None, {})).result.error is None
    assert (await run_agent(make_task(tmp_path), None, {"model": "mock/done"})).result.error is None


async def test_long_output_is_cut_with_a_note(run_agent, tmp_path):
    task = make_task(tmp_path, solution=["seq 1 100000; echo oops >&2"])
    run = await run_agent(task, "mock/solver", {"llm": {"output_limit": 1000}})
    tool_msg = run.events("model_call")[1]["request"]["messages"][1]["content"]
    assert "characters of stdout cut" in tool_msg
    assert tool_msg.startswith("exit code: 0\nstdout:\n1\n2\n") and "100000\n" in tool_msg
    assert "stderr:\noops" in tool_msg
    # The full output is still what the checks see.
    assert run.env.commands[0].stdout.endswith("100000\n")
    assert len(tool_msg) < 1300


async def test_bad_tool_calls_are_told_to_the_model(run_agent, tmp_path):
    (tmp_path / "bad.yaml").write_text(
        "- tool: {name: browse, arguments: {url: x}}\n"
        "- tool: {name: run_command, arguments: {cmd: ls}}\n"
        "- say: gave up\n")
    run = await run_agent(make_task(tmp_path), "mock/bad.yaml", {})
    assert run.env.commands == [] and run.result.output == "gave up"
    msgs = [c["request"]["messages"] for c in run.events("model_call")[1:]]
    assert "unknown tool 'browse'" in msgs[0][1]["content"]
    assert "needs a non-empty string argument `command`" in msgs[1][1]["content"]


async def test_injected_help_runs_once_per_run(run_agent, tmp_path, fake_cli):
    shared: dict = {}
    task = make_task(tmp_path, cli="mytool", help_modes=["injected"], model="mock/done")
    runs = await asyncio.gather(*(run_agent(task, None, {}, help_mode="injected", shared=shared,
                                            path=str(fake_cli)) for _ in range(4)))
    assert (tmp_path / "help-calls").read_text().count("x") == 1
    for run in runs:
        assert "MYTOOL-HELP-MARKER" in run.events("model_call")[0]["request"]["system"]


async def test_scenario_without_cli_gets_a_generic_prompt():
    assert system_prompt(None, None, None, None) == BASE_PROMPT
    assert system_prompt(None, None, None, "Be brief.") == BASE_PROMPT + "\n\nBe brief."
    assert "`git`" in system_prompt("git", "none", None, None)


async def test_unknown_provider_is_an_agent_error(run_agent, tmp_path):
    run = await run_agent(make_task(tmp_path), "nosuch/model", {})
    assert run.result.error is not None and "unknown provider 'nosuch'" in run.result.error


def test_cut_keeps_head_and_tail():
    text = "a" * 50 + "b" * 50
    out = cut(text, 20, keep="both", what="stdout")
    assert out.startswith("a" * 10) and out.endswith("b" * 10)
    assert "80 of 100 characters of stdout cut" in out
    assert cut("short", 20, keep="both", what="stdout") == "short"
    assert cut(text, 20) == "a" * 20 + "... [80 more characters]"
    assert cut(text, 20, keep="tail") == "[80 earlier characters] ..." + "b" * 20


