"""`proctor show RUN_DIR [TRIAL]`: the trials of a run, or what one agent did, step by step.

All text from the run is printed as rich `Text` (never as markup) after `data.clean`, so agent
output can neither inject rich markup nor terminal escape sequences."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from proctor.report import data
from proctor.report.labels import note as note_text
from proctor.report.terminal import STATUS_STYLE, status_text
from proctor.store import shown

if TYPE_CHECKING:
    from rich.console import Console

OUTPUT_LINES = 12  # lines of stdout/stderr per command
OUTPUT_CHARS = 1500
MESSAGE_CHARS = 600  # of a check message: its start and its end (where the reason is)
AUDIT_PER_TYPE = 25  # audit events shown per type


@dataclass
class TrialFilter:
    """Which trials `proctor show` shows."""
    failed: bool = False  # fail or error only
    tasks: set[str] = field(default_factory=set)
    models: set[str] = field(default_factory=set)  # a model, or an agent without one

    def keeps(self, t: Mapping[str, Any]) -> bool:
        if self.failed and data.status_of(t) == "pass":
            return False
        if self.tasks and t.get("task_id") not in self.tasks:
            return False
        return not self.models or bool(
            {t.get("model"), t.get("agent"), data.row_label(t)} & self.models)


def show_main(run_dir: str | Path, trial: str | None, only: TrialFilter | None = None,
              full: bool = False) -> int:
    """Without TRIAL list the run's trials (those `only` keeps); with TRIAL (id or unique
    prefix) print its record (`full`: nothing folded)."""
    from rich.console import Console

    run = data.load_run(run_dir, allow_partial=True)
    console = Console(highlight=False)
    if trial is None:
        if only is not None:
            kept = [t for t in run.trials if only.keeps(t)]
            if run.trials and not kept:
                console.print(f"none of the run's {len(run.trials)} trials match")
                return 0
            run.results = {**run.results, "trials": kept}
        if only is not None and only.failed:
            print_failures(run, console)
        else:
            print_trial_list(run, console)
    else:
        print_trial(run, data.find_trial(run.trials, trial), console, full)
    return 0


def print_trial_list(run: data.Run, console: Console) -> None:
    """One line per trial (an id longer than its column folds onto more). The note (the
    error or first failed check: its first line and its end, where the reason usually is)
    gets a column when the terminal is wide, else the lines under the trial id. The lines are
    laid out here rather than by a rich Table, which measures and renders every cell as an
    object: 10,000 trials took seconds that way; this is linear and cheap per line."""
    from rich.cells import cell_len, chop_cells, set_cell_size
    from rich.text import Text

    state = _state(run)
    console.print(Text(f"run {data.clean(run.results.get('run_id') or run.dir.name)}{state}"))
    console.print(Text(_agents_line(run), style="dim"))
    ids = [data.clean(t.get("id")) for t in run.trials]
    width = max((cell_len(i) for i in ids), default=5)
    # the other columns and the separators take 28 cells (31 with the note's)
    # A note narrower than 50 cells would lose its middle, the cause with it: below the row
    beside = console.width - min(width, 60) - 31 >= 50
    id_width = max(5, min(width, 60 if beside else console.width - 28))
    note_width = console.width - id_width - 31
    heads = [("trial", id_width, False), ("status", 6, False), ("score", 5, True),
             ("duration", 8, True)] + ([("note", note_width, False)] if beside else [])
    paint = _painter(console)
    lines = [" ┃ ".join(paint(_cell(h, w, right), "bold") for h, w, right in heads).rstrip(),
             "━╇━".join("━" * w for _, w, _ in heads)]
    blank = " │ ".join(" " * w for _, w, _ in heads[1:])  # beside an id's folded part
    for t, trial_id in zip(run.trials, ids, strict=True):
        status = data.status_of(t)
        word = status.upper() if status else "–"
        cells = [_cell(word, 6, False, paint, f"bold {STATUS_STYLE.get(status, '')}".strip()),
                 _cell(f"{float(t.get('composite_score') or 0.0):.2f}", 5, True),
                 _cell(data.seconds(t.get("duration_s")), 8, True)]
        note = note_text(data.reason(t), note_width if beside else 2 * (console.width - 2))
        if beside:
            cells.append(paint(set_cell_size(note, note_width) if cell_len(note) > note_width
                               else note, "dim"))
        parts = chop_cells(trial_id, id_width) or [""]
        lines.append(" │ ".join([set_cell_size(parts[0], id_width), *cells]).rstrip())
        lines += [f"{set_cell_size(p, id_width)} │ {blank}".rstrip() for p in parts[1:]]
        if note and not beside:  # the whole width under the row, not the id's column
            lines += [paint("  " + p.rstrip(), "dim") for p in chop_cells(note, console.width - 2)]
    console.file.write("\n".join(lines) + "\n")
    if not run.trials:
        console.print("no trials recorded yet")
    else:
        console.print(Text(f"\nproctor show {run.dir} TRIAL  (an id or a unique prefix)",
                           style="dim"))


def _state(run: data.Run) -> str:
    """What the run's header adds when its trials are not all there: still being written
    (results.jsonl only), or interrupted (issue 38: it read as a finished run)."""
    if not run.complete:
        return " (unfinished: trials so far)"
    if data.headline(run.results)["incomplete"]:
        why = "interrupted" if run.results.get("interrupted") else "trials are missing"
        return f" (incomplete: {why}; finish it with proctor run --resume {run.dir})"
    return ""


def _agents_line(run: data.Run) -> str:
    """Who was under test: `agents: claude-code · mock/solver, codex · mock/solver`."""
    names = list(dict.fromkeys(data.row_label(t) for t in run.trials))
    return f"agent{'s' if len(names) != 1 else ''}: " + ", ".join(data.clean(n) for n in names)


FAILED_IDS = 3  # trial ids named per group of `--failed`; the rest are counted


def print_failures(run: data.Run, console: Console) -> None:
    """`--failed`: trials that did not pass, those of one condition (task, agent, model,
    help mode, params) with the same status and the identical reason grouped (replicas
    failing alike read once, with a count). Each group: its status, its trial ids and who
    ran them on one line, then its reason on lines of its own, the terminal's whole width,
    nothing cut from its start (the cause)."""
    from rich.text import Text

    total = len(run.results.get("trials") or [])
    state = _state(run)
    console.print(Text(f"run {data.clean(run.results.get('run_id') or run.dir.name)}{state}: "
                       f"{total} trial{'s' if total != 1 else ''} did not pass"))
    groups: dict[tuple[Any, ...], list[Mapping[str, Any]]] = {}
    for t in run.trials:
        key = (*data.condition(t), t.get("agent"), data.status_of(t), data.reason(t))
        groups.setdefault(key, []).append(t)
    for trials in groups.values():
        first = trials[0]
        status = data.status_of(first)
        head = Text()
        head.append(status.upper(), style=f"bold {STATUS_STYLE.get(status, '')}".strip())
        if len(trials) > 1:
            head.append(f" ×{len(trials)}", style="bold")
        ids = [data.clean(t.get("id")) for t in trials]
        head.append("  " + ", ".join(ids[:FAILED_IDS]))
        if len(ids) > FAILED_IDS:
            head.append(f" and {len(ids) - FAILED_IDS} more")
        head.append(f"  ({data.clean(data.row_label(first))})", style="dim")
        console.print(head, overflow="fold")
        why = note_text(data.reason(first), MESSAGE_CHARS) or "(no reason recorded)"
        for line in Text(why).wrap(console, max(20, console.width - 2), overflow="fold"):
            line.rstrip()
            console.print(Text("  ") + line, overflow="ignore", crop=False)
    if run.trials:
        console.print(Text(f"\nproctor show {shown(run.dir)} TRIAL  (an id or a unique prefix)",
                           style="dim"))


def _painter(console: Console) -> Any:
    """text, style -> the text with that style's escape codes for this console (none when
    it is not a terminal; no colours under NO_COLOR). Each style is worked out once."""
    from functools import cache

    from rich.console import COLOR_SYSTEMS
    from rich.style import Style

    @cache
    def codes(style: str) -> tuple[str, str]:
        st = Style.parse(style)
        if console.no_color:
            st = st.without_color
        marked = st.render("\0", color_system=COLOR_SYSTEMS.get(console.color_system or ""))
        return tuple(marked.split("\0"))  # type: ignore[return-value]

    def paint(text: str, style: str) -> str:
        if not style or not text or console.color_system is None:
            return text
        before, after = codes(style)
        return f"{before}{text}{after}"

    return paint


def _cell(text: str, width: int, right: bool, paint: Any = None, style: str = "") -> str:
    from rich.cells import cell_len, set_cell_size

    pad = " " * max(0, width - cell_len(text))
    text = text if not pad else (pad + text if right else text + pad)
    text = set_cell_size(text, width) if cell_len(text) > width else text
    return paint(text, style) if paint and style else text


_GIT_OWN = ((re.compile(r"(?:^|/)(\.git/hooks/)[^/]+\.sample$"), "*.sample"),
            (re.compile(r"(?:^|/)(\.git/objects/).+"), "…"))


def _git_own(ev: Mapping[str, Any]) -> str | None:
    """The folded line a file write belongs to (`.git/hooks/*.sample`, `.git/objects/…`),
    or None: listed as it is."""
    if ev.get("type") != "file_write":
        return None
    path = str((ev.get("details") or {}).get("path") or "")
    for pattern, tail in _GIT_OWN:
        if m := pattern.search(path):
            return data.one_line(path[: m.end(1)], 160) + tail
    return None


def _audit_line(ev: dict[str, Any]) -> Any:
    from rich.text import Text

    d = ev.get("details") or {}
    kind = ev.get("type")
    if kind == "command":
        s = f"command  {data.one_line(d.get('command') or ' '.join(d.get('argv') or []), 160)}"
        if d.get("exit_code") is not None:
            s += f"  [exit {d.get('exit_code')}]"
    elif kind == "file_write":
        s = f"file     {data.one_line(d.get('path'), 160)}  ({d.get('size', '?')} bytes)"
    elif kind == "db_write":
        s = (f"db       {data.one_line(d.get('service'), 40)}.{data.one_line(d.get('table'), 60)}"
             f"  +{d.get('inserts', 0)} ~{d.get('updates', 0)} -{d.get('deletes', 0)}")
    elif kind == "http_call":
        s = (f"http     {data.one_line(d.get('service'), 40)} {data.one_line(d.get('method'), 10)} "
             f"{data.one_line(d.get('path'), 160)} → {d.get('status', '?')}")
    else:
        s = f"{data.one_line(kind, 20)}  {data.one_line(json.dumps(d, default=str), 160)}"
    return Text(s)


def print_trial(run: data.Run, t: Mapping[str, Any], console: Console, full: bool = False) -> None:
    """One trial: its facts, trace, checks, forbidden rules and audit; `full` unfolds the
    system prompt, help text and housekeeping."""
    from rich.text import Text

    trial_dir = run.trial_dir(str(t.get("id")))
    _print_head(t, console)
    _print_trace(t, trial_dir, console, full)
    _print_checks(t, console)
    _print_audit(trial_dir, console)
    console.print(Text(f"\nfiles: {trial_dir}", style="dim"))


def _print_head(t: Mapping[str, Any], console: Console) -> None:
    from rich.text import Text

    head = Text()
    head.append(data.clean(t.get("id")), style="bold")
    head.append("  ")
    head.append_text(status_text(data.status_of(t)))
    head.append(f"  score {float(t.get('composite_score') or 0.0):.2f}")
    console.print(head)
    tokens = t.get("tokens") or {}
    facts = [f"task {data.clean(t.get('task_id'))}",
             f"agent {data.clean(data.row_label(t))}"]
    if t.get("help_mode"):
        facts.append(f"help mode {data.clean(t.get('help_mode'))}")
    if t.get("params"):
        facts.append(f"params {data.clean(data.params_text(t.get('params')))}")
    facts += [f"replica {t.get('replica', 0)}", f"turns {t.get('turns', 0)}",
              f"tokens {data.count(tokens.get('input'))} in / {data.count(tokens.get('output'))} out",
              f"cost {data.usd(t.get('cost_usd'))}", f"duration {data.seconds(t.get('duration_s'))}"]
    if t.get("limit_hit"):
        facts.append(f"stopped by limit: {data.clean(t.get('limit_hit'))}")
    console.print(Text(" · ".join(facts), style="dim"))
    if t.get("error"):
        kind = f"error ({data.clean(t['error_kind'])}): " if t.get("error_kind") else "error: "
        console.print(Text(kind, style="bold yellow") + Text(data.cut(t["error"], 2000)))
    elif why := data.reason(t):
        console.print(Text("why: ", style="bold red") + Text(data.cut(why, 600)))


def _print_trace(t: Mapping[str, Any], trial_dir: Path, console: Console, full: bool) -> None:
    from rich.rule import Rule
    from rich.text import Text

    from proctor.report.show_trace import print_timeline

    console.print(Rule("trace", align="left"))
    events = data.read_jsonl(trial_dir / "trace.jsonl")
    if not print_timeline(events, console, full, str(t.get("output") or "")):
        console.print(Text("(no trace recorded)", style="dim"))


def _print_checks(t: Mapping[str, Any], console: Console) -> None:
    from rich.rule import Rule
    from rich.table import Table
    from rich.text import Text

    console.print(Rule("checks", align="left"))
    checks = t.get("checks") or []
    if checks:
        table = Table(show_edge=False, pad_edge=False)
        table.add_column("check", overflow="fold")
        table.add_column("result", no_wrap=True)
        table.add_column("score", justify="right", no_wrap=True)
        table.add_column("weight", justify="right", no_wrap=True)
        table.add_column("gate", no_wrap=True)
        table.add_column("message", overflow="fold", ratio=3)
        for c in checks:
            ok = bool(c.get("passed"))
            table.add_row(Text(f"{data.clean(c.get('name'))} ({data.clean(c.get('type'))})"),
                          status_text("pass" if ok else "fail"),
                          f"{float(c.get('score') or 0.0):.2f}",
                          f"{float(c.get('weight', 1.0) or 0.0):g}",
                          "gate" if c.get("gate") else "",
                          Text(data.cut(c.get("message"), MESSAGE_CHARS, keep="both")))
        console.print(table)
    else:
        console.print(Text("(no checks ran)", style="dim"))
    rules = t.get("forbidden") or []
    if rules:
        console.print(Rule("forbidden", align="left"))
        for f in rules:
            line = Text("  VIOLATED " if f.get("violated") else "  ok       ",
                        style="bold red" if f.get("violated") else "green")
            line.append(data.clean(f.get("rule")))
            if f.get("details"):
                line.append(f"  {data.one_line(f.get('details'), 300)}", style="dim")
            console.print(line)
    tampered = t.get("tampering") or []
    if tampered:  # grading would have run what the agent changed (SPEC §4)
        console.print(Rule("tampering", align="left"))
        for item in tampered:
            console.print(Text("  ") + Text(data.clean(item.get("path")), style="bold red")
                          + Text(f"  {data.one_line(item.get('change'), 300)}", style="dim"))


def _print_audit(trial_dir: Path, console: Console) -> None:
    from rich.rule import Rule
    from rich.text import Text

    console.print(Rule("audit", align="left"))
    audit = data.read_jsonl(trial_dir / "audit.jsonl")
    shown_by_type: dict[str, int] = {}
    # Files git writes for itself (`git init`'s 13 sample hooks, the object store) are one
    # line each kind, where the first was written; a hook that is not a sample stays listed.
    lines: list[Any] = []
    folded: dict[str, int] = {}
    for ev in audit:
        kind = str(ev.get("type"))
        group = _git_own(ev)
        if group is not None:
            if group not in folded:
                lines.append(group)
            folded[group] = folded.get(group, 0) + 1
            continue
        shown_by_type[kind] = shown_by_type.get(kind, 0) + 1
        if shown_by_type[kind] <= AUDIT_PER_TYPE:
            lines.append(_audit_line(ev))
    for line in lines:
        if isinstance(line, str):
            n = folded[line]
            line = Text(f"file     {line}  ({n} file{'s' if n != 1 else ''} git writes for "
                        "itself, folded)")
        console.print(line)
    for kind, n in shown_by_type.items():
        if n > AUDIT_PER_TYPE:  # `npm install` writes thousands of files
            console.print(Text(f"… {n - AUDIT_PER_TYPE} more {data.clean(kind)} events "
                               f"(all {n} in {trial_dir / 'audit.jsonl'})", style="dim"))
    if not audit:
        console.print(Text("(no audit events)", style="dim"))
