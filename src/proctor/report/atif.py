"""Export: each trial as an ATIF trajectory (`trajectory.json`), the Agent Trajectory
Interchange Format of Harbor (RFC 0001, `ATIF-v1.8`), which Harbor's viewer, its validator
(`python -m harbor.utils.trajectory_validator`) and other trajectory tools read.

Built from proctor's own record (`trace.jsonl`, through `turns`), the same for every agent,
so an agent whose own logs are empty (Claude Code, Codex, mini-swe-agent) still has one:

* a `system` step with the system prompt, a `user` step with each new user message;
* one `agent` step per model turn: its answer (`message`), its tool calls (`tool_calls`, the
  model's own ids), what each call gave back (`observation`: what the agent saw, else the
  output proctor recorded; proctor's record of the command — exit code, duration,
  processes — in the result's `extra`), tokens and cost (`metrics`: a turn's cost is the
  trial's cost shared by tokens, priced as the trial's model);
* a command no model turn asked for (the `oracle`, `command` agents) is an `agent` step
  without a model call (`llm_call_count: 0`) with one `shell` tool call;
* the verdict (status, score, checks, reason) in the root's `extra.proctor`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from proctor.report import data, turns
from proctor.results import RunResults

SCHEMA_VERSION = "ATIF-v1.8"
FILE = "trajectory.json"


def _iso(ts: float | None) -> str | None:
    if ts is None:
        return None
    return datetime.fromtimestamp(ts, UTC).isoformat().replace("+00:00", "Z")


def _weights(timeline: turns.Timeline, model: str | None) -> list[float]:
    """Each main turn's share of the trial's cost: its tokens, priced as the trial's model
    (input and output equally when that price is unknown)."""
    from proctor.providers.prices import price_of

    price = price_of(model) if model else None
    p_in, p_out = price if price and sum(price) else (1.0, 1.0)
    return [(t.tokens_in or 0) * p_in + (t.tokens_out or 0) * p_out for t in timeline.turns]


def _command_record(c: turns.Command) -> dict[str, Any]:
    rec: dict[str, Any] = {"command": c.text, "exit_code": c.exit_code}
    if c.timed:
        rec["duration_s"] = c.duration_s
    if c.timed_out:
        rec["timed_out"] = True
    if c.processes:
        rec["processes"] = c.processes
    if c.aside is not None:
        rec["set_aside"] = c.aside
    return rec


def _arguments(args: Any) -> dict[str, Any]:
    return args if isinstance(args, dict) else {"input": args}


class _Steps:
    def __init__(self) -> None:
        self.steps: list[dict[str, Any]] = []

    def add(self, source: str, message: str, **fields: Any) -> dict[str, Any]:
        step = {"step_id": len(self.steps) + 1, "source": source, "message": message}
        step.update({k: v for k, v in fields.items() if v is not None})
        self.steps.append(step)
        return step


def _turn(steps: _Steps, turn: turns.Turn, cost: float | None) -> None:
    if turn.system:
        steps.add("system", turn.system, timestamp=_iso(turn.started))
    for m in turn.messages:
        steps.add("system" if m.role in ("system", "developer") else "user", m.text,
                  timestamp=_iso(turn.started))
    calls, results = [], []
    for n, call in enumerate(turn.calls):
        call_id = call.id or f"call_{len(steps.steps) + 1}_{n}"
        calls.append({"tool_call_id": call_id, "function_name": call.name,
                      "arguments": _arguments(call.args)})
        result: dict[str, Any] = {"source_call_id": call_id, "content": call.returned()}
        if call.commands:
            result["extra"] = {"proctor_commands": [_command_record(c) for c in call.commands]}
        results.append(result)
    extra: dict[str, Any] = {}  # of lists, records and texts
    if turn.number is not None:
        extra["turn"] = turn.number
    if turn.latency_s is not None:
        extra["latency_s"] = turn.latency_s
    if turn.side:
        extra["side"] = turn.side
    if turn.attempt and turn.attempt > 1:
        extra["attempt"] = turn.attempt
    if turn.error:
        extra["error"] = turn.error
    if turn.aside:
        extra["set_aside"] = [_command_record(c) for c in turn.aside]
    metrics = {"prompt_tokens": turn.tokens_in, "completion_tokens": turn.tokens_out,
               "cost_usd": cost}
    steps.add("agent", turn.text, timestamp=_iso(turn.time), model_name=turn.model or None,
              tool_calls=calls or None,
              observation={"results": results} if results else None,
              metrics={k: v for k, v in metrics.items() if v is not None} or None,
              extra=extra or None)


def _command(steps: _Steps, c: turns.Command) -> None:
    """A command no model turn asked for: a step that called no model."""
    call_id = f"cmd_{len(steps.steps) + 1}"
    steps.add("agent", "", timestamp=_iso(c.started_at), llm_call_count=0,
              tool_calls=[{"tool_call_id": call_id, "function_name": "shell",
                           "arguments": {"command": c.text}}],
              observation={"results": [{"source_call_id": call_id, "content": c.as_text(),
                                        "extra": {"proctor_commands": [_command_record(c)]}}]})


def trajectory(trial: Mapping[str, Any], trace: list[dict[str, Any]],
               run: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """One trial's ATIF document."""
    run = run or {}
    timeline = turns.build(trace)
    weights = _weights(timeline, trial.get("model"))
    total_cost = trial.get("cost_usd")
    steps = _Steps()
    extra: dict[str, Any] = {}
    n = 0
    for item in timeline.items:
        if isinstance(item, turns.Turn):
            total = sum(weights)
            share = (total_cost * weights[n] / total if total_cost is not None and total
                     else (0.0 if total_cost == 0 else None))
            _turn(steps, item, share)
            n += 1
        elif isinstance(item, turns.Command) and item.source == "launcher":
            extra["agent_program"] = {**_command_record(item), "stderr": item.stderr}
        elif isinstance(item, turns.Command) and item.aside is None:
            _command(steps, item)
        elif isinstance(item, turns.Aside):
            key = "agent_files" if item.lines else "set_aside"
            records: list[Any] = (list(item.lines) if item.lines
                                  else [_command_record(c) for c in item.commands])
            extra.setdefault(key, []).extend(records)
        elif isinstance(item, turns.Output):
            extra["agent_printed" if item.label != "agent output" else "agent_output"] = item.text
        elif isinstance(item, turns.Event):
            extra.setdefault("events", []).append({"type": item.kind, "text": item.text})
    if not steps.steps:  # nothing was recorded: still one step, saying so
        steps.add("system", "proctor recorded no model call and no command for this trial")
    agent_name = trial.get("agent") or "llm"
    versions = v if isinstance(v := run.get("versions"), dict) else {}
    tokens = trial.get("tokens") or {}
    extra["proctor"] = _verdict(trial, run)
    doc: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "session_id": str(trial.get("id")),
        "agent": {"name": "proctor-llm" if agent_name == "llm" else str(agent_name),
                  "version": str(versions.get(agent_name) or versions.get("proctor") or
                                 "unknown"),
                  "model_name": trial.get("model")},
        "steps": steps.steps,
        "notes": "Exported by proctor from its own record of the trial (trace.jsonl).",
        "final_metrics": {k: v for k, v in {
            "total_prompt_tokens": tokens.get("input"),
            "total_completion_tokens": tokens.get("output"),
            "total_cost_usd": total_cost, "total_steps": len(steps.steps)}.items()
            if v is not None},
        "extra": extra,
    }
    tools = _tools(trace)
    if tools:
        doc["agent"]["tool_definitions"] = tools
    if doc["agent"]["model_name"] is None:
        del doc["agent"]["model_name"]
    return doc


def _verdict(trial: Mapping[str, Any], run: Mapping[str, Any]) -> dict[str, Any]:
    """What proctor made of the trial (`extra.proctor`): where it belongs, and its verdict."""
    return {
        "run_id": run.get("run_id"), "trial_id": trial.get("id"),
        "task_id": trial.get("task_id"), "help_mode": trial.get("help_mode"),
        "params": trial.get("params") or {}, "replica": trial.get("replica"),
        "status": trial.get("status"), "composite_score": trial.get("composite_score"),
        "reason": data.reason(trial) or None, "checks": trial.get("checks") or [],
        "forbidden": trial.get("forbidden") or [], "duration_s": trial.get("duration_s")}


def _tools(trace: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The tools the first model call offered, as recorded."""
    for ev in trace:
        if ev.get("type") == "model_call" and not ev.get("side"):
            request = ev.get("request")
            tools = request.get("tools") if isinstance(request, dict) else None
            return [t for t in tools if isinstance(t, dict)] if isinstance(tools, list) else []
    return []


def write_atif(run_dir: Path, results: RunResults, run: Mapping[str, Any] | None = None,
               out: Path | None = None, progress: Any = None) -> list[Path]:
    """Every trial's trajectory.json: in its trial directory, or under `out/TRIAL_ID/`; each
    trial a step of `progress` (activity.Activity)."""
    written: list[Path] = []
    for t in results.get("trials") or []:
        tid = str(t.get("id"))
        if progress is not None:
            progress.advance()
        if "/" in tid or tid in (".", "..", ""):
            continue
        source = Path(run_dir) / "trials" / tid
        trace = data.read_jsonl(source / "trace.jsonl")
        dest = (Path(out) / tid) if out else source
        dest.mkdir(parents=True, exist_ok=True)
        path = dest / FILE
        tmp = path.with_name(f".{FILE}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(trajectory(t, trace, run), ensure_ascii=False, indent=1,
                                  default=str) + "\n", encoding="utf-8")
        os.replace(tmp, path)
        written.append(path)
    return written
