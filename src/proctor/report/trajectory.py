"""What each agent did, for report.html: the turn-aligned timeline of `turns` (each model turn
with its tool calls, each call with the command it caused), cleaned of escape sequences, cut
to size, and compressed — read from the trial directories (trace.jsonl, audit.jsonl: already
redacted); nothing new is captured.

A trajectory is drawn in report.html from a document (compact JSON) gzipped and embedded as
base64, one per trial, unpacked by the browser only when the trial is opened. The page aims
at PAGE_TARGET bytes whatever the run's size, so a trial gets a share of that (failed and
errored ones more: they are the ones people read), and its document is the largest of a few
prepared sizes (LEVELS: shorter texts, then fewer items) that fits.

Preparing those sizes reads the whole trace: it is done once per trial, when the trial
finishes (`digest`, called by the runner), into `trials/ID/digest.bin`. A report only picks a
level per trial and copies its bytes, so it stays fast however large the traces are; a trial
without an up-to-date digest (an older run) is digested when its report is written.

digest.bin (little-endian): `PRDG`, its format version (u16), the size and mtime_ns of the
trace it was made from (else of the audit log; 2 × i64), the number of levels (u16), each
level's (characters kept, offset, length) (3 × u32: the offset from the end of this head),
then the levels' gzip members, the smallest first. A binary head: a 10,000-trial report
reads ten thousand of them."""

from __future__ import annotations

import base64
import functools
import gzip
import json
import os
import re
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from proctor.report import data, turns
from proctor.text import cut as text_cut

PAGE_TARGET = 24_000_000  # bytes: the whole report.html aims at <= ~25 MB
BUDGET_MIN = 2_000_000  # trajectories get at least this much, however big the rest is
WEIGHT = {"pass": 1, "fail": 3, "error": 3}  # failures get a larger share
AUDIT_PER_TYPE = 25
DIGEST = "digest.bin"
SMALL = 600  # bytes: a level this small needs no smaller one after it
SHARE_MAX = 2_000_000  # bytes (base64) of one trial's document in a page, at most
DIGEST_VERSION = 2  # bump whenever the documents change: older digests are made again
MAGIC = b"PRDG"
HEAD = struct.Struct("<4sHqqH")  # magic, version, source size, source mtime_ns, levels
LEVEL = struct.Struct("<III")  # characters kept, offset, length
# (characters kept per text, timeline items kept, audit events and set-aside commands kept
# per kind): tried in order; the last level keeps what ran and how it ended, no text.
LEVELS = [(8000, None, 25), (2000, None, 25), (500, None, 25), (160, 60, 10), (80, 16, 5),
          (40, 8, 3), (0, 6, 0)]
OPEN_TAG = re.compile(r"(?m)^<([A-Za-z][\w-]*)(?:\s[^>\n]*)?>")
FOLD_MIN = 300  # a tagged block longer than this (help text, reminders) starts folded
FOLD_TRIES = 20


class _Text:
    """A text of the trajectory, cleaned once and cut at each level: `scale` and `floor`
    adjust the level's limit (a command line is always readable: 120 characters at
    least)."""

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


def parts(text: str) -> list[Any]:
    """A message as parts: plain text, and ["<tag>", text] for a long tagged block that
    starts a line (help text, an agent's reminders and context), which pages show folded.
    At most FOLD_TRIES blocks are looked for: a message is the agent's to write, and each
    look may read to its end."""
    out: list[Any] = []
    at = tries = 0
    for m in OPEN_TAG.finditer(text):
        if m.start() < at:
            continue
        tries += 1
        if tries > FOLD_TRIES:
            break
        close = f"</{m.group(1)}>"
        end = text.find(close, m.end())
        if end < 0 or end + len(close) - m.start() < FOLD_MIN:
            continue
        end += len(close)
        if m.start() > at:
            out.append(text[at:m.start()])
        out.append([f"<{m.group(1)}>", text[m.start():end]])
        at = end
    if at < len(text):
        out.append(text[at:])
    return [p.strip() if isinstance(p, str) else p for p in out
            if not isinstance(p, str) or p.strip()]


def _message(m: turns.Message) -> dict[str, Any]:
    role = data.clean(m.role)
    if role in ("system", "developer"):  # instructions, as long as a system prompt: folded
        return {"role": role, "parts": [_fold(role, m.text)]}
    return {"role": role, "parts": [_fold(*p) if isinstance(p, list) else _Text(p)
                                    for p in parts(m.text)]}


def _fold(label: str, text: str) -> list[Any]:
    """A text the page shows folded: [label, text (cut at each level), its whole length]."""
    body = _Text(text)
    return [label, body, len(body.text)]


def _command(c: turns.Command) -> dict[str, Any]:
    doc: dict[str, Any] = {"k": "cmd", "cmd": _Text(c.text, floor=120), "exit": c.exit_code,
                           "dur": c.duration_s if c.timed else None}
    if c.aside is not None:
        doc["aside"] = data.clean(c.aside)
        return doc
    doc.update(timed_out=c.timed_out, capped=c.truncated, source=data.clean(c.source),
               stdout=_Text(c.stdout), stderr=_Text(c.stderr))
    if c.processes:
        doc["procs"] = [_Text(p, floor=60) for p in c.processes]
    return doc


def _observed(c: turns.Command) -> bool:
    """Whether proctor's record of a command says how it ended (else the call's result, as
    the agent saw it, says it instead)."""
    return c.aside is None and (c.exit_code is not None or c.timed_out or bool(c.stdout)
                                or bool(c.stderr))


def _aside(commands: list[turns.Command]) -> list[list[Any]]:
    return [[_Text(c.text, 0.02, floor=100), data.clean(c.aside)] for c in commands]


def _turn(t: turns.Turn) -> dict[str, Any]:
    doc: dict[str, Any] = {"k": "turn", "n": t.number, "model": data.clean(t.model),
                           "in": t.tokens_in, "out": t.tokens_out, "lat": t.latency_s}
    if t.attempt and t.attempt > 1:
        doc["attempt"] = t.attempt
    if t.side:
        doc["side"] = data.clean(t.side)
    if t.system:
        doc["sys"] = _fold("system prompt" + (" (changed)" if t.system_changed else "")
                           + (", with the help text" if "<help>" in t.system else ""), t.system)
    if t.messages:
        doc["msgs"] = [_message(m) for m in t.messages]
    if t.text:
        doc["text"] = _Text(t.text)
    doc["calls"] = [{"line": _Text(c.line, floor=120),
                     "cmds": [_command(x) for x in c.commands],
                     **({"result": _Text(c.result, 0.5)} if c.result is not None
                        and not any(_observed(x) for x in c.commands) else {})}
                    for c in t.calls]
    if t.aside:
        doc["aside"] = _aside(t.aside)
    if t.error:
        doc["error"] = _Text(t.error, floor=200)
    return doc


def _item(item: turns.Item) -> dict[str, Any]:
    if isinstance(item, turns.Turn):
        return _turn(item)
    if isinstance(item, turns.Command):
        if item.source == "launcher":
            doc = _command(item)
            doc["k"] = "agent"  # the agent program: its exit status, its answer, its stderr
            doc["stderr_n"] = len(data.clean(item.stderr))
            return doc
        return _command(item)
    if isinstance(item, turns.Aside):
        lines = _aside(item.commands) if item.commands else [
            [_Text(line, floor=100), ""] for line in item.lines]
        return {"k": "aside", "label": item.label, "lines": lines}
    if isinstance(item, turns.Output):
        return {"k": "output", "label": item.label, "text": _Text(item.text),
                "n": len(data.clean(item.text))}
    return {"k": "event", "type": data.clean(item.kind), "text": _Text(item.text),
            **({"exit": item.exit_code} if item.exit_code is not None else {})}


def _audit(events: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(type, one line) per event, cut at 400 characters, at most AUDIT_PER_TYPE of each."""
    out: list[tuple[str, str]] = []
    seen: dict[str, int] = {}
    for ev in events:
        kind = data.clean(ev.get("type"))
        seen[kind] = seen.get(kind, 0) + 1
        d = x if isinstance(x := ev.get("details"), dict) else {}
        out.append((kind, "" if seen[kind] > AUDIT_PER_TYPE else
                    text_cut(data.clean(audit_text(kind, d)), 400, keep="both")))
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


def audit_text(kind: str, d: dict[str, Any]) -> str:
    """An audit event on one line (report.html, `proctor show`)."""
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


def _cap_aside(doc: dict[str, Any], per_kind: int) -> dict[str, Any]:
    """At most `per_kind` set-aside lines in one place; the rest are counted."""
    lines = doc.get("aside" if doc.get("k") == "turn" else "lines")
    if not isinstance(lines, list) or len(lines) <= per_kind:
        return doc
    key = "aside" if doc.get("k") == "turn" else "lines"
    return {**doc, key: lines[:per_kind], f"{key}_more": len(lines) - per_kind}


class Trajectory:
    """One trial's timeline, cleaned once; `at(level)` is the document the page draws."""

    def __init__(self, trace: list[dict[str, Any]], audit: list[dict[str, Any]]):
        self.items = [_item(i) for i in turns.build(trace).items]
        self.audit = _audit(audit)

    def at(self, limit: int = 8000, max_items: int | None = None,
           per_kind: int = AUDIT_PER_TYPE) -> dict[str, Any]:
        items = [_cap_aside(i, per_kind) for i in self.items]
        doc: dict[str, Any] = {}
        if max_items is not None and len(items) > max_items:
            # The start (what it tried first) and the end (where it went wrong) matter most.
            head = max_items // 2
            items = items[:head] + items[len(items) - (max_items - head):]
            doc["items_cut"] = [head, len(self.items) - max_items]
        doc["items"] = _at(items, limit)
        doc["audit"], doc["audit_more"] = _audit_at(self.audit, per_kind)
        doc["limit"] = limit
        return doc


def _json(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def encode(doc: Any) -> str:
    """A document as base64(gzip(JSON))."""
    return base64.b64encode(_gzip(_json(doc).encode())).decode("ascii")


def _gzip(raw: bytes) -> bytes:
    return gzip.compress(raw, compresslevel=6, mtime=0)


def decode(blob: str) -> Any:
    """The inverse of `encode` (tests and tools read embedded trajectories with it)."""
    return json.loads(gzip.decompress(base64.b64decode(blob)))


# ---- digests: each trial's levels, prepared once ------------------------------------------


def _sources(trial_dir: Path | str) -> list[int]:
    """What a digest was made from: the trace's size and mtime (the audit log's when there
    is no trace; a trial writes both at once, so one stat tells either changed)."""
    for name in ("trace.jsonl", "audit.jsonl"):
        try:
            st = os.stat(os.path.join(trial_dir, name))
        except OSError:
            continue
        if st.st_size:
            return [st.st_size, st.st_mtime_ns]
    return []


def digest(trial_dir: Path) -> list[tuple[int, bytes]]:
    """Each level's gzipped document for the trial in `trial_dir`, written to its
    digest.bin (best effort: a read-only run directory is digested again next time).
    Nothing is written for a trial that recorded nothing."""
    trial_dir = Path(trial_dir)
    of = _sources(trial_dir)
    if not of:
        return []
    traj = Trajectory(data.read_jsonl(trial_dir / "trace.jsonl"),
                      data.read_jsonl(trial_dir / "audit.jsonl"))
    levels: list[tuple[int, bytes]] = []
    for level in LEVELS:
        levels.append((level[0], _gzip(_json(traj.at(*level)).encode())))
        if len(levels[-1][1]) <= SMALL:  # a share is rarely smaller: enough levels
            break
    # Stored smallest first: a large run's report, which picks small ones, reads the head
    # and its level in one read.
    table, offset = [], 0
    for limit, blob in reversed(levels):
        table.append([limit, offset, len(blob)])
        offset += len(blob)
    table.reverse()
    head = HEAD.pack(MAGIC, DIGEST_VERSION, *of, len(table)) + b"".join(
        LEVEL.pack(*row) for row in table)
    tmp = trial_dir / f".{DIGEST}.{os.getpid()}.tmp"
    try:
        with tmp.open("wb") as f:
            f.write(head)
            for _, blob in reversed(levels):
                f.write(blob)
        os.replace(tmp, trial_dir / DIGEST)
    except OSError:
        tmp.unlink(missing_ok=True)
    return levels


READ = 4096  # bytes read at once from a digest: its head and, often, the level picked


class _Digest:
    """A trial's digest.bin, opened for picking one level (os-level reads: a large report
    opens ten thousand of these)."""

    def __init__(self, trial_dir: str, of: list[int]):
        self.path = f"{trial_dir}/{DIGEST}"
        self.levels: list[tuple[int, int, int]] = []
        self.first = b""  # the first READ bytes, head included
        self.start = 0
        self.blobs: list[tuple[int, bytes]] | None = None  # when digested just now
        self.fd = -1  # open until `close`: the level picked may lie past the first read
        try:
            self.fd = os.open(self.path, os.O_RDONLY)
            self.first = os.read(self.fd, READ)
            magic, version, size, mtime, n = HEAD.unpack_from(self.first)
            if (magic == MAGIC and version == DIGEST_VERSION and [size, mtime] == of
                    and 0 < n <= len(LEVELS)):
                self.start = HEAD.size + n * LEVEL.size
                flat = iter(_levels(n).unpack_from(self.first, HEAD.size))
                self.levels = list(zip(flat, flat, flat, strict=True))
        except (OSError, struct.error):
            pass
        if not self.levels:
            self.close()  # digested again: a new digest.bin replaces this one
            self.blobs = digest(Path(trial_dir))
            self.levels = [(limit, 0, len(blob)) for limit, blob in self.blobs]

    def blob(self, i: int) -> bytes:
        if self.blobs is not None:
            return self.blobs[i][1]
        _, offset, length = self.levels[i]
        length = min(length, SHARE_MAX)  # a digest from elsewhere cannot make it read more
        at = self.start + offset
        if at + length <= len(self.first):
            return self.first[at:at + length]
        if self.fd < 0:
            self.fd = os.open(self.path, os.O_RDONLY)
        return os.pread(self.fd, length, at)

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


@functools.cache
def _levels(n: int) -> struct.Struct:
    """A digest head's `n` LEVEL entries, read at once."""
    return struct.Struct("<" + "III" * n)


# ---- the page's share of each trial -------------------------------------------------------


@dataclass
class Recorded:
    """A trial directory with a trace or an audit log, and what they were (`_sources`)."""

    dir: str
    of: list[int]


def recorded(trials: Sequence[Mapping[str, Any]], run_dir: Path | None) -> list[Recorded | None]:
    """Each trial's directory when it recorded a trace or audit events, else None (and None
    for all without a run directory: a report rendered from results.json alone)."""
    out: list[Recorded | None] = []
    base = os.path.join(run_dir, "trials") if run_dir is not None else None
    for t in trials:
        tid = str(t.get("id"))
        # An id is one path component: a results.json from elsewhere (a CI artifact opened
        # with `proctor view`) cannot point the page at files outside its run.
        if base is None or "/" in tid or tid in (".", "..", ""):
            out.append(None)
            continue
        d = f"{base}/{tid}"
        of = _sources(d)
        out.append(Recorded(d, of) if of else None)
    return out


def embedded(trials: Sequence[Mapping[str, Any]], dirs: list[Recorded | None], budget: int
             ) -> list[str | None]:
    """Each trial's document, base64 of gzip, within `budget` bytes in all (None where there
    is nothing to show). One pass: each trial gets what is left, shared by weight, and the
    largest of its levels that fits (the smallest when none does)."""
    weights = [WEIGHT.get(data.status_of(t), 1) if d else 0
               for t, d in zip(trials, dirs, strict=True)]
    left, weight_left = budget, sum(weights)
    out: list[str | None] = []
    for d, w in zip(dirs, weights, strict=True):
        if d is None:
            out.append(None)
            continue
        share = min(SHARE_MAX, max(0, left) * w / max(1, weight_left))
        dg = _Digest(d.dir, d.of)
        try:
            if not dg.levels:
                out.append(None)
                continue
            pick = len(dg.levels) - 1  # from the largest: the first that fits, else the smallest
            for n, (_, _, length) in enumerate(dg.levels):
                if 4 * ((length + 2) // 3) <= share:  # its size in base64
                    pick = n
                    break
            blob = base64.b64encode(dg.blob(pick)).decode("ascii")
        finally:
            dg.close()
        out.append(blob)
        left -= len(blob)
        weight_left -= w
    return out
