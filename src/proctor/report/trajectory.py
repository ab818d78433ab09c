"""What each agent did, for report.html: model turns (messages, tool calls), every command
(exit code, duration, stdout/stderr), other trace events and the audit log, read from the
trial directories (trace.jsonl, audit.jsonl: already redacted) — nothing new is captured.

Each trial's trajectory is compact JSON, gzipped and base64-encoded, embedded in the page and
decompressed by the browser (DecompressionStream) only when a trial is opened, so the page
stays small and opens fast however many trials it holds. A run-wide byte budget is shared
among trials (failed and errored ones get a larger share: they are the ones people read);
a trajectory over its share is rebuilt with shorter text, then fewer steps, and says so."""

from __future__ import annotations

import base64
import gzip
import json
from pathlib import Path
from typing import Any

from proctor.report import data
from proctor.text import cut as text_cut

BUDGET = 18_000_000  # bytes of encoded trajectories in one page (the page aims at <= 25 MB)
SHARE_MIN, SHARE_MAX = 1_200, 400_000  # bytes one trial may use, whatever the run's size
WEIGHT = {"pass": 1, "fail": 3, "error": 3}  # failures get a larger share
AUDIT_PER_TYPE = 25
# (characters kept per text, steps kept): tried in order until the trajectory fits its share
LEVELS = [(8000, None), (2000, None), (500, None), (160, 60), (80, 16)]


def _text(value: Any, limit: int) -> str:
    return text_cut(data.clean(value), limit, keep="both")


def _content(content: Any) -> str:
    """A message's content as text (a string, or a list of content blocks)."""
    if isinstance(content, list):
        return "\n".join(str(b.get("text", "")) if isinstance(b, dict) else str(b)
                         for b in content)
    return "" if content is None else str(content)


def _call(call: Any) -> str:
    """A tool call as one line: `run_command: ls -la`, else `name({json})`."""
    if not isinstance(call, dict):
        return str(call)
    fn = call.get("function") if isinstance(call.get("function"), dict) else call
    name = fn.get("name") or "tool"
    args = fn.get("arguments", fn.get("input", ""))
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except ValueError:
            return f"{name}({args})"
    if isinstance(args, dict) and set(args) == {"command"}:
        return f"{name}: {args['command']}"
    return f"{name}({json.dumps(args, ensure_ascii=False)})"


def _model(ev: dict[str, Any], limit: int) -> dict[str, Any]:
    request = ev.get("request") if isinstance(ev.get("request"), dict) else {}
    response = ev.get("response") if isinstance(ev.get("response"), dict) else {}
    usage = ev.get("usage") or {}
    msgs = []
    if request.get("system"):
        msgs.append({"role": "system", "text": _text(request["system"], limit)})
    for m in request.get("messages") or []:
        if not isinstance(m, dict):
            continue
        role = str(m.get("role") or "?")
        # A tool result repeats the command's output, shown in full with the command.
        text = _text(_content(m.get("content")), limit // 4 if role == "tool" else limit)
        msgs.append({"role": role, "text": text,
                     "calls": [_text(_call(c), limit) for c in m.get("tool_calls") or []]})
    text = response.get("text", response.get("content"))
    step = {"k": "model", "model": data.clean(ev.get("model")), "turn": ev.get("turn"),
            "in": usage.get("input"), "out": usage.get("output"), "lat": ev.get("latency_s"),
            "attempt": ev.get("attempt"), "msgs": msgs, "text": _text(_content(text), limit),
            "calls": [_text(_call(c), limit) for c in response.get("tool_calls") or []]}
    if ev.get("error"):
        step["error"] = _text(ev["error"], limit)
    return step


def _command(ev: dict[str, Any], limit: int) -> dict[str, Any]:
    return {"k": "cmd", "cmd": _text(ev.get("command") or " ".join(ev.get("argv") or []), limit),
            "exit": ev.get("exit_code"), "dur": ev.get("duration_s"),
            "timed_out": bool(ev.get("timed_out")), "capped": bool(ev.get("truncated")),
            "source": data.clean(ev.get("source")),
            "stdout": _text(ev.get("stdout") or "", limit),
            "stderr": _text(ev.get("stderr") or "", limit)}


def _step(ev: dict[str, Any], limit: int) -> dict[str, Any] | None:
    kind = ev.get("type")
    if kind == "command":
        return _command(ev, limit)
    if kind == "model_call":
        return _model(ev, limit)
    if kind == "agent_output":
        body = ev.get("output", ev.get("text", ev.get("content", "")))
        return {"k": "output", "text": _text(body, limit)}
    if kind == "check":
        return None  # the checks table above shows them, with their messages
    rest = {k: v for k, v in ev.items() if k not in ("type", "time")}
    return {"k": "event", "type": data.clean(kind),
            "text": _text(json.dumps(rest, default=str, ensure_ascii=False), limit)}


def _audit(events: list[dict[str, Any]], limit: int) -> tuple[list[list[str]], dict[str, int]]:
    """[type, one line] per event, at most AUDIT_PER_TYPE of each type; the rest counted."""
    shown: list[list[str]] = []
    seen: dict[str, int] = {}
    for ev in events:
        kind = data.clean(ev.get("type"))
        seen[kind] = seen.get(kind, 0) + 1
        if seen[kind] <= AUDIT_PER_TYPE:
            d = ev.get("details") if isinstance(ev.get("details"), dict) else {}
            shown.append([kind, _text(_audit_text(kind, d), min(limit, 400))])
    return shown, {k: n - AUDIT_PER_TYPE for k, n in seen.items() if n > AUDIT_PER_TYPE}


def _audit_text(kind: str, d: dict[str, Any]) -> str:
    if kind == "command":
        code = d.get("exit_code")
        cmd = d.get("command") or " ".join(d.get("argv") or [])
        return cmd + ("" if code is None else f"  [exit {code}]")
    if kind == "file_write":
        return f"{d.get('path')}  ({d.get('size', '?')} bytes)"
    if kind == "db_write":
        return (f"{d.get('service')}.{d.get('table')}  +{d.get('inserts', 0)} "
                f"~{d.get('updates', 0)} -{d.get('deletes', 0)}")
    if kind == "http_call":
        return f"{d.get('service')} {d.get('method')} {d.get('path')} → {d.get('status', '?')}"
    return json.dumps(d, default=str, ensure_ascii=False)


def build(trace: list[dict[str, Any]], audit: list[dict[str, Any]], limit: int,
          max_steps: int | None) -> dict[str, Any]:
    """One trial's trajectory document (what the page's script draws)."""
    steps = [s for s in (_step(ev, limit) for ev in trace) if s is not None]
    doc: dict[str, Any] = {"steps": steps}
    if max_steps is not None and len(steps) > max_steps:
        # The start (what it tried first) and the end (where it went wrong) matter most.
        head = max_steps // 2
        doc["steps"] = steps[:head] + steps[len(steps) - (max_steps - head):]
        doc["steps_cut"] = [head, len(steps) - max_steps]
    doc["audit"], doc["audit_more"] = _audit(audit, limit)
    doc["limit"] = limit
    return doc


def encode(doc: dict[str, Any]) -> str:
    raw = json.dumps(doc, separators=(",", ":"), ensure_ascii=False).encode()
    return base64.b64encode(gzip.compress(raw, compresslevel=6, mtime=0)).decode("ascii")


def decode(blob: str) -> dict[str, Any]:
    """The inverse of `encode` (tests and tools read embedded trajectories with it)."""
    return json.loads(gzip.decompress(base64.b64decode(blob)))


def fitted(trace: list[dict[str, Any]], audit: list[dict[str, Any]], share: int) -> str:
    """The trajectory, encoded, rebuilt with shorter text and fewer steps until it fits."""
    blob = ""
    for limit, max_steps in LEVELS:
        blob = encode(build(trace, audit, limit, max_steps))
        if len(blob) <= share:
            return blob
    return blob  # the smallest level: even a huge trial stays a few kB


def shares(trials: list[dict[str, Any]], budget: int = BUDGET) -> list[int]:
    """Each trial's byte share of the budget, by WEIGHT of its status."""
    weights = [WEIGHT.get(data.status_of(t), 1) for t in trials]
    total = sum(weights) or 1
    return [min(SHARE_MAX, max(SHARE_MIN, budget * w // total)) for w in weights]


def embedded(trials: list[dict[str, Any]], run_dir: Path | None,
             budget: int = BUDGET) -> list[str | None]:
    """Per trial (in order), its encoded trajectory; None when nothing was recorded (or the
    run directory is not known, e.g. a report rendered from results.json alone)."""
    if run_dir is None:
        return [None] * len(trials)
    out: list[str | None] = []
    for t, share in zip(trials, shares(trials, budget), strict=True):
        d = run_dir / "trials" / str(t.get("id"))
        trace = data.read_jsonl(d / "trace.jsonl")
        audit = data.read_jsonl(d / "audit.jsonl")
        out.append(fitted(trace, audit, share) if trace or audit else None)
    return out
