"""Small helpers shared by the deterministic checks: quoting observed values in messages,
reading files with a size bound, describing commands and their exit status."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from proctor.checks.base import CheckContext, cut
from proctor.model import CheckOutcome, CommandRecord

NO_COMMAND = "the agent ran no command"

# file_contains / file_content never load more than this much of a file (50 MiB); the
# clauses are checked against that prefix and the message says so.
MAX_FILE_BYTES = 50 * 1024 * 1024
# Files up to this size are read on the event loop; bigger ones in a thread.
_INLINE_READ_BYTES = 256 * 1024

# How many entries a "file not found" hint lists from the nearest existing directory.
_HINT_ENTRIES = 20


def no_command() -> CheckOutcome:
    return CheckOutcome(passed=False, message=NO_COMMAND)


def tail(text: str, limit: int = 2000) -> str:
    """The last `limit` characters (errors and logs say what matters at the end)."""
    if len(text) <= limit:
        return text
    return f"[{len(text) - limit} earlier characters] ..." + text[-limit:]


def block(label: str, text: str, *, from_end: bool = False) -> str:
    """`label:\\n<text cut at 2,000 characters>`, or `label: (empty)`."""
    if not text.strip():
        return f"{label}: (empty)"
    shown = tail(text) if from_end else cut(text)
    return f"{label}:\n" + shown.removesuffix("\n")


def command_ref(command: str) -> str:
    """A command quoted for a message: `cmd`, cut at 2,000 characters."""
    return f"`{cut(command)}`"


def exit_status(rec: CommandRecord) -> str:
    if rec.timed_out:
        return "timed out (no exit code)"
    if rec.exit_code is None:
        return "did not finish (no exit code)"
    return f"exited with {rec.exit_code}"


def command_list(commands: Sequence[CommandRecord]) -> str:
    """`git init, git add ., git status`, cut at 2,000 characters."""
    return cut(", ".join(c.command for c in commands))


def render_text(ctx: CheckContext, text: str) -> str:
    """Fill {{workdir}}, {{ params.X }} and {{ secrets.X }} for this trial. The runner renders
    check configs already; this makes a check correct on its own and is a no-op then."""
    # Imported here: proctor.spec imports the check registry, so keep the import graph acyclic.
    from proctor.spec.templating import render

    return render(text, params=ctx.trial.params, secrets=ctx.secrets, workdir=str(ctx.workdir))


@dataclass
class FileText:
    text: str  # decoded as UTF-8 with errors="replace"
    size: int  # bytes on disk
    truncated: bool  # only the first MAX_FILE_BYTES were read

    limit: int = MAX_FILE_BYTES

    def describe(self) -> str:
        note = f", only the first {self.limit} bytes were read" if self.truncated else ""
        return f"{self.size} bytes{note}"


def _read(path: Path, limit: int) -> FileText:
    size = path.stat().st_size
    with path.open("rb") as f:
        data = f.read(limit + 1)
    truncated = len(data) > limit
    return FileText(data[:limit].decode("utf-8", errors="replace"), max(size, len(data)), truncated,
                    limit)


async def read_text(path: Path, limit: int | None = None) -> FileText:
    """Read (at most `limit`, default MAX_FILE_BYTES, bytes of) a file off the event loop."""
    return await asyncio.to_thread(_read, path, MAX_FILE_BYTES if limit is None else limit)


def kind_of(path: Path) -> str:
    if path.is_dir():
        return "directory"
    if path.is_file():
        return "file"
    return "special file"


def not_found(spec_path: str, resolved: Path) -> str:
    """`file not found: P`, plus what the nearest existing directory holds."""
    msg = f"file not found: {spec_path}"
    parent = resolved.parent
    while not parent.is_dir() and parent != parent.parent:
        parent = parent.parent
    try:
        names = sorted(os.listdir(parent))
    except OSError:
        return msg
    if str(resolved) != spec_path:
        msg += f" (looked for {resolved})"
    shown = [n + ("/" if (parent / n).is_dir() else "") for n in names[:_HINT_ENTRIES]]
    more = f", ... {len(names) - _HINT_ENTRIES} more" if len(names) > _HINT_ENTRIES else ""
    listing = cut(", ".join(shown) + more) if names else "nothing"
    return f"{msg}; {parent} holds: {listing}"


async def load_file(ctx: CheckContext, spec_path: str) -> FileText | CheckOutcome:
    """The text of a regular file for file_contains / file_content, or the failing outcome:
    a missing file fails with `file not found: P` (it never errors)."""
    path = ctx.resolve(render_text(ctx, spec_path))
    if not path.exists():
        return CheckOutcome(passed=False, message=not_found(spec_path, path))
    if not path.is_file():
        return CheckOutcome(passed=False, message=f"{spec_path} is a {kind_of(path)}, not a file")
    try:
        if path.stat().st_size <= _INLINE_READ_BYTES:
            return _read(path, MAX_FILE_BYTES)  # a thread hop would cost more than the read
        return await read_text(path)
    except OSError as e:
        return CheckOutcome(passed=False, message=f"could not read {spec_path}: {e}")


def ran_summary(commands: Sequence[CommandRecord]) -> str:
    """`ran 3 commands: git init, git add ., git status` (cut at 2,000 characters)."""
    if not commands:
        return NO_COMMAND
    n = len(commands)
    return f"ran {n} command{'s' if n != 1 else ''}: {command_list(commands)}"


def numbered(hits: Sequence[tuple[int, CommandRecord]]) -> str:
    """`#2 git commit -m x, #5 git commit --amend`, cut at 2,000 characters."""
    return cut(", ".join(f"#{i} {c.command}" for i, c in hits))


def outputs(stdout: str, stderr: str) -> str:
    """Both streams of a check's own command, each cut at 2,000 characters."""
    return block("stdout", stdout) + "\n" + block("stderr", stderr, from_end=True)
