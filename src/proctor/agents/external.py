"""External agent programs proctor knows how to run: Claude Code, Codex CLI, mini-swe-agent.

Each agent type is a small recipe (package, pinned version, command line, environment,
config files, shell tool, housekeeping) on a subclass of `ExternalAgent`, which does the
rest the same way for all of them:

* the pinned version is installed once into proctor's agent cache (`install`, called by the
  runner before any trial) and shown read-only inside the sandbox;
* a recording model proxy runs in proctor's process (the real key stays there), reachable
  from inside the sandbox; for `mock/…` models an in-process mock-llm sits behind it, whose
  `run:` turns become the agent's own shell tool calls;
* the agent runs inside the sandbox, traced with its output: each call of its shell tool
  is an agent command (record/commands.py: the command, its processes, its exit status,
  its stdout and stderr, all from proctor's trace); its own program (`source: "launcher"`)
  and its housekeeping (and the spec's `ignore_commands`) go to the trace only;
* the task's deadline holds for everything: the agent gets the time left, and so does each
  model call through the proxy;
* turns, tokens and cost come from the proxy; a model endpoint that failed makes the trial
  `error`, never `fail`.
"""

from __future__ import annotations

import asyncio
import os
import re
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from proctor.agents.base import Agent, AgentEnv, AgentResult
from proctor.agents.install import (
    install_npm,
    install_pip,
    installed,
    pinned_dir,
    progress_shown,
)
from proctor.agents.instructions import for_trial
from proctor.errors import UsageError
from proctor.model import EXTERNAL_AGENTS, CommandRecord, RunOptions, TaskDef, Trial
from proctor.providers import cost_usd, model_for, price_of, resolve_model
from proctor.providers.base import ProviderError, ToolCall
from proctor.providers.settings import provider_settings, split_model
from proctor.record.commands import Reading

if TYPE_CHECKING:
    from proctor.config import ProctorConfig

MOCK_MODEL = "mock"  # the model name an agent is given when proctor's mock answers it
DEFAULT_BASE_URLS = {"anthropic": "https://api.anthropic.com", "openai": "https://api.openai.com"}


@dataclass(frozen=True)
class Wiring:
    """How an agent reaches its model, as it sees things from inside the sandbox."""

    base_url: str  # the proxy, e.g. http://127.0.0.1:41234 (no /v1)
    kind: str  # the API it speaks there: "anthropic" | "openai"
    model: str  # the model name to ask for ("mock" for proctor's mock)
    home: str  # the agent's HOME
    # What the agent is told besides its task (the CLI, its help per help mode, the suite's
    # system_prompt; agents/instructions.py), put where the agent reads it; "" for nothing.
    instructions: str = ""


class ExternalAgent(Agent):
    name: ClassVar[str]  # the agent type, e.g. "claude-code"
    package: ClassVar[str]  # npm or PyPI package
    version: ClassVar[str]  # the pinned default (`agent.version` overrides)
    installer: ClassVar[str]  # "npm" | "pip"
    binary: ClassVar[str]
    extras: ClassVar[tuple[str, ...]] = ()  # more pinned packages to install alongside
    apis: ClassVar[tuple[str, ...]]  # provider kinds the agent can talk to
    # Commands the agent runs for itself, not for the task (regexes, searched).
    housekeeping: ClassVar[tuple[str, ...]] = ()
    # Where the agent's shell tool starts a tool call (a regex on the shell-quoted argv):
    # the call's command is the first program from there that is not a wrapper; what else
    # the agent starts is housekeeping. None: every program it starts is an agent command.
    tool_process: ClassVar[str | None] = None
    # The agent's own machinery between `tool_process` and the command's shell (regexes).
    wrappers: ClassVar[tuple[str, ...]] = ()
    # For an agent that stops only when it runs a given command: proctor's mock answers a
    # script's final answer with it.
    mock_finish: ClassVar[str | None] = None
    # Variables proctor sets unless the spec's `env` does (e.g. how often to retry a failed
    # model call: a dead endpoint should not hold a trial for minutes).
    defaults: ClassVar[dict[str, str]] = {}

    # -- the recipe ------------------------------------------------------------------

    def shell_tool(self, command: str) -> tuple[str, dict[str, Any]]:
        """The agent's own shell tool call for `command` (mock scripts' `run:` turns)."""
        raise NotImplementedError

    def argv(self, exe: str, prompt: str, w: Wiring) -> list[str]:
        raise NotImplementedError

    def environment(self, w: Wiring) -> dict[str, str]:
        """Variables pointing the agent at the proxy."""
        raise NotImplementedError

    def files(self, w: Wiring) -> dict[str, str]:
        """Config files to write, relative to the agent's HOME."""
        return {}

    def unwrap(self, argv: list[str]) -> str | None:
        """The command a process of the agent's shell tool runs, when the agent wraps it
        (None: the process is recorded as it is)."""
        return None

    def answer(self, stdout: str) -> str:
        """The agent's final answer, from what it printed."""
        return stdout

    async def final_answer(self, env: AgentEnv, w: Wiring, stdout: str) -> str:
        """The trial's `output`: `answer(stdout)`, unless the agent leaves its answer
        elsewhere (a file in its HOME)."""
        return self.answer(stdout)

    # -- the same for every agent ----------------------------------------------------

    def pinned_version(self, task: TaskDef) -> str:
        return task.agent.version or self.version

    def install(self, task: TaskDef | None = None) -> Path:
        """The agent's executable, installed into the cache on first use (blocking): the
        task's pinned version, else the default."""
        version = self.pinned_version(task) if task else self.version
        if self.installer == "npm":
            return install_npm(self.name, self.package, version, self.binary)
        return install_pip(self.name, self.package, version, self.binary, self.extras)

    def readonly_paths(self, task: TaskDef, options: RunOptions) -> list[str]:
        paths = [str(pinned_dir(self.name, self.pinned_version(task)))]
        if self.installer == "pip" and not sys.base_prefix.startswith("/usr"):
            paths.append(sys.base_prefix)  # the venv's interpreter lives there (pyenv)
        return paths

    async def run(self, env: AgentEnv) -> AgentResult:
        task, config = env.task, env.options.config
        try:
            model = resolve_model(model_for(env.trial.model, task, config), config)
            provider, name = split_model(model)
            settings = provider_settings(provider, config)
            # Installed by the runner before any trial; a Ray node may install it here.
            exe = str(await asyncio.to_thread(self.install, task))
            return await self._run(env, exe, model, _Upstream(self, settings, name, task,
                                                              env.solution))
        except UsageError as e:  # its configuration or installation: not the model's API
            return AgentResult(error=str(e), error_kind="infra")
        except ProviderError as e:
            return AgentResult(error=str(e), error_kind="provider")

    async def _run(self, env: AgentEnv, exe: str, model: str, upstream: _Upstream) -> AgentResult:
        from proctor.providers.proxy import ModelProxy

        config = env.options.config
        async with upstream:
            proxy = ModelProxy(upstream.url, api_key=upstream.key, main_model=upstream.model,
                               on_call=env.recorder.trace, deadline=env.deadline,
                               budget=env.budget, cost_of=_pricer(model, upstream.model, config),
                               limit=upstream.limit())
            proxy.tool_calls = env.tool_calls  # the model's calls, kept should it be stopped
            stopping: list[asyncio.Task[int]] = []
            # A limit reached: the agent program is stopped as at a timeout (everything it
            # started is killed; its exec returns with what it had done).
            env.budget.on_hit = lambda _: stopping.append(
                asyncio.ensure_future(env.sandbox.kill_processes()))
            async with proxy:
                host, port = await env.sandbox.expose("127.0.0.1", int(proxy.url.rsplit(":", 1)[1]))
                w = Wiring(f"http://{host}:{port}", upstream.kind, upstream.model,
                           env.sandbox.env.get("HOME", ""), await for_trial(env))
                for rel, content in self.files(w).items():
                    await env.sandbox.write_file(f"{w.home}/{rel}", content.encode())
                argv = self.argv(exe, env.prompt, w)

                def result(output: str, exit_code: int | None, timed_out: bool) -> AgentResult:
                    return AgentResult(
                        output=output, turns=proxy.turns,
                        tokens_in=proxy.tokens_in, tokens_out=proxy.tokens_out,
                        cost_usd=_cost(proxy.usage_by_model, model, upstream.model, config),
                        error=_endpoint_failure(proxy, exit_code,
                                                timed_out or env.budget.hit is not None),
                        timed_out=timed_out, limit_hit=env.budget.hit, error_kind="provider")

                env.on_timeout = lambda: result("", None, True)
                variables = {**{k: v for k, v in self.defaults.items()
                                if k not in env.sandbox.env}, **self.environment(w)}
                res = await env.sandbox.exec(shlex.join(argv), timeout=env.time_left(),
                                             capture=env.options.output_limit, env=variables)
                for job in stopping:
                    await job
        if res.timed_out:
            env.out_of_time()
        answer = await self.final_answer(env, w, res.stdout)
        self._record(env, argv, res, answer, proxy.tool_calls)
        return result(answer, res.exit_code, env.timed_out)

    def reading(self, env: AgentEnv) -> Reading:
        """How to read this agent's trace (record/commands.py): its own program is known by
        its path in the install cache; its tool calls by `tool_process` and `wrappers`."""
        roots = (str(pinned_dir(self.name, self.pinned_version(env.task))),)
        return Reading(is_launcher=lambda argv, parent: _is_launcher(argv, roots),
                       tool=re.compile(self.tool_process) if self.tool_process else None,
                       wrappers=tuple(re.compile(w) for w in self.wrappers),
                       set_aside=(*self.housekeeping, *env.task.agent.ignore_commands),
                       unwrap=self.unwrap)

    def _record(self, env: AgentEnv, argv: list[str], res: Any, answer: str,
                calls: list[ToolCall]) -> None:
        """Its tool calls as agent commands (matched to the model's tool calls for their
        ids), then the agent program itself, set aside as the launcher, with its exit code
        and its final answer; all it printed goes to the trace."""
        env.record_program(res, self.reading(env), calls)
        if res.stdout != answer:
            env.recorder.trace({"type": "agent_stdout", "stdout": res.stdout,
                                "truncated": res.truncated})
        env.record(CommandRecord(command=shlex.join(argv), argv=argv,
                                 cwd=str(env.sandbox.workdir), exit_code=res.exit_code,
                                 stdout=answer, stderr=res.stderr,
                                 started_at=res.started_at, duration_s=res.duration_s,
                                 timed_out=res.timed_out, truncated=res.truncated,
                                 source="launcher"), ignored="launcher")


def shell_command(argv: list[str], shells: tuple[str, ...]) -> str | None:
    """CMD of `SHELL -c CMD` (or -lc) when SHELL is one of `shells`, else None."""
    if len(argv) == 3 and argv[0] in shells and argv[1] in ("-c", "-lc"):
        return argv[2]
    return None


def _is_launcher(args: list[str], roots: tuple[str, ...]) -> bool:
    """The agent's own program (or its interpreter running a file of it). Paths are resolved
    first: `ROOT/../../usr/bin/rm` is rm, not the agent."""
    inside = tuple(root.rstrip("/") + "/" for root in roots)
    return any(os.path.realpath(a).startswith(inside) for a in args[:2] if a.startswith("/"))


def _cost(usage: dict[str, list[int]], model: str, asked: str,
          config: ProctorConfig) -> float | None:
    """Every call priced by its own model (Claude Code's side calls go to a smaller one);
    unknown (None) if any model's price is — the trial's own model's included, whether or
    not a call of it succeeded (as for `llm`: an unpriced model never costs 0)."""
    if price_of(model, config) is None:
        return None
    provider = model.split("/", 1)[0]
    total = 0.0
    for name, (tin, tout) in usage.items():
        price = price_of(model if name == asked else f"{provider}/{name}", config)
        cost = cost_usd(price, tin, tout)
        if cost is None:
            return None
        total += cost
    return total


def _pricer(model: str, asked: str, config: ProctorConfig) -> Any:
    """Cost of one call (model name as the agent asked for it, tokens in, out), priced as
    `_cost` prices them: the trial's model for its own calls, the provider's other models
    for side calls."""
    provider = model.split("/", 1)[0]

    def cost(name: str, tin: int, tout: int) -> float | None:
        return cost_usd(price_of(model if name == asked else f"{provider}/{name}", config),
                        tin, tout)
    return cost


def _endpoint_failure(proxy: Any, exit_code: int | None, timed_out: bool) -> str | None:
    """Why the trial is `error` (the model endpoint, not the agent, failed), or None."""
    if not proxy.errors:
        if exit_code not in (0, None) and proxy.turns == 0 and not timed_out:
            return f"the agent exited {exit_code} without a single successful model call"
        return None
    if not proxy.last_failed and (exit_code == 0 or timed_out):
        return None  # a failure the agent retried past (running out of time is its own)
    more = f" (and {len(proxy.errors) - 1} more)" if len(proxy.errors) > 1 else ""
    return f"the model endpoint failed: {proxy.errors[-1]}{more}"


class _Upstream:
    """Where the proxy forwards: an in-process mock-llm for `mock/…`, else the provider."""

    def __init__(self, agent: ExternalAgent, settings: Any, name: str, task: TaskDef,
                 solution: list[str]):
        self.agent, self.settings, self.name = agent, settings, name
        self.task, self.solution = task, solution
        self.mock: Any = None
        self.url = self.key = ""
        self.kind = self.model = ""

    async def __aenter__(self) -> _Upstream:
        s = self.settings
        if s.kind == "mock":
            from proctor.providers.mock import script_for
            from proctor.providers.mock_server import MockServer

            script = script_for(self.name, self.task.base_dir, self.solution)
            self.mock = MockServer(script, run_as=self.agent.shell_tool, main_model=MOCK_MODEL,
                                   finish=self.agent.mock_finish)
            self.url, self.kind, self.model = await self.mock.start(), self.agent.apis[0], MOCK_MODEL
            return self
        if s.kind not in self.agent.apis:
            raise ProviderError(f"{self.agent.name} talks to {' or '.join(self.agent.apis)} "
                                f"models, not {s.provider} ({s.kind})")
        # Agents add /v1 themselves; configured OpenAI-compatible URLs usually end in it.
        self.url = (s.base_url or DEFAULT_BASE_URLS[s.kind]).rstrip("/").removesuffix("/v1")
        self.key, self.kind, self.model = s.key() or "", s.kind, self.name
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self.mock is not None:
            await self.mock.stop()

    def limit(self) -> tuple[str, int, bool] | None:
        """The run's limit of calls in flight this provider's calls take a slot of (none for
        the in-process mock-llm: no rate limit to learn)."""
        from proctor.providers.limiter import endpoint_key

        s = self.settings
        if s.kind == "mock":
            return None
        return endpoint_key(s.provider, s.base_url), s.max_concurrency, s.adaptive_concurrency


def install_agents(trials: list[Trial], tasks: dict[str, TaskDef],
                   options: RunOptions) -> dict[str, str]:
    """Before any trial runs: every external agent a run needs can talk to its models and
    is installed (once, into the cache; exit 2 if that fails). Returns {type: version}."""
    from proctor.agents import make_agent

    versions: dict[str, str] = {}
    checked: set[tuple[str, str]] = set()
    for trial in trials:
        if trial.agent not in EXTERNAL_AGENTS:
            continue
        task = tasks[trial.task_id]
        agent = make_agent(trial.agent)
        assert isinstance(agent, ExternalAgent)
        model = model_for(trial.model, task, options.config)
        if (agent.name, model) not in checked:
            checked.add((agent.name, model))
            check_model(agent.name, model, options.config)
        version = agent.pinned_version(task)
        if versions.get(agent.name) == version:
            continue
        if not installed(pinned_dir(agent.name, version)) and not options.quiet:
            print(f"proctor: installing {agent.name} {version} into {pinned_dir(agent.name, version)} "
                  "(first use; cached after)", file=sys.stderr)
        with progress_shown(not options.quiet):  # each step of a first install, elapsed
            agent.install(task)
        versions[agent.name] = version
    return versions


def check_model(agent_type: str, model: str, config: ProctorConfig) -> None:
    """A UsageError if agent `agent_type` cannot talk to `model` (e.g. codex and an
    anthropic model)."""
    from proctor.agents import make_agent

    agent = make_agent(agent_type)
    assert isinstance(agent, ExternalAgent)
    provider, _ = split_model(resolve_model(model, config))
    kind = provider_settings(provider, config).kind
    if kind != "mock" and kind not in agent.apis:
        raise UsageError(f"{agent.name}: {model} is an {kind} model; {agent.name} talks to "
                         f"{' or '.join(agent.apis)} models (or mock/… for proctor's mock)")
