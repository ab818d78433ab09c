"""Progress for slow work that is not a run's trials: an agent's first install, an export
over many trials. On a terminal, one live line drawn by rich (spinner, what, N of M, the
current step, elapsed); elsewhere (a CI log, a pipe) plain lines with no escape codes: one
when the work starts, one per step (at most about every tenth of many steps), one when it
ends. Always on stderr: stdout stays what a command outputs (paths, JSON).
"""

from __future__ import annotations

import sys
import time
from typing import IO, Any

LINE_EVERY_FRACTION = 0.1  # without a terminal, many steps: a line every tenth of them


class Activity:
    def __init__(self, what: str, total: int | None = None, *, unit: str = "steps",
                 quiet: bool = False, stream: IO[str] | None = None):
        self.what, self.total, self.unit, self.quiet = what, total, unit, quiet
        self.stream = stream or sys.stderr
        self.done, self.step = 0, ""
        self.t0 = time.monotonic()
        self.next_line = max(1, int((total or 0) * LINE_EVERY_FRACTION))
        self.bar: Any = None
        if quiet:
            return
        if not self.stream.isatty():
            units = unit.removesuffix("s") if total == 1 else unit
            self._line(f"{what}{f' ({total} {units})' if total else ''}")
            return
        from rich.console import Console
        from rich.markup import escape
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            SpinnerColumn,
            TextColumn,
            TimeElapsedColumn,
        )

        columns: list[Any] = [SpinnerColumn(), TextColumn("[bold]{task.description}")]
        if total:
            columns += [BarColumn(bar_width=20), MofNCompleteColumn()]
        columns += [TimeElapsedColumn(), TextColumn("{task.fields[step]}", style="dim")]
        self.bar = Progress(*columns, console=Console(file=self.stream, force_terminal=True),
                            transient=True)
        self.task = self.bar.add_task(escape(f"proctor: {what}"), total=total, step="")
        self.bar.start()

    def at(self, step: str) -> None:
        """A step begins (`npm install …`, a trial's id): shown as the current one."""
        self.step = step
        if self.bar is not None:
            from rich.markup import escape

            self.bar.update(self.task, step=escape(step))
        elif not self.quiet and (not self.total or self.total <= 10):
            n = f"{self.done + 1}/{self.total} " if self.total else ""
            self._line(f"{self.what}: {n}{step} · {_clock(time.monotonic() - self.t0)}")

    def advance(self, n: int = 1) -> None:
        """`n` steps done; without a terminal, many steps say so every tenth of them."""
        self.done += n
        if self.bar is not None:
            self.bar.update(self.task, advance=n)
        elif not self.quiet and self.total and self.total > 10 and (
                self.done >= self.next_line or self.done == self.total):
            self.next_line = self.done + max(1, int(self.total * LINE_EVERY_FRACTION))
            self._line(f"{self.what}: {self.done}/{self.total} {self.unit} · "
                       f"{_clock(time.monotonic() - self.t0)}")

    def close(self, said: str = "") -> None:
        """The work ended: `said` (e.g. `installed codex 0.1.0`) with its elapsed time."""
        if self.bar is not None:
            self.bar.stop()
            self.bar = None
        if said and not self.quiet:
            self._line(f"{said} in {_clock(time.monotonic() - self.t0)}")

    def __enter__(self) -> Activity:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:  # an error: the live line goes, the error says the rest
            self.bar.stop()
            self.bar = None

    def _line(self, text: str) -> None:
        if self.bar is not None:
            self.bar.console.print(f"proctor: {text}", markup=False, highlight=False)
        else:
            print(f"proctor: {text}", file=self.stream, flush=True)


def _clock(seconds: float) -> str:
    m, s = divmod(int(round(seconds)), 60)
    return f"{m}:{s:02d}"
