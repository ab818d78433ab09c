"""Export: a run as an Inspect AI eval log (`inspect.eval`, or `.json`), which `inspect view`
and Inspect's log tools open. Written through `inspect_ai`'s own log API, an optional extra
(`pip install 'proctor[inspect]'`): imported here only, never by the rest of proctor.

One sample per trial (id: the trial id, epoch: its replica + 1):

* `messages`: the conversation from proctor's record (`turns`): system prompt, user
  messages, each model turn's answer with its tool calls, each call's result as a tool
  message (what the agent saw, else the output proctor recorded); a command no model asked
  for (`oracle`, `command` agents) is an assistant tool call of `shell`;
* `scores`: one per check (value: the check's score in [0, 1]; explanation: its message;
  passed, weight, gate and type in metadata), plus `composite` (the trial's composite score,
  explained by why it did not pass) and `verdict` ("C" pass, "I" fail or error);
* `metadata`: task, model, agent, help mode, params, status, reason, forbidden rules, cost;
  an errored trial also has the sample `error`.

The log's model is the run's model when it has one, else `proctor/several` (each sample says
its own); its results hold the mean composite score and the pass rate."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from proctor.errors import UsageError
from proctor.report import data, turns
from proctor.results import RunResults

FILE = "inspect.eval"


def _inspect() -> Any:
    try:
        import inspect_ai.log as log
    except ImportError:
        raise UsageError("the inspect export needs Inspect AI: pip install 'proctor[inspect]' "
                         "(or inspect_ai)") from None
    return log


def _messages(timeline: turns.Timeline) -> list[Any]:
    from inspect_ai.model import (
        ChatMessageAssistant,
        ChatMessageSystem,
        ChatMessageTool,
        ChatMessageUser,
    )
    from inspect_ai.tool import ToolCall

    out: list[Any] = []
    for item in timeline.items:
        if isinstance(item, turns.Turn):
            if item.system:
                out.append(ChatMessageSystem(content=item.system))
            for m in item.messages:
                kind = ChatMessageSystem if m.role in ("system", "developer") else ChatMessageUser
                out.append(kind(content=m.text))
            ids = [c.id or f"call_{len(out)}_{n}" for n, c in enumerate(item.calls)]
            out.append(ChatMessageAssistant(
                content=item.text, model=item.model or None,
                tool_calls=[ToolCall(id=i, function=c.name, arguments=c.args if isinstance(
                    c.args, dict) else {"input": c.args}) for i, c in zip(ids, item.calls,
                                                                            strict=True)]
                or None))
            out += [ChatMessageTool(content=c.returned() or "", tool_call_id=i, function=c.name)
                    for i, c in zip(ids, item.calls, strict=True)]
        elif isinstance(item, turns.Command) and item.aside is None and item.source != "launcher":
            call_id = f"cmd_{len(out)}"
            out.append(ChatMessageAssistant(content="", tool_calls=[ToolCall(
                id=call_id, function="shell", arguments={"command": item.text})]))
            out.append(ChatMessageTool(content=item.as_text(), tool_call_id=call_id,
                                       function="shell"))
    return out


def _scores(t: Mapping[str, Any]) -> dict[str, Any]:
    from inspect_ai.scorer import Score

    scores = {str(c.get("name")): Score(
        value=float(c.get("score") or 0.0), explanation=data.clean(c.get("message")),
        metadata={"passed": bool(c.get("passed")), "weight": c.get("weight", 1.0),
                  "gate": bool(c.get("gate")), "type": c.get("type")})
        for c in t.get("checks") or []}
    scores["composite"] = Score(value=float(t.get("composite_score") or 0.0),
                                explanation=data.reason(t) or None)
    scores["verdict"] = Score(value="C" if data.status_of(t) == "pass" else "I",
                              answer=data.status_of(t))
    return scores


def _sample(t: Mapping[str, Any], trace: list[dict[str, Any]]) -> Any:
    from inspect_ai.log import EvalSample
    from inspect_ai.model import ModelOutput, ModelUsage

    timeline = turns.build(trace)
    messages = _messages(timeline)
    prompt = next((m.text for turn in timeline.turns for m in turn.messages
                   if m.role == "user"), str(t.get("task_id")))
    tokens = t.get("tokens") or {}
    tin, tout = int(tokens.get("input") or 0), int(tokens.get("output") or 0)
    model = t.get("model") or f"proctor/{t.get('agent') or 'agent'}"
    usage = ModelUsage(input_tokens=tin, output_tokens=tout, total_tokens=tin + tout,
                       total_cost=t.get("cost_usd"))
    error = None
    if data.status_of(t) == "error":
        from inspect_ai._util.error import EvalError

        message = data.reason(t) or "the trial errored"
        error = EvalError(message=message, traceback=message, traceback_ansi=message)
    return EvalSample(
        id=str(t.get("id")), epoch=int(t.get("replica") or 0) + 1, input=prompt, target="",
        messages=messages, output=ModelOutput.from_content(model, str(t.get("output") or "")),
        scores=_scores(t), model_usage={model: usage} if tin or tout else {},
        total_time=t.get("duration_s"), error=error,
        metadata={"task_id": t.get("task_id"), "model": t.get("model"), "agent": t.get("agent"),
                  "help_mode": t.get("help_mode"), "params": t.get("params") or {},
                  "replica": t.get("replica"), "status": t.get("status"),
                  "reason": data.reason(t) or None, "forbidden": t.get("forbidden") or [],
                  "cost_usd": t.get("cost_usd"), "turns": t.get("turns")})


def eval_log(run_dir: Path, results: RunResults, run: Mapping[str, Any] | None = None,
             progress: Any = None) -> Any:
    """The run as an `inspect_ai.log.EvalLog`; each trial a step of `progress`."""
    log = _inspect()
    run = run or {}
    trials = results.get("trials") or []
    samples = []
    for t in trials:
        samples.append(_sample(t, data.read_jsonl(Path(run_dir) / "trials" / str(t.get("id"))
                                                  / "trace.jsonl")
                               if "/" not in str(t.get("id")) else []))
        if progress is not None:
            progress.advance()
    models = sorted({m for t in trials if (m := t.get("model"))})
    specs = p if isinstance(p := run.get("paths"), list) else []
    name = ", ".join(Path(str(s)).name for s in specs) or "proctor"
    run_id = str(results.get("run_id") or run.get("run_id") or "run")
    h = data.headline(results)
    mean = (sum(float(t.get("composite_score") or 0.0) for t in trials) / len(trials)
            if trials else 0.0)
    return log.EvalLog(
        status="success" if not h["incomplete"] else "cancelled",
        eval=log.EvalSpec(
            created=str(results.get("started_at") or run.get("started_at") or ""),
            task=name, task_id=run_id, run_id=run_id, eval_id=run_id,
            dataset=log.EvalDataset(name=name, samples=len(trials),
                                    sample_ids=[str(t.get("id")) for t in trials]),
            model=models[0] if len(models) == 1 else "proctor/several",
            config=log.EvalConfig(), metadata={"proctor": {"run_id": run_id,
                                                           "specs": specs}}),
        results=log.EvalResults(
            total_samples=len(trials), completed_samples=len(trials),
            scores=[log.EvalScore(name="composite", scorer="proctor", metrics={
                "mean": log.EvalMetric(name="mean", value=mean),
                "pass_rate": log.EvalMetric(name="pass_rate", value=h["pass_rate"])})]),
        stats=log.EvalStats(started_at=str(results.get("started_at") or ""),
                            completed_at=str(results.get("finished_at") or "")),
        samples=samples)


def check_path(path: Path) -> None:
    if path.suffix not in (".eval", ".json"):
        raise UsageError(f"{path}: an Inspect log is a .eval or a .json file")


def write_inspect(run_dir: Path, results: RunResults, run: Mapping[str, Any] | None = None,
                  out: Path | None = None, progress: Any = None) -> list[Path]:
    """The run's eval log: RUN_DIR/inspect.eval, or `out` (`.json` for the JSON format)."""
    log = _inspect()
    path = Path(out) if out else Path(run_dir) / FILE
    check_path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    log.write_eval_log(eval_log(run_dir, results, run, progress), str(path))
    return [path]
