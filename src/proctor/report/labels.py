"""Short forms of what reports show in little room: names cut to a width yet kept distinct
(`short_labels`), and a long message on one line with what failed and why (`gist`)."""

from __future__ import annotations

import os
import re
from typing import Any

from proctor.report.data import clean


def short_labels(labels: list[str], n: int, *, keep_tail: bool = False) -> dict[str, str]:
    """Labels of at most `n` characters that stay distinct. The middle goes first
    (`anthropic/cl…sonnet-4-5-20250929` keeps the provider and the version); when two would
    read the same, the cut moves until they differ (`mock/m…careful.yaml`,
    `mock/m…sloppy.yaml`), and at worst each shows the part where it differs (`…-X-…`).
    `keep_tail`: a task label's ` [help mode, params]` stays whole when it can
    (`git-bra… [injected]`)."""
    uniq = list(dict.fromkeys(labels))
    if all(len(label) <= n for label in uniq):
        return {label: label for label in uniq}
    if n < 3:
        return {label: label for label in uniq}
    if keep_tail:
        out = {label: _cut_before_tail(label, n) for label in uniq}
        if len(set(out.values())) == len(out):
            return out
    balanced = (n - 1) - (n - 1) // 2
    # What a label shares with a similar one (`mock/models/…`, `….yaml`) does not tell it
    # apart: of the cuts that keep the labels distinct, the one showing most of each label's
    # own part wins, then the most balanced.
    long = [label for label in uniq if len(label) > n]
    own = {label: _own_part(label, uniq) for label in long}

    def telling(head: int) -> int:
        tail = n - 1 - head
        total = 0
        for label in long:
            lo, hi = own[label]
            total += max(0, min(head, hi) - lo) + max(0, hi - max(len(label) - tail, lo))
        return total

    for head in sorted(range(n), key=lambda h: (-telling(h), abs(h - balanced), -h)):
        out = {label: _cut_middle(label, n, head) for label in uniq}
        if len(set(out.values())) == len(out):
            return out
    out = {label: _window(label, uniq, n) for label in uniq}
    return out if len(set(out.values())) == len(out) else {label: label for label in uniq}


def _own_part(label: str, labels: list[str]) -> tuple[int, int]:
    """Where `label` differs from the labels most like it: [start, end)."""
    others = [o for o in labels if o != label]
    start = max((len(os.path.commonprefix([label, o])) for o in others), default=0)
    end = max((len(os.path.commonprefix([label[::-1], o[::-1]])) for o in others), default=0)
    return (start, max(start, len(label) - end))


def _cut_before_tail(label: str, n: int) -> str:
    """`git-branch [injected]` in `n` characters: the task cut, its bracket whole."""
    at = label.rfind(" [")
    if len(label) <= n or at <= 0 or not label.endswith("]") or n - (len(label) - at) < 6:
        return _cut_middle(label, n, (n - 1) - (n - 1) // 2)
    tail = label[at:]
    return label[: n - len(tail) - 1] + "…" + tail


def _cut_middle(label: str, n: int, head: int) -> str:
    if len(label) <= n:
        return label
    return label[:head] + "…" + label[len(label) - (n - 1 - head):]


def _window(label: str, labels: list[str], n: int) -> str:
    """The part of `label` around where it first differs from the others, `…` either side."""
    if len(label) <= n:
        return label
    common = max((len(_common_prefix(label, o)) for o in labels if o != label), default=0)
    start = max(0, min(common - (n - 2) // 2, len(label) - (n - 1)))
    end = start + n - (1 if start else 0)
    if end < len(label):
        end -= 1
        return ("…" if start else "") + label[start:end] + "…"
    return ("…" if start else "") + label[start:]


def _common_prefix(a: str, b: str) -> str:
    i = 0
    while i < min(len(a), len(b)) and a[i] == b[i]:
        i += 1
    return a[:i]


# Lines that only draw (`=====`, `-----`, `─────`) say nothing in a one-line summary.
_RULE_LINE = re.compile(r"^([=\-_~*#─━═+])\1{3,}$")


def gist(text: Any, limit: int = 200, end: float = 0.5) -> str:
    """A message on one line within `limit` characters, for a table cell or a JUnit
    attribute whose reader has the whole message elsewhere: its first line (what failed)
    and as many of its last lines as fit (where tests, compilers and tracebacks say why),
    ` … ` where lines were left out. Rules and empty lines go first. `end`: the share of
    the room the end may take (a one-line message keeps that much of its end)."""
    lines = [" ".join(line.split()) for line in clean(text).split("\n")]
    lines = [line for line in lines if line and not _RULE_LINE.match(line)]
    whole = " ".join(lines)
    if len(whole) <= limit:
        return whole
    if len(lines) == 1:  # one long line: both its ends
        keep = limit - 3
        back = int(keep * end)
        return whole[: keep - back] + " … " + whole[len(whole) - back:]
    # The first line leaves room for the last one (up to `end` of the limit).
    cap = limit - 3 - min(len(lines[-1]), int(limit * end))
    first = lines[0][:cap].rstrip()  # cut or not, ` … ` follows
    room = limit - len(first) - 3
    tail: list[str] = []
    for line in reversed(lines[1:]):
        used = sum(len(t) + 1 for t in tail)
        if len(line) + used <= room:
            tail.insert(0, line)
            continue
        if not tail:
            tail.insert(0, "…" + line[len(line) - (room - 1):])
        break
    return first + " … " + " ".join(tail)


def note(text: Any, limit: int = 200) -> str:
    """A trial's note (why it failed) in `limit` characters: its start — the cause: `agent
    error: …: HTTP 500` — is kept first; the middle goes, then some of the end."""
    return gist(text, limit, end=0.25)
