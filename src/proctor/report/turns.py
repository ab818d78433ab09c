"""What an agent did, turn by turn: one timeline built from a trial's `trace.jsonl`, read by
report.html, `proctor show` and the exports (ATIF, Inspect).

Each model turn holds the new messages it was sent, its answer and its tool calls; each tool
call holds the agent command(s) it caused (exit status, duration, output, processes) and what
the agent got back. The commands are proctor's own record (`command` events); the turns are
the model calls, the built-in agent's or those proctor's model proxy saw between an external
agent and its model. A command is put with its call by, in order:

1. its `tool_call_id`, when the record carries one;
2. time: a command recorded with its own start time belongs to a call of the last turn
   whose request went out before it started;
3. its text, in order: the first call not yet matched, at or after the last match, whose
   command is the command's text; a record that matches no call and follows a matched one
   is a process that command started (older records list a pipeline's members apart).

What the agent runs for itself (its launcher, housekeeping, `ignore_commands`: records with
`ignored`) is counted per turn, one line each, never mixed with the agent commands.

Nothing here cuts or escapes text: the readers do, each for its own page."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, cast

from proctor.record.events import CommandEvent, ModelCallEvent, ProcessLine
from proctor.report import wire


@dataclass
class Command:
    """One `command` trace event (proctor.model.CommandRecord, plus `ignored`)."""

    text: str
    exit_code: int | None = None
    duration_s: float | None = None
    started_at: float | None = None
    stdout: str = ""
    stderr: str = ""
    timed_out: bool = False
    truncated: bool = False
    source: str = "agent"  # agent | traced (exec in older runs) | launcher
    aside: str | None = None  # why it is not an agent command (launcher, housekeeping, ...)
    call_id: str | None = None
    processes: list[str] = field(default_factory=list)  # what it started, one line each
    timed: bool = True  # has a start time of its own (see `_timed`)
    # the `processes` records as written (argv, parent, exit_code): the OTel export's spans
    process_records: list[ProcessLine] = field(default_factory=list, repr=False)

    @classmethod
    def from_event(cls, ev: CommandEvent) -> Command:
        return cls(
            text=str(ev.get("command") or " ".join(map(str, ev.get("argv") or []))),
            exit_code=ev.get("exit_code"), duration_s=ev.get("duration_s"),
            started_at=ev.get("started_at"), stdout=str(ev.get("stdout") or ""),
            stderr=str(ev.get("stderr") or ""), timed_out=bool(ev.get("timed_out")),
            truncated=bool(ev.get("truncated")), source=str(ev.get("source") or "agent"),
            aside=None if ev.get("ignored") is None else str(ev["ignored"]),
            call_id=ev.get("tool_call_id"),
            processes=[_process_line(p) for p in ev.get("processes") or []],
            process_records=[p for p in ev.get("processes") or [] if isinstance(p, dict)])


    def as_text(self) -> str:
        """The command's result as proctor recorded it: exit code, stdout, stderr."""
        lines = [f"exit code: {'timed out' if self.timed_out else self.exit_code}"]
        if self.stdout:
            lines.append(f"stdout:\n{self.stdout}")
        if self.stderr:
            lines.append(f"stderr:\n{self.stderr}")
        return "\n".join(lines)


def _process_line(p: Any) -> str:
    if isinstance(p, dict):
        argv = p.get("argv")
        return str(p.get("command") or (" ".join(map(str, argv)) if isinstance(argv, list)
                                        else argv or ""))
    if isinstance(p, list):
        return " ".join(map(str, p))
    return str(p)


@dataclass
class Call:
    """A tool call and what came of it."""

    id: str | None
    name: str
    args: Any
    line: str
    command: str | None  # the shell command it asks for, if any
    result: str | None = None  # what the agent got back (the tool message of its next request)
    commands: list[Command] = field(default_factory=list)

    def returned(self) -> str | None:
        """What the call gave back: what the agent saw, else what proctor recorded."""
        if self.result is not None:
            return self.result
        ran = [c for c in self.commands if c.aside is None]
        return "\n".join(c.as_text() for c in ran) if ran else None


@dataclass
class Message:
    """A message of a trial's conversation, as shown."""
    role: str
    text: str


@dataclass
class Turn:
    """One model call: what was new in its request, its answer, its calls."""

    number: int | None
    model: str
    time: float | None  # when the answer was recorded
    latency_s: float | None
    tokens_in: int | None
    tokens_out: int | None
    attempt: int | None = None
    side: str | None = None  # "side call" (an external agent's helper call) or a purpose
    error: str | None = None
    system: str = ""  # the system prompt, on the first turn (and when it changed)
    system_changed: bool = False
    messages: list[Message] = field(default_factory=list)
    text: str = ""
    calls: list[Call] = field(default_factory=list)
    aside: list[Command] = field(default_factory=list)  # housekeeping during this turn
    # the tool results its request carried, until `_results` hands them to their calls
    tool_results: list[tuple[str | None, str]] = field(default_factory=list, repr=False)

    @property
    def started(self) -> float | None:
        if self.time is None:
            return None
        return self.time - (self.latency_s or 0.0)


@dataclass
class Event:
    """Anything else the trace holds (setup, a timeout, the agent stopping): one line."""

    kind: str
    text: str
    exit_code: int | None = None


@dataclass
class Output:
    """What an agent printed, as shown."""
    label: str  # "agent output", "all the agent printed"
    text: str


@dataclass
class Aside:
    """Housekeeping outside any turn (an external agent's start-up), or the agent's own
    files (`agent_state_write`): one line with a count."""

    label: str
    commands: list[Command] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)


Item = Turn | Command | Event | Output | Aside


@dataclass
class Timeline:
    """A trial's turns and commands in order, as shown."""
    items: list[Item]

    @property
    def turns(self) -> list[Turn]:
        return [i for i in self.items if isinstance(i, Turn)]

    def commands(self) -> list[Command]:
        """Every agent command (not set aside), each once, in the order they ran."""
        out: list[Command] = []
        for item in self.items:
            if isinstance(item, Turn):
                out += [c for call in item.calls for c in call.commands if c.aside is None]
            elif isinstance(item, Command) and item.aside is None and item.source != "launcher":
                out.append(item)
        return out


def build(trace: list[dict[str, Any]]) -> Timeline:
    items: list[Item] = []
    last: dict[Any, tuple[int, str]] = {}  # per kind of call: (messages seen, system prompt)
    state: Aside | None = None
    for ev in trace:
        kind = ev.get("type")
        if kind == "model_call":
            items.append(_turn(cast(ModelCallEvent, ev), last))
        elif kind == "command":
            items.append(Command.from_event(cast(CommandEvent, ev)))
        elif kind == "agent_output":
            items.append(Output("agent output", str(ev.get("output", ev.get("text", ev.get(
                "content", ""))) or "")))
        elif kind == "agent_stdout":
            items.append(Output("all the agent printed", str(ev.get("stdout") or "")))
        elif kind == "agent_state_write":
            if state is None:
                state = Aside("the agent's own files")
                items.append(state)
            state.lines.append(f"{ev.get('path')}  ({ev.get('change', 'written')}"
                               + (f", {ev['size']} bytes" if ev.get("size") is not None else "")
                               + ")")
        elif kind == "check":
            continue  # the checks table shows them
        elif kind == "setup":
            items.append(Event("setup", str(ev.get("command") or ev.get("name") or ""),
                               ev.get("exit_code")))
        else:
            rest = {k: v for k, v in ev.items() if k not in ("type", "time")}
            items.append(Event(str(kind), json.dumps(rest, default=str, ensure_ascii=False)))
    _results(items)
    _attach(items)
    return Timeline(items)


def _turn(ev: ModelCallEvent, last: dict[Any, tuple[int, str]]) -> Turn:
    """A model turn. A proxied call carries the whole conversation: only what is new since
    the previous call of the same kind is kept, and the model's own earlier answers (which
    the previous turns show) are left out."""
    usage = ev.get("usage")  # none in a call that failed
    when = ev.get("time")  # the recorder's, on every line
    request = ev.get("request")
    system, messages = wire.request_messages(request)
    key = (bool(ev.get("side")), ev.get("path"), ev.get("purpose"))
    seen, prev_system = last.get(key, (0, None))
    if ev.get("source") == "proxy":
        last[key] = (len(messages), system)
        messages = messages[min(seen, len(messages)):]
    else:  # the built-in agent records what is new; its system prompt comes once
        last[key] = (0, system or prev_system or "")
    text, calls = wire.response_calls(ev.get("response"))
    label = ev.get("model") or (request.get("model") if isinstance(request, dict) else None)
    turn = Turn(
        number=ev.get("turn"), model=str(label or ""),
        time=when if isinstance(when, int | float) else None,
        latency_s=ev.get("latency_s"), tokens_in=usage.get("input") if usage else None,
        tokens_out=usage.get("output") if usage else None, attempt=ev.get("attempt"),
        side="side call" if ev.get("side") else ev.get("purpose"),
        error=None if not ev.get("error") else str(ev["error"]), text=text,
        calls=[Call(c.id, c.name, c.args, c.line, c.command) for c in calls])
    if system and system != prev_system:
        turn.system, turn.system_changed = system, prev_system is not None
    answered = prev_system is not None  # earlier turns of this kind show the answers
    fresh = [m for m in messages if not (answered and m.role == "assistant")]
    turn.messages = [Message(m.role, m.text) for m in fresh if m.role != "tool"]
    turn.tool_results = [(m.call_id, m.text) for m in fresh if m.role == "tool"]
    return turn


def _results(items: list[Item]) -> None:
    """Hand each tool result to the call it answers (by id, else the earlier calls still
    waiting, in order); a result no call claims stays a message of its turn."""
    waiting: list[Call] = []
    by_id: dict[str, Call] = {}
    for item in items:
        if not isinstance(item, Turn):
            continue
        results, item.tool_results = item.tool_results, []
        for call_id, text in results:
            call = by_id.get(call_id) if call_id else None
            if call is None or call.result is not None:
                call = next((c for c in waiting if c.result is None and
                             (not call_id or c.id is None)), None)
            if call is None:
                item.messages.append(Message("tool", text))
                continue
            call.result = text
        for call in item.calls:
            waiting.append(call)
            if call.id:
                by_id[call.id] = call
        waiting = [c for c in waiting if c.result is None]


def _norm(text: str | None) -> str:
    return " ".join((text or "").split())


def _timed(cmd: Command) -> bool:
    """Whether a command has a start time of its own: the built-in agent's commands do, and
    any record that says how it ended. An external agent's processes were recorded, before
    they had times of their own, with the agent's start time, no duration and no exit
    status: those are placed by their text and order."""
    return cmd.started_at is not None and (cmd.source == "agent" or bool(cmd.duration_s)
                                           or cmd.exit_code is not None)


def _attach(items: list[Item]) -> None:
    """Put each command with the call that caused it, and housekeeping with its turn."""
    turns = [i for i in items if isinstance(i, Turn) and not i.side]
    if turns:
        _Matcher(items, turns).run()
    _group_aside(items)


class _Matcher:
    def __init__(self, items: list[Item], turns: list[Turn]):
        self.items, self.turns = items, turns
        self.calls = [c for t in turns for c in t.calls]
        self.owner = {id(c): t for t in turns for c in t.calls}
        self.by_id = {c.id: c for c in self.calls if c.id}
        self.pointer = 0  # calls before it are matched or passed (text matching keeps order)
        self.prev: tuple[Command, Call] | None = None  # the last command put with a call
        self.placed: set[int] = set()  # id() of the commands moved out of the timeline

    def run(self) -> None:
        startup: list[Command] = []
        for cmd, before in _commands_after(self.items):
            cmd.timed = _timed(cmd)
            if cmd.source == "launcher":
                continue  # the agent program's own record: its exit status, its answer
            if cmd.source == "agent":  # the built-in agent: right after the turn that asked
                turn = before
            else:
                turn = _turn_at(self.turns, cmd.started_at) if cmd.timed else None
            if cmd.aside is not None:
                call = self._call(cmd, turn, aside=True)
                target = turn or (self.owner[id(self.prev[1])] if self.prev else None)
                if call is not None:  # asked for by the model, but not an agent command
                    call.commands.append(cmd)
                else:
                    (target.aside if target else startup).append(cmd)
                self.placed.add(id(cmd))
                continue
            call = self._call(cmd, turn)
            if call is not None:
                call.commands.append(cmd)
                self.prev = (cmd, call)
                self.placed.add(id(cmd))
            elif self.prev is not None and cmd.source != "agent" and not cmd.timed:
                self.prev[0].processes.append(cmd.text)  # a member of its pipeline, ...
                self.placed.add(id(cmd))
        self.items[:] = [i for i in self.items if id(i) not in self.placed]
        if startup:
            first = next(n for n, i in enumerate(self.items) if isinstance(i, Turn))
            self.items.insert(first, Aside("the agent's start-up", startup))

    def _call(self, cmd: Command, turn: Turn | None, aside: bool = False) -> Call | None:
        """The call `cmd` answers; a set-aside command (`aside`) only by its id or text."""
        if cmd.call_id and cmd.call_id in self.by_id:
            return self.by_id[cmd.call_id]
        if turn is not None:  # placed by the trace or by time: a call of that turn
            open_calls = [c for c in turn.calls if not c.commands]
            same = next((c for c in open_calls if _norm(c.command) == _norm(cmd.text)), None)
            if same is None and cmd.source == "agent" and open_calls and not aside:
                same = open_calls[0]  # the built-in agent runs exactly what it was asked
            return same
        if self.prev is not None and _norm(cmd.text) == _norm(self.prev[0].text):
            return None  # the process of the command just matched (its `sh -c`), not a new one
        for n in range(self.pointer, len(self.calls)):
            c = self.calls[n]
            if not c.commands and _norm(c.command) == _norm(cmd.text):
                self.pointer = n + 1
                return c
            if aside and not c.commands:
                break  # housekeeping may look like a later call: only the next one counts
        return None


def _group_aside(items: list[Item]) -> None:
    """Consecutive set-aside commands outside any turn (a command agent's, or after the
    last turn) become one line."""
    out: list[Item] = []
    for item in items:
        if isinstance(item, Command) and item.aside is not None and item.source != "launcher":
            if out and isinstance(out[-1], Aside) and out[-1].label == "set aside":
                out[-1].commands.append(item)
            else:
                out.append(Aside("set aside", [item]))
        else:
            out.append(item)
    items[:] = out


def _commands_after(items: list[Item]) -> list[tuple[Command, Turn | None]]:
    """Each command of the trace with the last main turn before it (None: before any)."""
    out: list[tuple[Command, Turn | None]] = []
    last: Turn | None = None
    for item in items:
        if isinstance(item, Turn) and not item.side:
            last = item
        elif isinstance(item, Command):
            out.append((item, last))
    return out


def _turn_at(turns: list[Turn], when: float | None) -> Turn | None:
    """The turn a command started at `when` belongs to: the last one whose request went out
    before it (the next request waits for the command's result; an answer may still be
    streaming when the agent starts the command it asked for)."""
    if when is None:
        return None
    best = None
    for t in turns:
        if t.started is not None and t.started <= when:
            best = t
    return best
