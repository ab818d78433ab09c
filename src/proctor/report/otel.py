"""Export: a run as OpenTelemetry traces, in OTLP/JSON (the JSON form of an OTLP
`ExportTraceServiceRequest`, which collectors, Jaeger, Phoenix and other OTLP readers take).

One trace per run; its spans, built from results.json and each trial's `trace.jsonl` (through
`turns`, as the other exports), with the times proctor recorded:

    proctor run                       the run: counts, pass rate; ERROR when it did not pass
    └ trial TASK                      one per trial: task, agent, model, verdict, score, reason
      │                                 (ERROR when it failed or errored); checks, forbidden
      │                                 rules and setup as span events
      ├ chat MODEL                    one per model turn, GenAI semantic conventions
      │ │                               (gen_ai.operation.name, gen_ai.provider.name,
      │ │                               gen_ai.request.model, gen_ai.usage.*, messages)
      │ └ execute_tool NAME           each tool call of that turn (gen_ai.tool.*)
      │   └ command TEXT              the agent command(s) it caused: exit code, output
      │     └ process ARGV0           each program the command started (its tree), exit code
      └ command TEXT                  a command no model turn asked for (oracle, command agent)

Ids are derived from the run id and the trial id (SHA-256), so exporting or sending a run
twice gives the same trace and span ids, and the spans `proctor run --otlp-endpoint` sends as
trials finish are those of a later export. Everything here is plain dicts and `json`: the
`opentelemetry-proto` package is needed only to send protobuf (report/otlp.py)."""

from __future__ import annotations

import hashlib
import json
import math
import os
import posixpath
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from proctor.report import data, turns
from proctor.results import RunResults

FILE = "otel.json"
LIMIT = 8192  # characters kept of a text attribute (output, messages, arguments)
INTERNAL, CLIENT = 1, 3  # SpanKind
STATUS_ERROR = 2  # StatusCode
Span = dict[str, Any]


def trace_id(run_id: str) -> str:
    """The run's trace id: 16 bytes, hex, never zero."""
    return _nonzero(hashlib.sha256(f"proctor run\0{run_id}".encode()).hexdigest()[:32])


def span_id(run_id: str, *path: str) -> str:
    """A span's id: 8 bytes, hex, never zero; `path` names it within the run."""
    key = "\0".join(("proctor span", run_id, *path))
    return _nonzero(hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:16])


def _nonzero(h: str) -> str:
    return h if int(h, 16) else h[:-1] + "1"


def _ns(ts: float) -> str:
    return str(int(round(ts * 1e9)))  # int64 fields are strings in the JSON mapping


def _epoch(text: Any) -> float | None:
    if not isinstance(text, str) or not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _cut(text: Any, limit: int = LIMIT) -> str:
    s = str(text)
    return s if len(s) <= limit else s[:limit] + f"… ({len(s) - limit} more characters)"


def _value(v: Any) -> dict[str, Any]:
    """An AnyValue of the OTLP/JSON mapping."""
    if isinstance(v, bool):
        return {"boolValue": v}
    if isinstance(v, int):
        return {"intValue": str(v)}
    if isinstance(v, float):
        return {"doubleValue": v if math.isfinite(v) else str(v).replace("inf", "Infinity")
                .replace("nan", "NaN")}
    if isinstance(v, (list, tuple)):
        return {"arrayValue": {"values": [_value(x) for x in v]}}
    if isinstance(v, str):
        return {"stringValue": _cut(v)}
    return {"stringValue": _cut(json.dumps(v, ensure_ascii=False, default=str))}


def attributes(values: Mapping[str, Any]) -> list[dict[str, Any]]:
    """KeyValues; a None value is left out."""
    return [{"key": k, "value": _value(v)} for k, v in values.items() if v is not None]


def _event(name: str, when: float, values: Mapping[str, Any]) -> dict[str, Any]:
    return {"timeUnixNano": _ns(when), "name": name, "attributes": attributes(values)}


def _error(message: str) -> dict[str, Any]:
    return {"code": STATUS_ERROR, "message": _cut(message, 1000)}


def provider_of(model: str | None) -> str | None:
    """gen_ai.provider.name from proctor's PROVIDER/MODEL notation."""
    if not model or "/" not in model:
        return None
    prefix = model.split("/", 1)[0]
    return {"google": "gcp.gemini", "gemini": "gcp.gemini", "bedrock": "aws.bedrock",
            "azure": "azure.ai.openai"}.get(prefix, prefix)


class _Spans:
    def __init__(self, run_id: str) -> None:
        self.run_id, self.trace = run_id, trace_id(run_id)
        self.spans: list[Span] = []

    def add(self, path: tuple[str, ...], parent: str | None, name: str, start: float,
            end: float, values: Mapping[str, Any], *, kind: int = INTERNAL,
            status: dict[str, Any] | None = None,
            events: list[dict[str, Any]] | None = None) -> str:
        sid = span_id(self.run_id, *path)
        span: Span = {"traceId": self.trace, "spanId": sid}
        if parent:
            span["parentSpanId"] = parent
        span.update({"name": _cut(" ".join(name.split()), 120), "kind": kind,
                     "startTimeUnixNano": _ns(start), "endTimeUnixNano": _ns(max(start, end)),
                     "attributes": attributes(values)})
        if events:
            span["events"] = events
        if status:
            span["status"] = status
        self.spans.append(span)
        return sid


def _window(trial: Mapping[str, Any], trace: list[dict[str, Any]]) -> tuple[float, float]:
    """When the trial ran: its recorded start is whole seconds (rounded down), so its end is
    the later of start + duration and its trace's last time, and its start the duration
    before that (never after the trace's first time, never before the recorded second)."""
    times = [t for ev in trace for t in (ev.get("started_at"), ev.get("time"))
             if isinstance(t, (int, float))]
    duration = float(trial.get("duration_s") or 0.0)
    started = _epoch(trial.get("started_at"))
    if started is None:
        started = min(times) if times else 0.0
    end = max([started + duration, *times])
    return max(started, min([end - duration, *times])), end


def _command_values(c: turns.Command) -> dict[str, Any]:
    return {"process.command_line": c.text, "process.exit.code": c.exit_code,
            "proctor.command.source": c.source, "proctor.duration_s": c.duration_s,
            "proctor.timed_out": c.timed_out or None, "proctor.output_truncated":
            c.truncated or None, "proctor.stdout": c.stdout or None,
            "proctor.stderr": c.stderr or None, "proctor.set_aside": c.aside,
            "gen_ai.tool.call.id": c.call_id}


class _Trial:
    """One trial's spans."""

    def __init__(self, spans: _Spans, trial: Mapping[str, Any], trace: list[dict[str, Any]],
                 parent: str | None):
        self.spans, self.trial, self.trace, self.parent = spans, trial, trace, parent
        self.tid = str(trial.get("id"))
        self.model = str(trial.get("model") or "") or None
        self.provider = provider_of(self.model)
        self.start, self.end = _window(trial, trace)
        self.sid = span_id(spans.run_id, self.tid)
        self.n = 0  # commands so far: each command span's place in the trial

    def build(self) -> None:
        self._trial_span()
        timeline = turns.build(self.trace)
        cursor = self.start
        for k, item in enumerate(timeline.items):
            if isinstance(item, turns.Turn):
                cursor = self._turn(k, item, cursor)
            elif isinstance(item, turns.Command):
                self._command(item, self.sid, cursor, name="agent program"
                              if item.source == "launcher" else "command")
            elif isinstance(item, turns.Aside):
                for c in item.commands:
                    self._command(c, self.sid, cursor)

    def _trial_span(self) -> None:
        t = self.trial
        status = data.status_of(t)
        tokens = t.get("tokens") or {}
        values = {
            "proctor.run_id": self.spans.run_id, "proctor.trial_id": self.tid,
            "proctor.task": t.get("task_id"), "proctor.agent": t.get("agent") or "llm",
            "proctor.model": self.model, "proctor.help_mode": t.get("help_mode"),
            "proctor.replica": t.get("replica"), "proctor.category": t.get("category"),
            "proctor.params": t.get("params") or None,
            "proctor.verdict": status, "proctor.score": float(t.get("composite_score") or 0.0),
            "proctor.reason": data.reason(t) or None, "proctor.error_kind": t.get("error_kind"),
            "proctor.limit_hit": t.get("limit_hit"), "proctor.turns": t.get("turns"),
            "proctor.cost_usd": t.get("cost_usd"), "proctor.duration_s": t.get("duration_s"),
            "proctor.node": t.get("node"),
            "gen_ai.agent.name": t.get("agent") or "llm", "openinference.span.kind": "AGENT",
            "gen_ai.usage.input_tokens": tokens.get("input"),
            "gen_ai.usage.output_tokens": tokens.get("output")}
        self.spans.add((self.tid,), self.parent, f"trial {t.get('task_id')}", self.start,
                       self.end, values, events=self._events(),
                       status=_error(data.reason(t) or status) if status != "pass" else None)

    def _events(self) -> list[dict[str, Any]]:
        """Setup, checks, forbidden rules, tampering and the rest of the trace's events."""
        out: list[dict[str, Any]] = []
        check_times: dict[str, float] = {}
        for ev in self.trace:
            kind, when = ev.get("type"), ev.get("time")
            when = when if isinstance(when, (int, float)) else self.end
            if kind == "check":
                check_times.setdefault(str(ev.get("name")), when)
            elif kind == "setup":
                out.append(_event("proctor.setup", when, {
                    "process.command_line": ev.get("command"),
                    "process.exit.code": ev.get("exit_code")}))
            elif kind not in ("model_call", "command", "agent_output", "agent_stdout",
                              "agent_state_write"):
                out.append(_event(f"proctor.{kind}", when, {
                    f"proctor.{k}": v for k, v in ev.items() if k not in ("type", "time")}))
        for c in self.trial.get("checks") or []:
            name = str(c.get("name"))
            out.append(_event("proctor.check", check_times.get(name, self.end), {
                "proctor.check.name": name, "proctor.check.type": c.get("type"),
                "proctor.check.passed": bool(c.get("passed")),
                "proctor.check.score": float(c.get("score") or 0.0),
                "proctor.check.weight": float(c.get("weight", 1.0)),
                "proctor.check.gate": bool(c.get("gate")),
                "proctor.check.message": data.clean(c.get("message")) or None,
                "proctor.check.error": c.get("error")}))
        for f in data.violated_rules(self.trial):
            out.append(_event("proctor.forbidden", self.end, {
                "proctor.forbidden.rule": f.get("rule"),
                "proctor.forbidden.details": f.get("details")}))
        for change in self.trial.get("tampering") or []:
            out.append(_event("proctor.tampering", self.end, {
                "proctor.tampering.path": change.get("path"),
                "proctor.tampering.change": change.get("change")}))
        files = [ev for ev in self.trace if ev.get("type") == "agent_state_write"]
        if files:
            out.append(_event("proctor.agent_files", self.end, {"proctor.paths": [
                str(ev.get("path")) for ev in files[:200]]}))
        return sorted(out, key=lambda e: int(e["timeUnixNano"]))

    def _request_model(self, turn: turns.Turn) -> str | None:
        model = turn.model or self.model
        if model and self.provider and model.startswith(self.provider + "/"):
            return model.split("/", 1)[1]  # proctor's PROVIDER/ prefix is not the model's name
        return model or None

    def _turn(self, k: int, turn: turns.Turn, cursor: float) -> float:
        end = turn.time if turn.time is not None else cursor
        start = turn.started if turn.started is not None else end
        model = self._request_model(turn)
        output: list[dict[str, Any]] = ([{"type": "text", "content": turn.text}] if turn.text
                                        else [])
        output += [{"type": "tool_call", "id": c.id, "name": c.name, "arguments": c.args}
                   for c in turn.calls]
        finish = "tool_call" if turn.calls else "stop"
        values = {
            "gen_ai.operation.name": "chat", "gen_ai.provider.name": self.provider,
            "gen_ai.system": self.provider, "gen_ai.request.model": model,
            "gen_ai.conversation.id": self.tid,
            "gen_ai.usage.input_tokens": turn.tokens_in,
            "gen_ai.usage.output_tokens": turn.tokens_out,
            "gen_ai.response.finish_reasons": None if turn.error else [finish],
            "gen_ai.system_instructions": json.dumps(
                [{"type": "text", "content": turn.system}], ensure_ascii=False)
            if turn.system else None,
            "gen_ai.input.messages": json.dumps(
                [{"role": m.role, "parts": [{"type": "text", "content": m.text}]}
                 for m in turn.messages], ensure_ascii=False) if turn.messages else None,
            "gen_ai.output.messages": json.dumps(
                [{"role": "assistant", "parts": output, "finish_reason": finish}],
                ensure_ascii=False, default=str) if output else None,
            "error.type": "model_call" if turn.error else None,
            # OpenInference's names of the same (Arize Phoenix shows LLM spans by them)
            "openinference.span.kind": "LLM", "llm.model_name": model,
            "llm.provider": self.provider, "llm.token_count.prompt": turn.tokens_in,
            "llm.token_count.completion": turn.tokens_out,
            "proctor.turn": turn.number, "proctor.latency_s": turn.latency_s,
            "proctor.attempt": turn.attempt, "proctor.side": turn.side,
            "proctor.error": turn.error}
        tsid = self.spans.add((self.tid, f"turn{k}"), self.sid, f"chat {model or ''}", start,
                              end, values, kind=CLIENT,
                              status=_error(turn.error) if turn.error else None)
        for n, call in enumerate(turn.calls):
            self._call(k, n, call, tsid, end)
        for c in turn.aside:
            self._command(c, tsid, end)
        return end

    def _call(self, k: int, n: int, call: turns.Call, parent: str, at: float) -> None:
        timed = [c for c in call.commands if c.started_at is not None]
        start = min([at, *(c.started_at for c in timed if c.started_at is not None)])
        end = max([at, *((c.started_at or 0.0) + (c.duration_s or 0.0) for c in timed)])
        returned = call.returned()
        values = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": call.name,
                  "gen_ai.tool.type": "function", "gen_ai.tool.call.id": call.id,
                  "gen_ai.tool.call.arguments": json.dumps(call.args, ensure_ascii=False,
                                                           default=str),
                  "gen_ai.tool.call.result": returned,
                  "openinference.span.kind": "TOOL", "tool.name": call.name}
        csid = self.spans.add((self.tid, f"turn{k}", f"call{n}"), parent,
                              f"execute_tool {call.name}", start, end, values)
        for c in call.commands:
            self._command(c, csid, start)

    def _command(self, c: turns.Command, parent: str, at: float, name: str = "command") -> None:
        self.n += 1
        start = c.started_at if c.started_at is not None else at
        end = start + (c.duration_s or 0.0)
        failed = ("timed out" if c.timed_out else f"exit code {c.exit_code}"
                  if c.exit_code not in (0, None) else None)
        path = (self.tid, f"cmd{self.n}")
        sid = self.spans.add(path, parent, f"{name} {c.text}", start, end, _command_values(c),
                             status=_error(failed) if failed and c.aside is None else None)
        ids: list[str] = []
        for i, p in enumerate(c.process_records):
            argv = [str(a) for a in p.get("argv") or []] if isinstance(p.get("argv"), list) \
                else [str(p.get("argv") or "")]
            up = p.get("parent")
            owner = ids[up] if isinstance(up, int) and 0 <= up < len(ids) else sid
            exe = str(p.get("exe") or "")
            ids.append(self.spans.add((*path, f"proc{i}"), owner, "process " + (
                posixpath.basename(argv[0]) if argv and argv[0] else posixpath.basename(exe)),
                start, end, {"process.command_args": argv, "process.executable.path": exe or
                             None, "process.exit.code": p.get("exit_code")}))


def trial_spans(run_id: str, trial: Mapping[str, Any], trace: list[dict[str, Any]]
                ) -> list[Span]:
    """One trial's spans, the trial's own first, its parent the run's span."""
    spans = _Spans(run_id)
    _Trial(spans, trial, trace, span_id(run_id, "run")).build()
    return spans.spans


def run_span(results: RunResults, run: Mapping[str, Any],
             trial_windows: list[tuple[float, float]] | None = None) -> Span:
    """The root: the whole run, from results.json (and its trials' times)."""
    run_id = _run_id(results, run)
    windows = trial_windows or []
    start = _epoch(results.get("started_at")) or _epoch(run.get("started_at"))
    end = _epoch(results.get("finished_at"))
    start = min([x for x in (start, *(w[0] for w in windows)) if x is not None] or [0.0])
    end = max([x for x in (end, start, *(w[1] for w in windows)) if x is not None])
    h = data.headline(results)
    summary: Mapping[str, Any] = results.get("summary") or {}
    suite: Mapping[str, Any] = s if isinstance(s := run.get("suite"), dict) else {}
    name = suite.get("name") or ", ".join(Path(str(p)).name for p in run.get("paths") or [])
    exit_code = results.get("exit_code")
    values = {"openinference.span.kind": "CHAIN",
              "proctor.run_id": run_id, "proctor.suite": name or None,
              "proctor.trials": h["trials"], "proctor.passed": h["passed"],
              "proctor.failed": h["failed"], "proctor.errored": h["errored"],
              "proctor.pass_rate": h["pass_rate"], "proctor.complete": not h["incomplete"],
              "proctor.exit_code": exit_code,
              "proctor.not_run": len(summary.get("not_run") or []) or None}
    missed = h["trials"] - h["passed"]
    spans = _Spans(run_id)
    spans.add(("run",), None, f"proctor run {name}".strip(), start, end, values,
              status=_error(f"{missed} of {h['trials']} trials did not pass" if missed
                            else "the run did not pass") if exit_code not in (0, None) else None)
    return spans.spans[0]


def _run_id(results: Mapping[str, Any], run: Mapping[str, Any]) -> str:
    return str(results.get("run_id") or run.get("run_id") or "run")


def request(spans: list[Span], run: Mapping[str, Any]) -> dict[str, Any]:
    """An ExportTraceServiceRequest (OTLP/JSON) holding `spans`."""
    versions = v if isinstance(v := run.get("versions"), dict) else {}
    host = h if isinstance(h := run.get("host"), dict) else {}
    version = str(versions.get("proctor") or "") or None
    return {"resourceSpans": [{
        "resource": {"attributes": attributes({"service.name": "proctor",
                                               "service.version": version,
                                               "host.name": host.get("name")})},
        "scopeSpans": [{"scope": {"name": "proctor", **({"version": version} if version
                                                         else {})},
                        "spans": spans}]}]}


def read_trace(run_dir: Path, trial_id: str) -> list[dict[str, Any]]:
    if "/" in trial_id or trial_id in ("", ".", ".."):
        return []
    return data.read_jsonl(Path(run_dir) / "trials" / trial_id / "trace.jsonl")


def span_groups(run_dir: Path, results: RunResults, run: Mapping[str, Any] | None = None
                ) -> list[list[Span]]:
    """The run's span, then each trial's spans (a group each)."""
    run = run or {}
    run_id = _run_id(results, run)
    groups: list[list[Span]] = []
    windows = []
    for t in results.get("trials") or []:
        trace = read_trace(run_dir, str(t.get("id")))
        windows.append(_window(t, trace))
        groups.append(trial_spans(run_id, t, trace))
    return [[run_span(results, run, windows)], *groups]


def run_request(run_dir: Path, results: RunResults, run: Mapping[str, Any] | None = None
                ) -> dict[str, Any]:
    """The whole run: the run's span, then each trial's."""
    return request([s for g in span_groups(run_dir, results, run) for s in g], run or {})


def write_otel(run_dir: Path, results: RunResults, run: Mapping[str, Any] | None = None,
               out: Path | None = None) -> list[Path]:
    """RUN_DIR/otel.json, or `out`: the request on one line (a JSON document, and a JSON
    Lines file the Collector's `otlpjsonfile` receiver reads)."""
    path = Path(out) if out else Path(run_dir) / FILE
    if path.is_dir():
        path = path / FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(run_request(run_dir, results, run), ensure_ascii=False,
                              separators=(",", ":")) + "\n", encoding="utf-8")
    os.replace(tmp, path)
    return [path]
