"""The model side of `llm_as_judge`: what the judge reads, what it is asked, how its answer
is read. The check module (proctor.checks.llm_as_judge) turns the verdict into an outcome.

The judge must answer a JSON object {score, passed, reason}; code fences and prose around
the object are tolerated; one malformed answer gets one corrective retry; scores are clamped
to [0, 1]; `passed` from the judge is kept for the record, proctor decides from the score.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from proctor.errors import UsageError
from proctor.providers import ProviderError, get_provider, resolve_model
from proctor.sandbox import files
from proctor.text import printable

if TYPE_CHECKING:
    from proctor.checks.base import CheckContext
    from proctor.config import ProctorConfig
    from proctor.record.recorder import Recorder

SYSTEM = (
    "You are a strict, fair evaluator of work done by an AI agent. Judge only against the "
    "criteria you are given. Answer with only a JSON object, no other text: "
    '{"score": <number from 0 to 1>, "passed": <true|false>, "reason": "<one or two sentences>"}'
)
RETRY = ("Your answer was not a JSON object with a numeric \"score\". Answer again with only "
         'the JSON object {"score": <0..1>, "passed": <true|false>, "reason": "<text>"}.')

WORKSPACE_LIMIT = 100_000  # characters of workspace text shown to the judge, in all
FILE_LIMIT = 20_000  # characters per file
WALK_TIMEOUT_S = 120.0  # finding the workspace's files
_SKIP_DIRS = {".git", "node_modules", "__pycache__", ".venv", ".mypy_cache", ".pytest_cache"}
_FIELD = re.compile(r"^(request_count|last_request(?:\.(body|headers))?|requests\[(\d+)\](?:\.(body|headers))?)$")


class JudgeError(Exception):
    """The check could not be judged (bad input_from, provider down, malformed answers)."""


@dataclass
class Verdict:
    """An LLM judge's answer: score, reason, and the tokens it took."""
    score: float
    reason: str
    judge_passed: bool | None
    tokens: dict[str, int] = field(default_factory=lambda: {"input": 0, "output": 0})
    attempts: int = 1  # answers asked for (2 after a malformed first answer)


def parse_verdict(text: str) -> tuple[float, str, bool | None] | None:
    """(score clamped to [0, 1], reason, judge's passed) from the judge's answer, or None."""
    s = text.strip()
    fence = re.search(r"```(?:json|JSON)?\s*(.*?)```", s, re.S)
    if fence:
        s = fence.group(1).strip()
    obj: Any = None
    try:
        obj = json.loads(s)
    except ValueError:
        start, end = s.find("{"), s.rfind("}")
        if 0 <= start < end:
            try:
                obj = json.loads(s[start:end + 1])
            except ValueError:
                return None
    if not isinstance(obj, dict):
        return None
    raw = obj.get("score")
    if isinstance(raw, bool) or raw is None:
        return None
    try:
        score = float(raw)
    except (TypeError, ValueError):
        return None
    if math.isnan(score):
        return None
    passed = obj.get("passed")
    return (min(1.0, max(0.0, score)), str(obj.get("reason") or ""),
            passed if isinstance(passed, bool) else None)


def build_prompt(criteria: str, rubric: Any, input_from: str, text: str) -> str:
    parts = [f"## Criteria\n{criteria.strip()}"]
    if isinstance(rubric, dict):
        parts.append("## Rubric\n" + "\n".join(f"- {k}: {v}" for k, v in rubric.items()))
    elif rubric:
        parts.append(f"## Rubric\n{str(rubric).strip()}")
    parts.append(f"## What to judge ({input_from})\n<input>\n{text}\n</input>")
    parts.append("Score how well the input meets the criteria: 1 = fully, 0 = not at all. "
                 "Answer with only the JSON object.")
    return "\n\n".join(parts)


async def judge(model: str, prompt: str, *, temperature: float, config: ProctorConfig,
                recorder: Recorder | None, base_dir: str | None = None) -> Verdict:
    try:
        model = resolve_model(model, config)
        provider = get_provider(model, config, base_dir=base_dir)
    except UsageError as e:
        raise JudgeError(str(e)) from None
    messages: list[dict[str, Any]] = [{"role": "user", "content": prompt}]
    tokens = {"input": 0, "output": 0}
    try:
        for attempt in (1, 2):
            try:
                resp = await provider.complete(SYSTEM, messages, [], temperature, 1024)
            except ProviderError as e:
                raise JudgeError(f"judge {e}") from None
            tokens["input"] += resp.usage.input
            tokens["output"] += resp.usage.output
            if recorder is not None:
                recorder.trace({
                    "type": "model_call", "purpose": "judge", "model": model,
                    "request": {"system": SYSTEM, "messages": messages},
                    "response": {"text": resp.text, "tool_calls": []},
                    "usage": {"input": resp.usage.input, "output": resp.usage.output},
                    "latency_s": round(resp.latency_s, 6), "attempt": resp.attempt,
                    "retries": resp.retries})
            parsed = parse_verdict(resp.text)
            if parsed is not None:
                score, reason, judge_passed = parsed
                return Verdict(score, reason, judge_passed, tokens, attempt)
            messages = [*messages, {"role": "assistant", "content": resp.text},
                        {"role": "user", "content": RETRY}]
        answer = resp.text if len(resp.text) <= 300 else resp.text[:300] + "..."
        raise JudgeError(f"the judge ({model}) did not answer a JSON verdict, twice; "
                         f"last answer: {answer!r}")
    finally:
        await provider.aclose()


async def judge_input(input_from: str, ctx: CheckContext) -> str:
    """The text the judge reads: agent_output / stdout, workspace, or SERVICE.FIELD."""
    if input_from in ("agent_output", "stdout"):
        return ctx.agent_output
    if input_from == "workspace":
        root = await ctx.sandbox.export()
        return await asyncio.to_thread(workspace_text, root)
    service, _, fld = input_from.partition(".")
    if not fld:
        raise JudgeError(f"input_from {input_from!r}: use agent_output, stdout, workspace or "
                         "SERVICE.FIELD")
    handle = ctx.services.get(service)
    if handle is None:
        raise JudgeError(f"input_from {input_from!r}: no service named {service!r}")
    m = _FIELD.match(fld)
    if not m:
        raise JudgeError(f"input_from {input_from!r}: field must be request_count, "
                         "last_request[.body|.headers] or requests[N][.body|.headers]")
    reqs = await handle.requests()
    if m.group(1) == "request_count":
        return str(len(reqs))
    index = int(m.group(3)) if m.group(3) is not None else len(reqs) - 1
    part = m.group(2) or m.group(4)
    if not 0 <= index < len(reqs):
        return f"(no such request: the service recorded {len(reqs)} request(s))"
    value = reqs[index].get(part) if part else reqs[index]
    return value if isinstance(value, str) else json.dumps(value, indent=2, default=str)


def workspace_text(root: Path, deadline: float | None = None) -> str:
    """Text files under `root`, path-sorted, each cut to FILE_LIMIT, all to WORKSPACE_LIMIT.
    Symlinks are never followed (nothing outside the workspace is read), and of each file
    only the bytes that can be sent are read: a 2 GiB file costs 80 kB."""
    budget = files.Budget(deadline or time.monotonic() + WALK_TIMEOUT_S)
    found: list[str] = []
    try:
        files.walk(root, "", budget, lambda rel, e: found.append(rel) if e.kind == "file" else None,
                   prune=_SKIP_DIRS.__contains__, content=False)
    except (OSError, files.FilesLimit) as e:
        raise JudgeError(f"could not read the workspace: {e}") from None
    out: list[str] = []
    used = 0
    skipped = 0
    for rel in sorted(found):
        data = _head(root, rel, FILE_LIMIT * 4)
        if data is None or b"\0" in data[:8192]:
            continue  # gone, or binary
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as e:  # a character cut at the end is not a binary file
            if e.start < len(data) - 3:
                continue
            text = data[:e.start].decode("utf-8")
        if len(text) > FILE_LIMIT:
            text = text[:FILE_LIMIT] + f"\n[... cut at {FILE_LIMIT} characters]"
        entry = f"=== {printable(rel)} ===\n{text}"
        if used + len(entry) > WORKSPACE_LIMIT:
            skipped += 1
            continue
        out.append(entry)
        used += len(entry)
    if skipped:
        out.append(f"[... {skipped} more file(s) not shown: the workspace text is limited "
                   f"to {WORKSPACE_LIMIT} characters]")
    return "\n\n".join(out) if out else "(the workspace has no text files)"


def _head(root: Path, rel: str, limit: int) -> bytes | None:
    """At most `limit` bytes of a regular file of the workspace, opened without following a
    symlink anywhere on the way."""
    try:
        fd = files.open_in(root, rel)
    except OSError:
        return None
    if fd is None:
        return None
    try:
        return os.pread(fd, limit, 0)
    except OSError:
        return None
    finally:
        os.close(fd)
