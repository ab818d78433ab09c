"""The LLM agent through the real `openai` and `anthropic` SDK clients, against the real
`proctor mock-llm` subprocess over loopback, with commands in a real LocalSandbox."""

from __future__ import annotations

import pytest

from tests.helpers.llm import make_task, wire_config

TRANSPORTS = ["openai", "anthropic"]


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_multi_turn_task_solved_through_tool_calls(wire_server, run_agent, tmp_path,
                                                         transport):
    task = make_task(tmp_path, prompt=f"WIRE-SOLVE via {transport}: write out/a.txt")
    prices = {"prices": {f"{transport}/wire-model": {"input": 2.0, "output": 10.0}}}
    run = await run_agent(task, f"{transport}/wire-model",
                          wire_config(wire_server.url, transport, **prices))

    assert run.result.error is None
    assert (run.workdir / "out" / "a.txt").read_text() == "hello\nworld\n"
    assert [c.command for c in run.env.commands] == [
        "mkdir -p out && echo hello > out/a.txt", "echo world >> out/a.txt", "cat out/a.txt"]
    assert run.result.output == "done: out/a.txt holds hello and world"
    # Token and cost accounting: three responses of 100 in / 10 out each.
    assert run.result.turns == 3
    assert (run.result.tokens_in, run.result.tokens_out) == (300, 30)
    assert run.result.cost_usd == pytest.approx((300 * 2.0 + 30 * 10.0) / 1e6)
    calls = run.events("model_call")
    assert [c["usage"] for c in calls] == [{"input": 100, "output": 10}] * 3
    assert sum(c["usage"]["input"] for c in calls) == run.result.tokens_in
    # What the model saw of the last command: exit code and stdout, over the real wire.
    last = wire_server.received(f"WIRE-SOLVE via {transport}")[-1]["body"]
    assert "exit code: 0" in str(last["messages"]) and "hello\\nworld" in str(last["messages"])


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_max_turns_cuts_the_loop(wire_server, run_agent, tmp_path, transport):
    task = make_task(tmp_path, prompt=f"WIRE-LOOP via {transport}", max_turns=3)
    run = await run_agent(task, f"{transport}/m", wire_config(wire_server.url, transport))
    assert run.result.error is None
    assert run.result.turns == 3
    assert (run.workdir / "n.txt").read_text() == "1\n2\n3\n"
    assert len(wire_server.received(f"WIRE-LOOP via {transport}")) == 3
    assert run.events("agent_stop")[-1]["reason"] == "max_turns"


@pytest.mark.parametrize(("mode", "present", "absent"), [
    ("injected", ["`mytool`", "MYTOOL-HELP-MARKER"], ["Run `mytool --help`"]),
    ("discoverable", ["`mytool`", "Run `mytool --help`"], ["MYTOOL-HELP-MARKER"]),
    ("none", ["`mytool`"], ["MYTOOL-HELP-MARKER", "--help"]),
])
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_help_modes_shape_the_system_prompt(wire_server, run_agent, tmp_path, fake_cli,
                                                  transport, mode, present, absent):
    prompt = f"WIRE-HELP {mode} via {transport}"
    task = make_task(tmp_path, prompt=prompt, cli="mytool", help_modes=[mode],
                     system_prompt="EXTRA-SYSTEM-PROMPT")
    run = await run_agent(task, f"{transport}/m", wire_config(wire_server.url, transport),
                          help_mode=mode, path=str(fake_cli))
    assert run.result.error is None and run.result.output == "ok"
    body = wire_server.received(prompt)[0]["body"]
    system = body["system"] if transport == "anthropic" else body["messages"][0]["content"]
    for text in [*present, "EXTRA-SYSTEM-PROMPT"]:
        assert text in system
    for text in absent:
        assert text not in system
    # The help command is harness bookkeeping, never an agent command.
    assert run.env.commands == []


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_rate_limit_then_success_honours_retry_after(wire_server, run_agent, tmp_path,
                                                           transport):
    prompt = f"WIRE-429 via {transport}"
    run = await run_agent(make_task(tmp_path, prompt=prompt), f"{transport}/m",
                          wire_config(wire_server.url, transport))
    assert run.result.error is None
    assert (run.workdir / "r.txt").exists()
    first, second = wire_server.received(prompt)[:2]
    assert second["time"] - first["time"] >= 0.3  # Retry-After: 0.3, base delay only 0.01
    call = run.events("model_call")[0]
    assert call["attempt"] == 2 and "429" in call["retries"][0]


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("fault", ["500", "MALFORMED"])
async def test_server_error_then_success_is_retried(wire_server, run_agent, tmp_path, transport,
                                                    fault):
    prompt = f"WIRE-{fault} via {transport}"
    run = await run_agent(make_task(tmp_path, prompt=prompt), f"{transport}/m",
                          wire_config(wire_server.url, transport))
    assert run.result.error is None
    assert run.events("model_call")[0]["attempt"] == 2
    if fault == "500":
        assert (run.workdir / "s.txt").exists()


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_persistent_server_error_is_an_agent_error(wire_server, run_agent, tmp_path,
                                                         transport):
    prompt = f"WIRE-DOWN via {transport}"
    run = await run_agent(make_task(tmp_path, prompt=prompt), f"{transport}/m",
                          wire_config(wire_server.url, transport))
    assert run.result.error is not None
    assert "HTTP 500" in run.result.error and "gave up after 3 attempts" in run.result.error
    assert len(wire_server.received(prompt)) == 3  # [retry] max_attempts, and no SDK retries
    failed = run.events("model_call")[-1]
    assert "error" in failed and len(failed["retries"]) == 2


async def test_custom_openai_compatible_provider_needs_no_key(wire_server, run_agent, tmp_path):
    config = {"providers": {"local": {"kind": "openai-compatible",
                                      "base_url": wire_server.url + "/v1"}}}
    run = await run_agent(make_task(tmp_path, prompt="WIRE-HELP via local"), "local/llama3",
                          config)
    assert run.result.error is None and run.result.output == "ok"
    assert run.result.cost_usd is None  # unknown price: unknown cost, not free
    assert wire_server.received("WIRE-HELP via local")[0]["body"]["model"] == "llama3"


async def test_secrets_are_redacted_from_model_calls_in_the_trace(wire_server, run_agent,
                                                                  tmp_path):
    task = make_task(tmp_path, prompt="WIRE-HELP via openai, token s3cr3t-value-123")
    run = await run_agent(task, "openai/m", wire_config(wire_server.url, "openai"),
                          secrets={"TOKEN": "s3cr3t-value-123"})
    text = (tmp_path / "trial0" / "trace.jsonl").read_text()
    assert "s3cr3t-value-123" not in text and "[REDACTED:TOKEN]" in text
    assert run.events("model_call")[0]["request"]["system"]


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_timeouts_are_retried_then_an_error(wire_server, run_agent, tmp_path, transport):
    prompt = f"WIRE-SLOW via {transport}"
    config = wire_config(wire_server.url, transport)
    config["providers"][transport]["timeout"] = 0.2
    config["retry"]["max_attempts"] = 2
    run = await run_agent(make_task(tmp_path, prompt=prompt), f"{transport}/m", config)
    assert run.result.error is not None and "timed out after 0.2s" in run.result.error
    assert len(wire_server.received(prompt)) == 2


async def test_connection_refused_is_retried_then_an_error(run_agent, tmp_path):
    import socket

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    config = wire_config(f"http://127.0.0.1:{port}", "openai")
    run = await run_agent(make_task(tmp_path), "openai/m", config)
    assert run.result.error is not None and "connection error" in run.result.error
    assert "gave up after 3 attempts" in run.result.error
