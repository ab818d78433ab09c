"""The one way proctor shortens text it shows: say what was left out, never silently."""

from __future__ import annotations

import re
from typing import Literal

# Every note `cut` and the output capture (proctor.proc) leave where text was dropped: the
# redactor looks at both sides of each for a secret cut in part.
CUT_MARKER = re.compile(
    r"\.\.\. \[\d+ more characters\]"
    r"|\[\d+ earlier characters\] \.\.\."
    r"|\n?\[\.\.\. \d+ of \d+ characters[^\]\n]* cut \.\.\.\]\n?"
    r"|\n?\[proctor: \d+ more bytes not kept\]")


def cut(text: str, limit: int = 2000, *, keep: Literal["head", "tail", "both"] = "head",
        what: str = "") -> str:
    """`text` in at most `limit` characters (plus the note): the start (`head`), the end
    (`tail`: errors and logs say what matters last) or both ends (`both`)."""
    if len(text) <= limit:
        return text
    gone = len(text) - limit
    if keep == "tail":
        return f"[{gone} earlier characters] ..." + text[-limit:]
    if keep == "both":
        head = limit // 2
        of = f" of {what}" if what else ""
        return (f"{text[:head]}\n[... {gone} of {len(text)} characters{of} cut ...]\n"
                f"{text[len(text) - (limit - head):]}")
    return text[:limit] + f"... [{gone} more characters]"


def first_line(text: str) -> str:
    """The first non-empty line of `text`, stripped (what a message says first)."""
    return next((line.strip() for line in text.splitlines() if line.strip()), "")


_SURROGATE = re.compile("[\udc80-\udcff]")


def printable(text: str) -> str:
    """`text` with the bytes of a name that is not UTF-8 (which Python reads as lone
    surrogates, `surrogateescape`) written as `\\xNN`, the way `ls -b` shows them: every byte
    stays visible, and every report, terminal and XML file can hold the result."""
    if text.isascii() or not _SURROGATE.search(text):
        return text
    return _SURROGATE.sub(lambda m: f"\\x{ord(m.group(0)) - 0xDC00:02x}", text)


def agent_of(label: str | None, model: str | None) -> str:
    """The agent type of a `models` row (SPEC §5 `agent`: the model for `llm`,
    `claude-code:MODEL` for an external agent, else `oracle`, `nop`, `command:PROGRAM`)."""
    label = label or ""
    if model and label in ("", model):
        return "llm"
    if model and label.endswith(":" + model):
        return label[: -len(model) - 1]
    return label or "?"


def agent_model(agent: str | None, model: str | None) -> str:
    """What every report calls an agent under test: agent and model together
    (`claude-code · mock/solver`, `llm · openai/gpt-4.1`), or the agent alone when it has
    no model (`oracle`, `command:my-agent`)."""
    if not model:
        return agent or "?"
    return f"{agent or 'llm'} · {model}"


def row_label(row: object) -> str:
    """`agent_model` of a `models` or `tasks` row, or of a trial (a mapping with `agent`
    and `model`; a trial's `agent` is its type, a row's the SPEC §5 label)."""
    get = getattr(row, "get", None)
    if get is None:
        return "?"
    model = get("model")
    agent = get("agent")
    if model and agent and (agent == model or str(agent).endswith(":" + model)):
        agent = agent_of(agent, model)  # a row's label
    return agent_model(agent, model)


# Terminal control sequences (colours, cursor moves, titles) in a tool's output: a report
# or a terminal that shows the text must get the words, not the codes.
_ESCAPES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")


def plain(text: str) -> str:
    """`text` without terminal escapes, and a line redrawn with `\r` (a progress bar) as
    its last state."""
    text = _ESCAPES.sub("", text)
    if "\r" in text:
        text = "\n".join(line.rstrip("\r").rsplit("\r", 1)[-1] for line in text.split("\n"))
    return text
