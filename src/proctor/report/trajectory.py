"""What each agent did, for report.html: model turns (messages, tool calls), every command
(exit code, duration, stdout/stderr), other trace events and the audit log, read from the
trial directories (trace.jsonl, audit.jsonl: already redacted) — nothing new is captured.

Trajectories are compact JSON, gzipped and base64-encoded in blocks of CHUNK trials, embedded
in the page and decompressed by the browser (DecompressionStream) only when one of a block's
trials is opened, so the page stays small and opens fast however many trials it holds. A run-wide byte budget is shared
among trials (failed and errored ones get a larger share: they are the ones people read);
a trajectory over its share is rebuilt with shorter text, then fewer steps, and says so."""

from __future__ import annotations

import base64
import gzip
import json
from pathlib import Path
from typing import Any

from proctor.report import data, wire
from proctor.text import cut as text_cut

PAGE_TARGET = 24_000_000  # bytes: the whole report.html aims at <= ~25 MB
BUDGET_MIN = 2_000_000  # trajectories get at least this much, however big the rest is
CHUNK = 50  # trials per compressed block: neighbours share a system prompt, tools, paths...
RATIO = 5  # a first guess of how much gzip shrinks a block's JSON, refined by measuring
SHARE_MIN, SHARE_MAX = 300, 2_000_000  # raw JSON bytes one trial may use
WEIGHT = {"pass": 1, "fail": 3, "error": 3}  # failures get a larger share
AUDIT_PER_TYPE = 25
# (characters kept per text, steps kept, audit events per type): tried in order until a
# trajectory fits its share; the last level keeps what ran and how it ended, no text.
LEVELS = [(8000, None, 25), (2000, None, 25), (500, None, 25), (160, 60, 10), (80, 16, 5),
          (40, 8, 3), (0, 6, 0)]


class _Text:
    """A text of the trajectory, cleaned once and cut at each level: `scale` and `floor`
    adjust the level's limit (a tool result repeats its command's output: a quarter; a
    command line is always readable: 120 characters at least)."""

    __slots__ = ("text", "scale", "floor")

    def __init__(self, value: Any, scale: float = 1.0, floor: int = 0):
        self.text, self.scale, self.floor = data.clean(value), scale, floor

    def at(self, limit: int) -> str:
        limit = max(int(limit * self.scale), self.floor)
        if limit == 0:  # the smallest level: say how much there was, keep none of it
            return f"[{len(self.text)} characters left out]" if self.text else ""
        return text_cut(self.text, limit, keep="both")


def _at(obj: Any, limit: int) -> Any:
    """A copy of `obj` with every _Text cut to `limit`."""
    if isinstance(obj, _Text):
        return obj.at(limit)
    if isinstance(obj, dict):
        return {k: _at(v, limit) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_at(v, limit) for v in obj]
    return obj


def _model(ev: dict[str, Any], seen: dict[Any, int]) -> dict[str, Any]:
    """A model turn. Calls recorded by the proxy carry the whole conversation each time:
    only the messages since the previous call of the same kind are kept (`seen`)."""
    usage = ev.get("usage") or {}
    system, messages = wire.request_messages(ev.get("request"))
    msgs: list[dict[str, Any]] = []
    if ev.get("source") == "proxy":
        key = (bool(ev.get("side")), ev.get("path"))
        earlier, seen[key] = min(seen.get(key, 0), len(messages)), len(messages)
        if earlier:
            system, messages = "", messages[earlier:]
            msgs.append({"role": "…", "text": _Text(f"{earlier} earlier messages"),
                         "calls": []})
    if system:
        msgs.append({"role": "system", "text": _Text(system), "calls": []})
    for m in messages:
        # A tool result repeats the command's output, shown in full with the command.
        msgs.append({"role": data.clean(m["role"]),
                     "text": _Text(m["text"], 0.25 if m["role"] == "tool" else 1.0),
                     "calls": [_Text(c, floor=120) for c in m["calls"]]})
    text, calls = wire.response_parts(ev.get("response"))
    request = ev.get("request")
    label = ev.get("model") or (request.get("model") if isinstance(request, dict) else None)
    step = {"k": "model", "model": data.clean(label or ""), "turn": ev.get("turn"),
            "in": usage.get("input"), "out": usage.get("output"), "lat": ev.get("latency_s"),
            "attempt": ev.get("attempt"), "msgs": msgs, "text": _Text(text),
            "calls": [_Text(c, floor=120) for c in calls]}
    for flag in ("side", "purpose"):
        if ev.get(flag):
            step[flag] = data.clean("side call" if flag == "side" else ev[flag])
    if ev.get("error"):
        step["error"] = _Text(ev["error"], floor=200)
    return step


def _command(ev: dict[str, Any]) -> dict[str, Any]:
    command = ev.get("command") or " ".join(ev.get("argv") or [])
    if ev.get("ignored"):  # the agent's launcher, its housekeeping: one quiet line
        return {"k": "cmd", "cmd": _Text(command, floor=120), "exit": ev.get("exit_code"),
                "dur": ev.get("duration_s"), "ignored": data.clean(ev["ignored"])}
    return {"k": "cmd", "cmd": _Text(command, floor=120),
            "exit": ev.get("exit_code"), "dur": ev.get("duration_s"),
            "timed_out": bool(ev.get("timed_out")), "capped": bool(ev.get("truncated")),
            "source": data.clean(ev.get("source")),
            "stdout": _Text(ev.get("stdout") or ""), "stderr": _Text(ev.get("stderr") or "")}


def _step(ev: dict[str, Any], seen: dict[Any, int]) -> dict[str, Any] | None:
    kind = ev.get("type")
    if kind == "command":
        return _command(ev)
    if kind == "model_call":
        return _model(ev, seen)
    if kind == "agent_output":
        body = ev.get("output", ev.get("text", ev.get("content", "")))
        return {"k": "output", "text": _Text(body)}
    if kind == "agent_stdout":  # an external agent's whole stdout (its answer is the launcher's)
        return {"k": "output", "label": "all the agent printed", "text": _Text(ev.get("stdout") or "")}
    if kind == "check":
        return None  # the checks table above shows them, with their messages
    rest = {k: v for k, v in ev.items() if k not in ("type", "time")}
    return {"k": "event", "type": data.clean(kind),
            "text": _Text(json.dumps(rest, default=str, ensure_ascii=False))}


def _audit(events: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(type, one line) per event, cut at 400 characters, at most AUDIT_PER_TYPE of each."""
    out: list[tuple[str, str]] = []
    seen: dict[str, int] = {}
    for ev in events:
        kind = data.clean(ev.get("type"))
        seen[kind] = seen.get(kind, 0) + 1
        d = ev.get("details") if isinstance(ev.get("details"), dict) else {}
        out.append((kind, "" if seen[kind] > AUDIT_PER_TYPE else
                    text_cut(data.clean(_audit_text(kind, d)), 400, keep="both")))
    return out


def _audit_at(events: list[tuple[str, str]], per_type: int
              ) -> tuple[list[list[str]], dict[str, int]]:
    shown: list[list[str]] = []
    seen: dict[str, int] = {}
    for kind, line in events:
        seen[kind] = seen.get(kind, 0) + 1
        if seen[kind] <= per_type:
            shown.append([kind, line])
    return shown, {k: n - per_type for k, n in seen.items() if n > per_type}


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


class Trajectory:
    """One trial's events, cleaned once; `at(level)` is the document the page draws."""

    def __init__(self, trace: list[dict[str, Any]], audit: list[dict[str, Any]]):
        seen: dict[Any, int] = {}
        self.steps = [s for s in (_step(ev, seen) for ev in trace) if s is not None]
        self.audit = _audit(audit)

    def at(self, limit: int = 8000, max_steps: int | None = None,
           audit_per_type: int = AUDIT_PER_TYPE) -> dict[str, Any]:
        steps = self.steps
        doc: dict[str, Any] = {}
        if max_steps is not None and len(steps) > max_steps:
            # The start (what it tried first) and the end (where it went wrong) matter most.
            head = max_steps // 2
            steps = steps[:head] + steps[len(steps) - (max_steps - head):]
            doc["steps_cut"] = [head, len(self.steps) - max_steps]
        doc["steps"] = _at(steps, limit)
        doc["audit"], doc["audit_more"] = _audit_at(self.audit, audit_per_type)
        doc["limit"] = limit
        return doc


def _json(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def encode(docs: list[Any], raw: bytes | None = None) -> str:
    """A block of trajectories as base64(gzip(JSON array)); `raw` when already dumped."""
    raw = raw if raw is not None else _json(docs).encode()
    return base64.b64encode(gzip.compress(raw, compresslevel=6, mtime=0)).decode("ascii")


def decode(blob: str) -> list[Any]:
    """The inverse of `encode` (tests and tools read embedded trajectories with it)."""
    return json.loads(gzip.decompress(base64.b64decode(blob)))


class _Fitter:
    """Builds trajectories within a raw-size share, starting at the level that fitted the
    previous trial (neighbours are alike), so most trials are built once or twice."""

    def __init__(self) -> None:
        self.hint = 0

    def fit(self, trace: list[dict[str, Any]], audit: list[dict[str, Any]], share: int
            ) -> dict[str, Any]:
        level = self.hint
        traj = Trajectory(trace, audit)
        doc = traj.at(*LEVELS[level])
        if len(_json(doc)) <= share:
            while level > 0:  # maybe this one is smaller than the last: try more text
                bigger = traj.at(*LEVELS[level - 1])
                if len(_json(bigger)) > share:
                    break
                level, doc = level - 1, bigger
        else:
            while level < len(LEVELS) - 1:
                level += 1
                doc = traj.at(*LEVELS[level])
                if len(_json(doc)) <= share:
                    break
        self.hint = level
        return doc


def fitted(trace: list[dict[str, Any]], audit: list[dict[str, Any]], share: int
           ) -> dict[str, Any]:
    """One trajectory within `share` bytes of JSON (the last level if nothing fits)."""
    return _Fitter().fit(trace, audit, share)


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def recorded(trials: list[dict[str, Any]], run_dir: Path | None) -> list[Path | None]:
    """Each trial's directory when it recorded a trace or audit events, else None (and None
    for all without a run directory: a report rendered from results.json alone)."""
    out: list[Path | None] = []
    for t in trials:
        tid = str(t.get("id"))
        # An id is one path component: a results.json from elsewhere (a CI artifact opened
        # with `proctor view`) cannot point the page at files outside its run.
        safe = run_dir is not None and Path(tid).name == tid and tid not in (".", "..")
        d = run_dir / "trials" / tid if safe else None
        has = d is not None and bool(_size(d / "trace.jsonl") or _size(d / "audit.jsonl"))
        out.append(d if has else None)
    return out


def blocks(trials: list[dict[str, Any]], dirs: list[Path | None], budget: int,
           details: list[str] | None = None) -> list[str]:
    """The encoded blocks, within `budget` bytes: trial i is item i % CHUNK of block
    i // CHUNK (null when there is nothing to show); [] when no trial has anything.
    `details` (report.html of a large run): each trial's detail HTML, carried in its
    document as `detail` so the page's DOM stays small.

    One pass, reading one trial at a time (a run's traces can be far larger than memory):
    each block's trials share what is left of the budget by weight, in JSON bytes times
    the compression ratio measured so far."""
    if not any(dirs) and not details:
        return []
    weights = [WEIGHT.get(data.status_of(t), 1) if d else 0 for t, d in zip(trials, dirs,
                                                                           strict=True)]
    left, weight_left = budget, sum(weights)
    raw_total, enc_total = 0, 0
    fitter = _Fitter()
    out: list[str] = []
    for start in range(0, len(trials), CHUNK):
        ratio = raw_total / enc_total if enc_total else RATIO
        per_weight = max(0, left) * ratio / max(1, weight_left)
        chunk: list[dict[str, Any] | None] = []
        for i in range(start, min(start + CHUNK, len(trials))):
            doc: dict[str, Any] | None = None
            if (d := dirs[i]) is not None:
                trace = data.read_jsonl(d / "trace.jsonl")
                audit = data.read_jsonl(d / "audit.jsonl")
                share = min(SHARE_MAX, max(SHARE_MIN, int(per_weight * weights[i])))
                doc = fitter.fit(trace, audit, share)
            if details:
                doc = {**(doc or {}), "detail": details[i]}
            chunk.append(doc)
        raw = _json(chunk).encode()
        block = encode(chunk, raw)
        out.append(block)
        raw_total, enc_total = raw_total + len(raw), enc_total + len(block)
        left -= len(block)
        weight_left -= sum(weights[start:start + CHUNK])
    return out
