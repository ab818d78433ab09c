"""What an agent is told besides its task: the CLI under test, its `--help` as the trial's help
mode says (SPEC §2 `help_modes`), and the suite's `system_prompt`.

Every agent that takes a prompt gets the same text; each puts it where it reads such things
(docs/agents.md "Help modes"): `llm` in its system prompt, Claude Code in its appended system
prompt, Codex in its global AGENTS.md, mini-swe-agent and `command` ahead of the task text.
`oracle` and `nop` take no prompt: they run one trial per task (plan.py).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from proctor.text import cut

if TYPE_CHECKING:
    from proctor.agents.base import AgentEnv

def help_mode(env: AgentEnv) -> str | None:
    """The trial's help mode; a trial planned without one (a suite's llm agent in older
    code paths, a test) gets the suite's first."""
    task = env.task
    return env.trial.help_mode or (task.help_modes[0] if task.cli and task.help_modes else None)


def compose(cli: str | None, mode: str | None, help_text: str | None,
            extra: str | None) -> str:
    """The text itself ("" when there is nothing to say): the CLI, and per help mode its
    `--help` output (`injected`), how to get it (`discoverable`) or nothing more (`none`)."""
    parts = []
    if cli:
        about = f"The task is about the command-line tool `{cli}`."
        if mode == "injected":
            about += f" This is the output of `{cli} --help`:\n\n<help>\n{help_text or ''}\n</help>"
        elif mode == "discoverable":
            about += f" Run `{cli} --help` to learn how to use it."
        parts.append(about)
    if extra and extra.strip():
        parts.append(extra.strip())
    return "\n\n".join(parts)


async def help_text(env: AgentEnv, cli: str, limit: int, timeout: float) -> str:
    """`<cli> --help`, run in the sandbox once per run and cached in `env.shared`."""
    key = f"llm.help:{cli}"
    if key in env.shared:
        known: str = env.shared[key]
        return known
    lock = env.shared.setdefault(f"llm.help-lock:{cli}", asyncio.Lock())
    async with lock:  # concurrent trials wait for the first one instead of all running it
        if key in env.shared:
            found: str = env.shared[key]
            return found
        res = await env.sandbox.exec(f"{cli} --help", timeout=timeout)
        text = (res.stdout.strip() or res.stderr.strip())
        if not text:
            text = f"(`{cli} --help` printed nothing; exit code {res.exit_code})"
        env.shared[key] = text = cut(text, limit, keep="both", what="help text")
        return text


async def for_trial(env: AgentEnv) -> str:
    """What this trial's agent is told besides the task ("" for nothing). The `--help` run
    is bounded by proctor.toml `[llm] help_limit` and `help_timeout`, for every agent."""
    task, mode = env.task, help_mode(env)
    helped = None
    if task.cli and mode == "injected":
        settings = env.options.config.llm
        helped = await help_text(env, task.cli, settings.help_limit, settings.help_timeout)
    return compose(task.cli, mode, helped, task.system_prompt)


def ahead_of(prompt: str, instructions: str) -> str:
    """For an agent whose only channel is its task text: the instructions, then the task."""
    return f"{instructions}\n\n{prompt}" if instructions else prompt
