"""Database seeds: where the SQL comes from, and which line a failing statement starts on."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from proctor.errors import SetupError


@dataclass(frozen=True)
class Seed:
    """SQL that seeds a database, and where it was written."""
    label: str  # what error messages call it: the file's path, or "the inline seed of ..."
    sql: str
    path: Path | None = None  # the file, when the seed is one

    def where(self, line: int) -> str:
        """`FILE:LINE` for a seed file; for inline SQL, the line within it and where it was
        written in the spec."""
        return f"{self.path}:{line}" if self.path else f"line {line} of {self.label}"

    @property
    def key(self) -> str:
        """Same SQL, same template."""
        return hashlib.sha256(self.sql.encode()).hexdigest()[:12]


SEED_KEYS = ("seed_file", "seed")  # where a service's config names its seed


def inline_sql(text: str) -> bool:
    """Whether a seed's text is SQL written inline rather than a file's path."""
    return "\n" in text or ";" in text


def seed_files(config: dict[str, Any]) -> dict[str, str]:
    """The keys of a service's config that name a seed file, with the path as written (what
    `--resume` fingerprints and a Ray run ships and relocates)."""
    return {k: v for k in SEED_KEYS if isinstance(v := config.get(k), str) and not inline_sql(v)}


def load_seed(service: str, config: dict[str, Any], base_dir: Path) -> Seed | None:
    """The seed of a database service, from `seed_file` (a path) or `seed_sql` (inline SQL,
    with `seed_origin` FILE:LINE:COL saying where the spec wrote it), as the spec loader
    gives them; or from `seed` (either: a value with a newline or a `;` is SQL, anything else
    a path). Relative paths resolve against the spec file's directory."""
    origin = config.get("seed_origin")
    inline = f"the inline seed of service {service!r}" + (f" ({origin})" if origin else "")
    if config.get("seed_sql"):
        return Seed(inline, str(config["seed_sql"]))
    raw = config.get("seed_file") or config.get("seed")
    if not raw:
        return None
    if isinstance(raw, dict):  # seed: {file: x} / {sql: y}
        if raw.get("sql"):
            return Seed(inline, str(raw["sql"]))
        raw = raw.get("file") or raw.get("path")
        if not raw:
            return None
    text = str(raw)
    if "seed_file" not in config and inline_sql(text):
        return Seed(inline, text)
    path = Path(text).expanduser()
    if not path.is_absolute():
        path = base_dir / path
    try:
        sql = path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        raise SetupError(f"service {service!r}: seed file not found: {path}") from None
    except OSError as e:
        raise SetupError(f"service {service!r}: cannot read seed file {path}: {e.strerror}") from e
    return Seed(str(path), sql, path)


@dataclass(frozen=True)
class Statement:
    """Where one statement of a seed starts and ends."""
    start_line: int  # 1-based line of the statement's first token
    end_line: int  # line of its terminating `;` (or of the last token)


_COPY_STDIN = re.compile(r"^\s*COPY\b.*\bFROM\s+STDIN\b", re.IGNORECASE | re.DOTALL)


def statements(sql: str) -> list[Statement]:
    """Split PostgreSQL (psql) SQL into statements, respecting quotes, dollar quotes,
    comments, backslash meta-commands and `COPY ... FROM stdin` data, to turn the line psql
    reports (a statement's last line) into the line it starts on. What skips a string, a
    body, a comment or COPY's data is a function of its own returning where that ends."""
    out: list[Statement] = []
    i, n, line = 0, len(sql), 1
    start: int | None = None  # line of the current statement's first token
    text_start = 0

    def finish(end_line: int, end: int) -> None:
        nonlocal start
        if start is not None:
            out.append(Statement(start, end_line))
            if _COPY_STDIN.match(sql[text_start:end]):
                skip_to(_copy_data_end(sql, i))
        start = None

    def skip_to(j: int) -> None:
        nonlocal i, line
        line += sql.count("\n", i, j)
        i = j

    while i < n:
        c = sql[i]
        if c == "\n":
            line += 1
            i += 1
            continue
        if c.isspace():
            i += 1
            continue
        if sql.startswith("--", i):
            nl = sql.find("\n", i)
            i = n if nl < 0 else nl
            continue
        if sql.startswith("/*", i):
            skip_to(_block_comment_end(sql, i))
            continue
        if start is None:
            start, text_start = line, i
            if c == "\\":  # a psql meta-command: ends at the end of the line
                nl = sql.find("\n", i)
                i = n if nl < 0 else nl
                finish(line, i)
                continue
        if c == ";":
            i += 1
            finish(line, i)
            continue
        if c in "'\"":
            skip_to(_quoted_end(sql, i))
            i += 1  # past the closing quote
            continue
        if c == "$" and (j := _dollar_quoted_end(sql, i)) is not None:
            skip_to(j)
            continue
        i += 1
    finish(line, n)  # a last statement without its `;`
    return out


def _block_comment_end(sql: str, i: int) -> int:
    """Past the `/* ... */` comment opening at `i`, nested ones within it (len(sql) if it
    never closes)."""
    depth, i, n = 1, i + 2, len(sql)
    while i < n and depth:
        if sql.startswith("*/", i):
            depth -= 1
            i += 2
        elif sql.startswith("/*", i):
            depth += 1
            i += 2
        else:
            i += 1
    return i


def _quoted_end(sql: str, i: int) -> int:
    """Where the string or quoted name opening at `i` closes (its closing quote; len(sql) if
    it never does): a doubled quote is one quote, and an E'...' string has backslash escapes."""
    c, n = sql[i], len(sql)
    escapes = c == "'" and i > 0 and sql[i - 1] in "eE"
    j = i + 1
    while j < n:
        if escapes and sql[j] == "\\":
            j += 2
            continue
        if sql[j] == c:
            if j + 1 < n and sql[j + 1] == c:
                j += 2
                continue
            break
        j += 1
    return j


def _dollar_quoted_end(sql: str, i: int) -> int | None:
    """Past the end of the dollar-quoted body (`$tag$ ... $tag$`) opening at `i` (len(sql) if it
    never closes); None when `$` opens none there (a parameter, `$1`)."""
    m = re.match(r"\$([A-Za-z_][A-Za-z0-9_]*)?\$", sql[i:i + 64])
    if not m:
        return None
    tag = m.group(0)
    close = sql.find(tag, i + len(tag))
    return len(sql) if close < 0 else close + len(tag)


def _copy_data_end(sql: str, i: int) -> int:
    """Past `COPY ... FROM stdin`'s data, which starts on the line after `i` (that of the
    statement's `;`) and ends with a line `\\.` (or at the end of the text)."""
    n = len(sql)
    nl = sql.find("\n", i)
    if nl < 0:
        return n
    i = nl + 1
    while i < n:
        nl = sql.find("\n", i)
        row = sql[i:nl if nl >= 0 else n]
        i = n if nl < 0 else nl + 1
        if row.rstrip("\r") == "\\.":
            return i
    return i


def statement_start(sql: str, reported_line: int) -> int:
    """The start line of the statement psql reported as failing at `reported_line` (psql
    reports the line where the statement ends). Ambiguous or unknown: the reported line."""
    hits = [s for s in statements(sql) if s.end_line == reported_line]
    return hits[0].start_line if len(hits) == 1 else reported_line
