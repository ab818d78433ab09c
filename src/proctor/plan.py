"""Specs → trials: task × agent × model × help mode × matrix params × replica.

A trial's id is a pure function of those coordinates, so `--resume` can tell which trials of a
run are already done.
"""

from __future__ import annotations

import hashlib
import itertools
import re
from typing import Any

from proctor.model import EXTERNAL_AGENTS, PROMPTED_AGENTS, RunOptions, TaskDef, Trial

_UNSAFE = re.compile(r"[^A-Za-z0-9._=,-]+")


def trial_id(task_id: str, model: str | None, help_mode: str | None,
             params: dict[str, Any], replica: int, width: int = 1,
             agent: str | None = None) -> str:
    """`TASK[.AGENT][.MODEL][.HELP_MODE][.PARAMS].rNN`: the replica zero-padded to `width`
    digits, so ids sort in replica order (r00 … r10, not r0, r1, r10, r2). `agent` is named
    only in a run of several agents (a run of one keeps the ids it always had)."""
    parts = [task_id]
    if agent:
        parts.append(agent)
    if model:
        parts.append(model.replace("/", "-"))
    if help_mode:
        parts.append(help_mode)
    if params:
        parts.append(",".join(f"{k}={v}" for k, v in sorted(params.items())))
    parts.append(f"r{replica:0{width}d}")
    raw = ".".join(parts)
    safe = _UNSAFE.sub("-", raw)
    if safe == raw and len(safe) <= 200:
        return safe
    # Made safe, two ids could meet (`build app` and `build/app`): a digest of the real
    # coordinates keeps them apart (and one sandbox per trial).
    coords: tuple[Any, ...] = (task_id, model, help_mode, sorted(params.items()), replica)
    digest = hashlib.blake2b(repr((*coords, agent) if agent else coords).encode(),
                             digest_size=4).hexdigest()
    return f"{safe[:190]}.{digest}"


def select(tasks: list[TaskDef], options: RunOptions) -> list[TaskDef]:
    """--task and --category filters (each repeatable; a task passes if it matches any)."""
    out = tasks
    if options.tasks:
        wanted = set(options.tasks)
        out = [t for t in out if t.id in wanted]
    if options.categories:
        cats = set(options.categories)
        out = [t for t in out if t.category in cats]
    return out


def run_agents(options: RunOptions) -> list[str]:
    """The agents the run was asked for: every --agent (repeatable; the CLI puts
    proctor.toml's `agents` here when none is given); empty: each task's own."""
    return list(dict.fromkeys(options.agents or ([options.agent] if options.agent else [])))


def agents_for(task: TaskDef, options: RunOptions) -> list[str]:
    return run_agents(options) or [task.agent.type]


def agent_for(task: TaskDef, options: RunOptions) -> str:
    """The first agent of a task (the one a run of one agent runs)."""
    return agents_for(task, options)[0]


def models_for(task: TaskDef, options: RunOptions, agent: str | None = None
               ) -> list[str | None]:
    """The models a task runs with (llm and the external agent types): --model, else the
    spec's, else the configured default (None here; the model layer resolves it)."""
    if (agent or agent_for(task, options)) not in ("llm", *EXTERNAL_AGENTS):
        return [None]
    return list(options.models or task.models) or [None]


def modes_for(task: TaskDef, agent: str) -> list[str | None]:
    """A suite's help modes, for every agent that takes a prompt (SPEC §4); `oracle` and
    `nop` run one trial per task (help_mode None; `unprompted_notes` says so)."""
    if task.dialect == "suite" and agent in PROMPTED_AGENTS and task.help_modes:
        return list(task.help_modes)
    return [None]


def unprompted_notes(tasks: list[TaskDef], options: RunOptions) -> list[str]:
    """One line per agent that takes no prompt but was given tasks with several help modes:
    why it ran one trial per task instead of one per mode."""
    named: dict[tuple[str, tuple[str, ...]], int] = {}
    for task in tasks:
        for agent in agents_for(task, options):
            if (task.dialect == "suite" and agent not in PROMPTED_AGENTS
                    and len(task.help_modes) > 1):
                key = (agent, tuple(task.help_modes))
                named[key] = named.get(key, 0) + 1
    return [f"{agent} takes no prompt, so help_modes [{', '.join(modes)}] do not apply to it: "
            f"one trial per task ({n} task{'s' if n != 1 else ''})"
            for (agent, modes), n in named.items()]


def plan(tasks: list[TaskDef], options: RunOptions, *, pad: bool = True) -> list[Trial]:
    """Every trial of a run. `pad=False` plans replica ids as runs before zero-padding
    named them (r0 … r10), so such a run can still be resumed."""
    trials: list[Trial] = []
    runs = run_agents(options)  # (agents_for's, worked out once)
    several = len(runs) > 1  # then each trial id names its agent
    for task in tasks:
        if task.matrix:
            keys = sorted(task.matrix)
            combos = [dict(zip(keys, values, strict=True))
                      for values in itertools.product(*(task.matrix[k] for k in keys))]
        else:  # most tasks: one combination, of no params
            combos = [{}]
        repeat = options.repeat or task.repeat
        width = len(str(repeat - 1)) if pad else 1  # repeat <= 10: r0 … r9 as before
        for agent in runs or [task.agent.type]:
            for model in models_for(task, options, agent):
                for mode in modes_for(task, agent):
                    for params in combos:
                        for replica in range(repeat):
                            trials.append(Trial(
                                id=trial_id(task.id, model, mode, params, replica, width,
                                            agent if several else None),
                                task_id=task.id, agent=agent, model=model, help_mode=mode,
                                replica=replica, params=params))
    return trials
