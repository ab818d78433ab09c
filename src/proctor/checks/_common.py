"""Small helpers shared by the deterministic checks: quoting observed values in messages,
reading files with a size bound, describing commands and their exit status."""

from __future__ import annotations

import posixpath
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from proctor.checks.base import CheckContext, cut
from proctor.fieldwise import Fieldwise
from proctor.model import CheckOutcome, CommandRecord
from proctor.sandbox.base import Entry, UnreadableFile
from proctor.templating import render

NO_COMMAND = "the agent ran no command"

# file_contains / file_content never load more than this much of a file (50 MiB); the
# clauses are checked against that prefix and the message says so.
MAX_FILE_BYTES = 50 * 1024 * 1024
# How many entries a "file not found" hint lists from the nearest existing directory.
_HINT_ENTRIES = 20


def no_command() -> CheckOutcome:
    return CheckOutcome(passed=False, message=NO_COMMAND)


def expected_count(low: int, high: int | None) -> str:
    """How many a counting check wants, in words (run_count, tool_used)."""
    if high is None:
        return f"at least {low}"
    return f"exactly {low}" if low == high else f"{low} to {high}"


def tail(text: str, limit: int = 2000) -> str:
    """The last `limit` characters (errors and logs say what matters at the end)."""
    return cut(text, limit, keep="tail")


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
    """Fill {{workdir}}, {{ params.X }} and {{ secrets.X }} for this trial. The trial renders
    check configs already; this makes a check correct on its own and is a no-op then."""
    if "{{" not in text:  # nothing to fill: no workdir path made (render would return it)
        return text
    return render(text, params=ctx.trial.params, secrets=ctx.secrets, workdir=str(ctx.workdir))


@dataclass(eq=False, repr=False)
class FileText(Fieldwise):
    """A file of the sandbox read for a check: its text, size, and whether it was cut."""
    text: str  # decoded as UTF-8 with errors="replace"
    size: int  # bytes on disk
    truncated: bool  # only the first MAX_FILE_BYTES were read

    limit: int = MAX_FILE_BYTES

    def describe(self) -> str:
        note = f", only the first {self.limit} bytes were read" if self.truncated else ""
        return f"{self.size} bytes{note}"


def kind_of(entry: Entry) -> str:
    return {"dir": "directory", "file": "file"}.get(entry.kind, "special file")


def shown_path(ctx: CheckContext, path: str) -> str:
    """A sandbox path as messages show it: relative to the workspace when inside it."""
    rel = posixpath.relpath(path, ctx.sandbox.workdir)
    return path if rel.startswith("..") else rel


async def stat_or_none(ctx: CheckContext, path: str) -> Entry | None:
    try:
        return await ctx.sandbox.stat(path)
    except OSError:
        return None


def unseen(spec_path: str, e: OSError) -> str:
    """A path that cannot be told present or absent, with the agent's rights (a directory on
    the way it made unsearchable): never taken for absent."""
    return f"cannot tell whether {spec_path} exists: {e.strerror or e} (with the agent's rights)"


async def not_found(ctx: CheckContext, spec_path: str, path: str) -> str:
    """`file not found: P`, plus what the nearest existing directory holds."""
    msg = f"file not found: {spec_path}"
    parent = posixpath.dirname(path)
    while parent != "/" and ((entry := await stat_or_none(ctx, parent)) is None
                             or entry.kind != "dir"):
        parent = posixpath.dirname(parent)
    try:
        names = await ctx.sandbox.list_dir(parent)
    except OSError:
        return msg
    shown = names[:_HINT_ENTRIES]
    more = f", ... {len(names) - _HINT_ENTRIES} more" if len(names) > _HINT_ENTRIES else ""
    listing = cut(", ".join(shown) + more) if names else "nothing"
    where = shown_path(ctx, parent)
    where = "the workspace" if where == "." else where
    return f"{msg}; {where} holds: {listing}"


async def load_file(ctx: CheckContext, spec_path: str) -> FileText | CheckOutcome:
    """The text of a regular file for file_contains / file_content, or the failing outcome:
    a missing file fails with `file not found: P` (it never errors)."""
    path = ctx.resolve(render_text(ctx, spec_path))
    try:
        found = await ctx.sandbox.read_if_file(path, MAX_FILE_BYTES)
    except UnreadableFile as e:
        return CheckOutcome(passed=False, message=f"could not read {spec_path}: {e.strerror or e}")
    except OSError as e:
        return CheckOutcome(passed=False, message=unseen(spec_path, e))
    if found is None:
        return CheckOutcome(passed=False, message=await not_found(ctx, spec_path, path))
    entry, data = found
    if data is None:
        return CheckOutcome(passed=False, message=f"{spec_path} is a {kind_of(entry)}, not a file")
    truncated = len(data) > MAX_FILE_BYTES
    return FileText(data[:MAX_FILE_BYTES].decode("utf-8", errors="replace"),
                    max(entry.size, len(data)), truncated, MAX_FILE_BYTES)


def ran_summary(commands: Sequence[CommandRecord]) -> str:
    """`ran 3 commands: git init, git add ., git status` (cut at 2,000 characters)."""
    if not commands:
        return NO_COMMAND
    n = len(commands)
    return f"ran {n} command{'s' if n != 1 else ''}: {command_list(commands)}"


def numbered(hits: Sequence[tuple[int, CommandRecord]], pattern: Any = None) -> str:
    """`#2 git commit -m x, #5 sh cleanup.sh (its program: rm -rf build)`, cut at 2,000
    characters; with `pattern` (a _match.CommandPattern), the program that matched when
    the command string itself did not."""
    def one(i: int, c: CommandRecord) -> str:
        if pattern is None or pattern.search(c.command):
            return f"#{i} {c.command}"
        where = next((t for t in c.texts()[1:] if pattern.search(t)), "")
        return f"#{i} {c.command} (its program: {cut(where, 200)})"
    return cut(", ".join(one(i, c) for i, c in hits))


def outputs(stdout: str, stderr: str) -> str:
    """Both streams of a check's own command, each cut at 2,000 characters."""
    return block("stdout", stdout) + "\n" + block("stderr", stderr, from_end=True)
