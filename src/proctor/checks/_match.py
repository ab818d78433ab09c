"""Command patterns shared by `ran`, `not_ran`, `run_count`, `ran_in_order` and `tool_used`
(and `validate`'s warning).

A pattern is a regular expression searched (`re.search`) in each agent command's string
and in the argv (joined with spaces) of each program it started (`CommandRecord.texts()`,
SPEC §2); an agent command matches once however many of those match. A pattern that is not
a valid regex is matched as a literal substring instead, as in cli-bench; `regex_error()`
tells `validate` to warn about it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import lru_cache

from proctor.fieldwise import FrozenFieldwise
from proctor.model import CommandRecord


@dataclass(frozen=True, eq=False, repr=False)
class CommandPattern(FrozenFieldwise):
    """A command pattern of a check, compiled (or why it could not be)."""
    source: str
    regex: re.Pattern[str] | None  # None when `source` is not a valid regex
    error: str | None = None  # why it is not a valid regex

    @property
    def literal(self) -> bool:
        return self.regex is None

    def search(self, text: str) -> bool:
        if self.regex is None:
            return self.source in text
        return self.regex.search(text) is not None

    def fullmatch(self, text: str) -> bool:
        """The whole of `text` matches (a literal pattern: equals it)."""
        if self.regex is None:
            return self.source == text
        return self.regex.fullmatch(text) is not None

    def describe(self, *, whole: bool = False) -> str:
        """`'git commit.*-m'`, plus a note when the pattern is matched literally (`whole`:
        as `fullmatch` does, the whole text)."""
        if self.literal:
            how = "the whole text, literally" if whole else "a literal substring"
            return f"'{self.source}' (not a valid regex: {self.error}; matched as {how})"
        return f"'{self.source}'"


@lru_cache(maxsize=256)
def compile_pattern(pattern: str) -> CommandPattern:
    """The compiled regex, or the literal-substring fallback when it does not compile."""
    try:
        return CommandPattern(pattern, re.compile(pattern))
    except re.error as e:
        return CommandPattern(pattern, None, str(e))


def regex_error(pattern: str) -> str | None:
    """Why `pattern` is not a valid regex (it will be matched literally), or None."""
    return compile_pattern(pattern).error


def first_match(pattern: CommandPattern, command: CommandRecord) -> str | None:
    """What of `command` the pattern matches: its string, else the first of its programs'
    argv that does (joined with spaces); None when nothing does."""
    return next((t for t in command.texts() if pattern.search(t)), None)


def matching(pattern: CommandPattern, commands: Iterable[CommandRecord]) -> list[tuple[int, CommandRecord]]:
    """(1-based position, record) of every command that matches, in order: what
    `first_match` finds, asked of thousands of commands per check, so the search is bound
    once and a command's programs are looked at only when its string does not match."""
    search: Callable[[str], object] = (pattern.search if pattern.regex is None
                                       else pattern.regex.search)
    return [(i, c) for i, c in enumerate(commands, 1)
            if search(c.command) or (c.processes and any(map(search, c.texts()[1:])))]
