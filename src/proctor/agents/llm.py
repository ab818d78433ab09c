"""`llm`: the built-in tool-calling agent (SPEC §4).

The model gets a system prompt (what it is, the CLI and its help per help mode, the spec's
`system_prompt`), the task prompt, and one tool, `run_command`. Each tool call runs through
`env.run_command` (recorded, so the checks see it) and the model sees the exit code, stdout
and stderr, each cut to `[llm] output_limit` characters. The loop ends when the model
answers without a tool call, or after `max_turns` rounds of tool calls. A model call that
still fails after the retries ends the trial as `error`, never `fail`.

`turns` counts model responses, so it never exceeds `max_turns`. The task's timeout holds
for the whole loop: a model call or a command gets only the time left, and when it is up
the loop ends with everything so far (turns, tokens, the command cut short). The task's
`limits` (turns, tokens, cost) are charged after each response: the one that reaches a limit
is the last, its tool calls are not run (providers/budget.py).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Coroutine, Generator
from types import CoroutineType
from typing import TYPE_CHECKING, Any, Generic, TypeVar, cast

from proctor.agents.base import Agent, AgentEnv, AgentResult
from proctor.agents.instructions import compose, for_trial
from proctor.errors import UsageError
from proctor.model import CommandRecord
from proctor.providers import (
    ProviderError,
    cost_usd,
    get_provider,
    model_for,
    price_of,
    resolve_model,
)
from proctor.text import cut

if TYPE_CHECKING:
    from proctor.config import LlmConfig
    from proctor.providers.base import ModelResponse, ToolCall

T = TypeVar("T")

RUN_COMMAND: dict[str, Any] = {
    "name": "run_command",
    "description": "Run a shell command with `sh -c` in the working directory. Returns its "
                   "exit code, stdout and stderr.",
    "parameters": {
        "type": "object",
        "properties": {"command": {"type": "string", "description": "The shell command."}},
        "required": ["command"],
    },
}
TOOLS = [RUN_COMMAND]

BASE_PROMPT = (
    "You are an agent that completes tasks by running shell commands. Use the run_command "
    "tool to run a command with `sh -c` in the working directory; you will see its exit code, "
    "stdout and stderr. Work step by step and check the results. When the task is complete, "
    "reply with a short summary and no tool call."
)


def system_prompt(cli: str | None, help_mode: str | None, help_text: str | None,
                  extra: str | None) -> str:
    """What the tool loop tells the model: how it works, then what every agent is told."""
    return "\n\n".join(p for p in (BASE_PROMPT, compose(cli, help_mode, help_text, extra)) if p)


def _both(text: str, limit: int, what: str) -> str:
    return cut(text, limit, keep="both", what=what)


def tool_result(rec: CommandRecord, limit: int) -> str:
    if rec.timed_out:
        head = "exit code: none (the command timed out and was killed)"
    else:
        head = f"exit code: {rec.exit_code}"
    out = _both(rec.stdout, limit, "stdout") if rec.stdout else "(empty)"
    err = _both(rec.stderr, limit, "stderr") if rec.stderr else "(empty)"
    text = f"{head}\nstdout:\n{out}\nstderr:\n{err}"
    if rec.truncated:
        text += "\n(output beyond the sandbox's capture limit was dropped)"
    return text


class LLMAgent(Agent):
    async def run(self, env: AgentEnv) -> AgentResult:
        config = env.options.config
        try:
            settings = config.llm
            model = resolve_model(model_for(env.trial.model, env.task, config), config)
            provider = get_provider(model, config, base_dir=env.task.base_dir,
                                    solution=env.solution or env.task.solution)
        except UsageError as e:
            return AgentResult(error=str(e), error_kind="infra")
        price = price_of(model, config)
        try:
            system = await self._system_prompt(env, settings)
            result = await self._loop(env, provider, model, system, settings, ProviderError,
                                      price)
        finally:
            await provider.aclose()
        result.cost_usd = cost_usd(price, result.tokens_in or 0, result.tokens_out or 0)
        return result

    async def _system_prompt(self, env: AgentEnv, settings: LlmConfig) -> str:
        told = await for_trial(env)
        return "\n\n".join(p for p in (BASE_PROMPT, told) if p)

    async def _loop(self, env: AgentEnv, provider: Any, model: str, system: str,
                    settings: LlmConfig, provider_error: type[Exception],
                    price: tuple[float, float] | None = None) -> AgentResult:
        res = AgentResult()
        env.on_timeout = lambda: res  # stopped from outside: what it has so far
        messages: list[dict[str, Any]] = [{"role": "user", "content": env.prompt}]
        max_turns = env.task.agent.max_turns
        traced = 0  # messages already in the trace: each model_call carries only the new ones
        reason = "answer"
        complete, budget, recorder = provider.complete, env.budget, env.recorder  # once
        temperature, max_tokens = settings.temperature, settings.max_tokens
        while True:
            if env.out_of_time():
                reason = "timeout"
                break
            try:
                resp = await bounded(complete(system, messages, TOOLS, temperature, max_tokens),
                                     env.time_left())
            except (provider_error, TimeoutError) as e:
                cut = isinstance(e, TimeoutError) and env.out_of_time()
                recorder.trace({"type": "model_call", "model": model, "turn": res.turns + 1,
                                "request": {"history": traced, "messages": messages[traced:]},
                                "error": "cut at the task's timeout" if cut else str(e),
                                "retries": getattr(e, "retries", [])})
                if cut:
                    reason = "timeout"
                else:
                    res.error, reason = str(e) or type(e).__name__, "error"
                    res.error_kind = "provider"
                break
            res.turns += 1
            tool_calls, usage = resp.tool_calls, resp.usage
            env.tool_calls += tool_calls  # what the model asked for (tool_used)
            res.tokens_in += usage.input
            res.tokens_out += usage.output
            calls = [c.to_dict() for c in tool_calls]
            _trace_answer(env, model, res.turns, system, messages, traced, resp, calls)
            traced = len(messages)
            res.output = resp.text
            # The response that reaches a limit is the last: its tool calls are not run.
            if hit := budget.charge(usage.input, usage.output,
                                    cost_usd(price, usage.input, usage.output)):
                res.limit_hit = reason = hit
                recorder.trace({"type": "limit", "limit": hit, "message": budget.describe(),
                                "tool_calls_not_run": len(calls)})
                break
            if not calls:
                break
            messages.append({"role": "assistant", "content": resp.text, "tool_calls": calls})
            await _run_tools(env, tool_calls, messages, settings.output_limit)
            if env.out_of_time():
                reason = "timeout"
                break
            if res.turns >= max_turns:
                reason = "max_turns"
                break
        res.timed_out = env.timed_out
        recorder.trace({"type": "agent_stop", "reason": reason, "turns": res.turns,
                        "tokens": {"input": res.tokens_in, "output": res.tokens_out}})
        return res


async def _run_tools(env: AgentEnv, calls: list[ToolCall], messages: list[dict[str, Any]],
                     limit: int) -> None:
    """The answer's tool calls in order, each result a `tool` message; none once the task's
    time is up. Mistakes are told to the model (it can correct itself), never raised."""
    for call in calls:
        if env.out_of_time():
            break
        command = _command_of(call)
        if command is None:
            content = _refusal(call)
        else:
            rec = await env.run_command(command, tool_call_id=call.id)
            content = tool_result(rec, limit)
        messages.append({"role": "tool", "tool_call_id": call.id, "name": call.name,
                         "content": content})


def _command_of(call: ToolCall) -> str | None:
    """The command a `run_command` call asks for; None: a call it cannot run (`_refusal`)."""
    if call.name != "run_command":
        return None
    command = call.arguments.get("command")
    return command if isinstance(command, str) and command.strip() else None


def _refusal(call: ToolCall) -> str:
    if call.name != "run_command":
        return f"error: unknown tool {call.name!r}; the only tool is run_command"
    return "error: run_command needs a non-empty string argument `command`"


async def bounded(call: Awaitable[T], seconds: float) -> T:
    """`await call`, cut short after `seconds` (TimeoutError). A coroutine that answers
    without waiting (an in-process model: every turn of a mock run) returns from its first
    step with no timer made; one that waits is awaited from there in a timeout scope (not
    wait_for: no task per call), as is any other awaitable."""
    if type(call) is not CoroutineType:
        async with asyncio.timeout(seconds):
            return await call
    try:
        waiting = call.send(None)
    except StopIteration as done:
        return cast(T, done.value)
    async with asyncio.timeout(seconds):
        return await _Resumed(call, waiting)


class _Resumed(Generic[T]):
    """A coroutine already run to its first wait, awaited from there as `await` would:
    what it waits on goes to the task, what the task sends or throws (a cancellation,
    the timeout's) goes to it."""

    __slots__ = ("_call", "_waiting")

    def __init__(self, call: Coroutine[Any, Any, T], waiting: Any):
        self._call, self._waiting = call, waiting

    def __await__(self) -> Generator[Any, Any, T]:
        call, waiting = self._call, self._waiting
        while True:
            try:
                sent = yield waiting
            except GeneratorExit:
                call.close()
                raise
            except BaseException as e:  # handed to the call, as await does
                try:
                    waiting = call.throw(e)
                except StopIteration as done:
                    return cast(T, done.value)
            else:
                try:
                    waiting = call.send(sent)
                except StopIteration as done:
                    return cast(T, done.value)


def _trace_answer(env: AgentEnv, model: str, turn: int, system: str,
                  messages: list[dict[str, Any]], traced: int, resp: ModelResponse,
                  calls: list[dict[str, Any]]) -> None:
    """A `model_call` line: the messages new since the last one (the first also carries the
    system prompt and the tools), the answer, its usage."""
    request: dict[str, Any] = {"history": traced, "messages": messages[traced:]}
    if turn == 1:
        request.update(system=system, tools=TOOLS)
    env.recorder.trace({
        "type": "model_call", "model": model, "turn": turn, "request": request,
        "response": {"text": resp.text, "tool_calls": calls},
        "usage": {"input": resp.usage.input, "output": resp.usage.output},
        "latency_s": round(resp.latency_s, 6), "attempt": resp.attempt,
        "retries": resp.retries})
