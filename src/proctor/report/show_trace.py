"""`proctor show RUN TRIAL`'s trace: the turn-aligned timeline of `turns`, for a terminal.

Each model turn with its new messages, its answer and its tool calls, each call with the
command it caused (exit code, duration, the head and tail of its output) or, when proctor's
record has no output, what the agent got back. Folded unless `full`: the system prompt and
other instructions, long tagged blocks of a message (help text, an agent's reminders), the
commands set aside (one line per turn with a count), the agent's own files and all it
printed. Text from the run is printed as rich `Text` after `data.clean`: inert."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from proctor.report import data, turns
from proctor.report.trajectory import parts

if TYPE_CHECKING:
    from rich.console import Console
    from rich.text import Text

HEAD_LINES, TAIL_LINES = 6, 4  # of a long output
LINE_CHARS = 400  # of one line of output
FULL_CHARS = 20_000  # of a folded text printed with --full


def block(text: Any, head: int = HEAD_LINES, tail: int = TAIL_LINES) -> str:
    """A stream's first and last lines, each cut, with a note of what was left out."""
    lines = data.clean(text).rstrip("\n").split("\n")
    lines = [line if len(line) <= LINE_CHARS else line[:LINE_CHARS] +
             f"… [{len(line) - LINE_CHARS} more characters]" for line in lines]
    if len(lines) > head + tail + 1:
        lines = lines[:head] + [f"… [{len(lines) - head - tail} more lines]"] + lines[-tail:]
    return "\n".join(lines)


def _indent(text: str, prefix: str) -> str:
    return "\n".join(prefix + line for line in text.split("\n"))


def _folded(t: Text, label: str, text: str, pad: str, full: bool) -> None:
    """A folded text: its size, or (`full`) the text itself."""
    if full:
        t.append(f"\n{pad}{label}:\n", style="dim")
        t.append(_indent(data.cut(text, FULL_CHARS, keep="both"), pad + "  "))
    else:
        t.append(f"\n{pad}▸ {label}: {len(text):,} characters", style="dim")


def _aside_line(t: Text, commands: list[turns.Command], pad: str, full: bool,
                label: str = "") -> None:
    reasons = list(dict.fromkeys(data.clean(c.aside) for c in commands if c.aside))
    n = len(commands)
    t.append(f"\n{pad}· {label + ': ' if label else ''}{n} command{'s' if n > 1 else ''} set "
             f"aside" + (f" ({', '.join(reasons)})" if reasons else ""), style="dim")
    if full:
        for c in commands:
            t.append(f"\n{pad}    $ {data.one_line(c.text, 160)}  (set aside: "
                     f"{data.clean(c.aside)})", style="dim")


def _command(t: Text, c: turns.Command, pad: str, on_call_line: bool = False) -> None:
    """A command under the call that caused it; `on_call_line`: the call's line already
    says the command (`→ run_command: echo 3`), so only what came of it follows there."""
    aside = c.aside is not None
    if not on_call_line:
        t.append(f"\n{pad}$ ", style="dim" if aside else "bold")
        t.append(data.one_line(c.text, 160 if aside else 400), style="dim" if aside else "bold")
    if aside:
        t.append(f"  (set aside: {data.clean(c.aside)})", style="dim")
        return
    if c.exit_code is not None or c.timed_out:
        meta = "timed out" if c.timed_out else f"exit {c.exit_code}"
        dur = f", {data.seconds(c.duration_s)}" if c.timed else ""
        t.append(f"   [{meta}{dur}]", style="green" if c.exit_code == 0 and not c.timed_out
                 else "red")
    # The programs it started, those the command line does not already say (a script's
    # children, an alias's target): `echo 3` started `echo 3`, said once.
    news = [p for p in c.processes if p.strip() and p.strip() not in c.text]
    if news:
        t.append(f"   started: {data.one_line(' · '.join(news), 200)}", style="dim")
    for stream, style in ((c.stdout, ""), (c.stderr, "yellow")):
        if stream:
            t.append("\n" + _indent(block(stream), pad + "  "), style=style)
    if c.truncated:
        t.append(f"\n{pad}  (output was capped while recording)", style="dim")


def _message(t: Text, m: turns.Message, full: bool) -> None:
    role = data.clean(m.role)
    if role in ("system", "developer"):
        _folded(t, role, m.text, "  ", full)
        return
    for p in parts(m.text):
        if isinstance(p, list):
            _folded(t, f"{role}: {p[0]}", p[1], "  ", full)
        else:
            t.append(f"\n  {role}: ", style="dim")
            t.append(_indent(block(p, 3, 2), "    ").lstrip())  # the task, in short


def _turn(turn: turns.Turn, full: bool) -> Text:
    from rich.text import Text

    t = Text()
    t.append(f"◆ turn {turn.number} · " if turn.number is not None else "◆ ", style="cyan bold")
    t.append(data.one_line(turn.model, 80), style="cyan")
    t.append(f" · {data.count(turn.tokens_in)} in / {data.count(turn.tokens_out)} out"
             f" · {data.seconds(turn.latency_s)}", style="dim")
    if (turn.attempt or 1) > 1:
        t.append(f" · attempt {turn.attempt}", style="yellow")
    if turn.side:
        t.append(f" · {data.clean(turn.side)}", style="dim")
    if turn.system:
        label = ("system prompt" + (" (changed)" if turn.system_changed else "")
                 + (", with the help text" if "<help>" in turn.system else ""))
        _folded(t, label, turn.system, "  ", full)
    for m in turn.messages:
        _message(t, m, full)
    if turn.text:
        t.append("\n  answer: ", style="dim")
        t.append(_indent(block(turn.text), "    ").lstrip())
    for call in turn.calls:
        t.append("\n  → ", style="cyan")
        t.append(data.one_line(call.line, 300), style="cyan")
        shown = [c for c in call.commands if c.aside is None]
        for c in call.commands:
            said = (len(shown) == 1 and c is shown[0] and call.command is not None
                    and " ".join(c.text.split()) == " ".join(call.command.split())
                    and len(call.line) <= 300)
            _command(t, c, "    ", on_call_line=said)
        observed = any(c.aside is None and (c.exit_code is not None or c.stdout or c.stderr)
                       for c in call.commands)
        if call.result is not None and not observed:
            t.append("\n    returned: ", style="dim")
            t.append(_indent(block(call.result or "(nothing)"), "      ").lstrip())
    if turn.aside:
        _aside_line(t, turn.aside, "  ", full)
    if turn.error:
        t.append("\n  error: ", style="yellow")
        t.append(data.one_line(turn.error, 400))
    return t


def item_text(item: turns.Item, full: bool = False) -> Text:
    from rich.text import Text

    if isinstance(item, turns.Turn):
        return _turn(item, full)
    t = Text()
    if isinstance(item, turns.Command) and item.source == "launcher":
        ok = item.exit_code == 0 and not item.timed_out
        t.append("◇ the agent program ", style="bold")
        t.append("timed out" if item.timed_out else f"exit {item.exit_code}",
                 style="green" if ok else "red")
        t.append(f", {data.seconds(item.duration_s)}", style="dim")
        if item.stderr:
            _folded(t, "its stderr", item.stderr, "  ", full)
        return t
    if isinstance(item, turns.Command):
        _command(t, item, "")
        return _lstrip(t)
    if isinstance(item, turns.Aside):
        if item.commands:
            _aside_line(t, item.commands, "", full,
                        "" if item.label == "set aside" else item.label)
        else:
            n = len(item.lines)
            t.append(f"\n· {item.label}: {n} file{'s' if n > 1 else ''}", style="dim")
            if full:
                for line in item.lines:
                    t.append(f"\n    {data.one_line(line, 200)}", style="dim")
        return _lstrip(t)
    if isinstance(item, turns.Output):
        if item.label == "all the agent printed":
            _folded(t, item.label, item.text, "", full)
            return _lstrip(t)
        t.append(f"◇ {item.label}\n", style="bold")
        t.append(_indent(block(item.text), "    "))
        return t
    code = "" if item.exit_code is None else f"  [exit {item.exit_code}]"
    t.append(f"· {data.clean(item.kind)} {data.one_line(item.text, 200)}{code}", style="dim")
    return t


def _lstrip(t: Text) -> Text:
    """`t` without the line break its first part starts with."""
    if t.plain.startswith("\n"):
        t = t[1:]
    return t


def print_timeline(trace: list[dict[str, Any]], console: Console, full: bool = False,
                   output: str = "") -> int:
    """Print each item of the trial's timeline, and the trial's `output` unless the agent's
    last answer or an `agent output` item said it; return how many items."""
    from rich.text import Text

    items = turns.build(trace).items
    folded = False
    for item in items:
        text = item_text(item, full)
        folded = folded or "▸ " in text.plain or "set aside" in text.plain
        console.print(text)
    if folded and not full:
        console.print(Text("(▸ folded, and commands set aside: --full prints them)",
                           style="dim"))
    said = {i.text.strip() for i in items if isinstance(i, turns.Output | turns.Turn)}
    if output and output.strip() not in said:
        console.print(item_text(turns.Output("agent output", output), full))
    return len(items)
