"""Turn-aligned trajectories: each model turn with its tool calls, each call with the command
it caused; housekeeping one line per turn. On real runs (the built-in agent, and Claude Code,
Codex and mini-swe-agent through proctor's model proxy) and on the matching rules alone."""

from __future__ import annotations

import json
import subprocess

from proctor.report import turns
from proctor.report.trajectory import DIGEST, decode
from tests.helpers import PROCTOR

WRONG = "wc -l < orders.csv > count.txt"  # what the broken mock script has every agent run


def _docs(run_dir) -> dict[str, dict]:
    """Each trial's trajectory document, as report.html embeds it."""
    page = (run_dir / "report.html").read_text()
    start = page.index(">", page.index('id="trajectories"')) + 1
    blobs = json.loads(page[start:page.index("</script>", start)])
    results = json.loads((run_dir / "results.json").read_text())
    return {t["id"]: decode(b) for t, b in zip(results["trials"], blobs, strict=True) if b}


def test_an_external_agents_calls_carry_the_commands_they_caused(agent_run):
    name, run_dir = agent_run
    ((tid, doc),) = _docs(run_dir).items()
    items = doc["items"]
    kinds = [i["k"] for i in items]
    first, last = kinds.index("turn"), len(kinds) - 1 - kinds[::-1].index("turn")
    # before the first turn: setup and the agent's start-up; after the last: the agent
    # program's exit, what it printed, its own files — never an agent command on its own
    assert set(kinds[:first]) <= {"event", "aside"} and set(kinds[last + 1:]) <= {
        "agent", "output", "aside"}
    calls = [c for i in items if i["k"] == "turn" for c in i["calls"]]
    wrong = next(c for c in calls if WRONG in c["line"])
    (cmd,) = [c for c in wrong["cmds"] if "aside" not in c]
    assert cmd["cmd"] == WRONG
    # what it gave back: proctor's record when it has the output, else what the agent saw
    assert cmd["exit"] is not None or "result" in wrong
    # housekeeping is counted on one line per place, never drawn as commands of the task
    assert not [i for i in items if i["k"] == "cmd"]
    assert (run_dir / "trials" / tid / DIGEST).is_file()  # prepared when the trial ended


def test_show_reads_an_external_agents_trial_turn_by_turn(agent_run):
    name, run_dir = agent_run
    out = subprocess.run([PROCTOR, "show", str(run_dir), "count-orders"], capture_output=True,
                         text=True, env={"COLUMNS": "120", "NO_COLOR": "1", "PATH": "/usr/bin"},
                         check=True).stdout
    lines = out.splitlines()
    # the call, and on its line what the command it caused did: the command said once
    (call,) = [line for line in lines if line.startswith("  → ") and WRONG in line]
    assert "[exit 0" in call and not any(line.startswith(f"    $ {WRONG}") for line in lines)
    assert "why: failed: verify#0" in out
    trace = out[out.index("trace ─"):out.index("checks ─")].splitlines()
    # a codex trial printed 274 lines (48 of housekeeping, then a JSON blob): now a screen
    assert len(trace) <= 30, "\n".join(trace)
    assert sum("set aside" in line for line in trace) <= 3


def test_the_built_in_agent_runs_exactly_its_calls(examples_run):
    docs = _docs(examples_run)
    assert len(docs) == 19
    for doc in docs.values():
        assert not [i for i in doc["items"] if i["k"] == "cmd"]  # none outside a call
        for turn in (i for i in doc["items"] if i["k"] == "turn"):
            for call in turn["calls"]:
                (cmd,) = call["cmds"]
                assert call["line"] == f"run_command: {cmd['cmd']}"
                assert cmd["exit"] is not None and "result" not in call


# ---- the matching rules ---------------------------------------------------------------------

def _turn(n: int, time: float, *calls: tuple[str, str], results=()) -> dict:
    """A proxied Chat Completions turn answering with `calls` (id, command)."""
    messages = [{"role": "user", "content": "task"}]
    for call_id, text in results:
        messages += [{"role": "assistant", "tool_calls": [{"id": call_id, "function": {
            "name": "bash", "arguments": json.dumps({"command": "x"})}}]},
            {"role": "tool", "tool_call_id": call_id, "content": text}]
    body = {"choices": [{"message": {"content": "", "tool_calls": [
        {"id": i, "function": {"name": "bash", "arguments": json.dumps({"command": c})}}
        for i, c in calls]}}]}
    return {"type": "model_call", "source": "proxy", "turn": n, "time": time,
            "latency_s": 0.1, "request": {"messages": messages}, "response": json.dumps(body),
            "usage": {"input": 10, "output": 2}}


def _exec(command: str, **kw) -> dict:
    return {"type": "command", "command": command, "source": "exec", "started_at": 0.0,
            "duration_s": 0.0, **kw}


def _by_call(timeline: turns.Timeline) -> dict[str, list[str]]:
    return {c.id: [x.text for x in c.commands] for t in timeline.turns for c in t.calls}


def test_commands_go_with_their_calls_by_id_then_time_then_text():
    trace = [_turn(1, 10.0, ("a", "make"), ("b", "make")),
             _turn(2, 20.0, ("c", "ls"), results=[("a", "built"), ("b", "built")]),
             # by id, whatever the text or order
             _exec("make", tool_call_id="b"),
             # by time: started after turn 2's request went out -> a call of turn 2
             {**_exec("ls", started_at=20.5, duration_s=0.1)},
             # untimed, by text: the first open call whose command it is
             _exec("make")]
    tl = turns.build(trace)
    assert _by_call(tl) == {"a": ["make"], "b": ["make"], "c": ["ls"]}
    a = tl.turns[0].calls[0]
    assert a.result == "built" and a.commands[0].call_id is None


def test_a_pipelines_members_are_processes_of_its_command():
    tl = turns.build([_turn(1, 10.0, ("a", "tail -n +2 f | wc -l")),
                      _exec("tail -n +2 f | wc -l"), _exec("tail -n +2 f"), _exec("wc -l")])
    (cmd,) = tl.turns[0].calls[0].commands
    assert cmd.processes == ["tail -n +2 f", "wc -l"] and len(tl.items) == 1


def test_housekeeping_is_counted_with_its_turn_or_the_start_up():
    aside = {"ignored": "housekeeping"}
    tl = turns.build([_turn(1, 10.0, ("a", "ls")), _turn(2, 20.0, ("b", "pwd")),
                      _exec("env", **aside), _exec("id -u", **aside), _exec("ls"),
                      _exec("git status", **aside), _exec("pwd")])
    assert isinstance(tl.items[0], turns.Aside) and len(tl.items[0].commands) == 2
    assert [c.text for c in tl.turns[0].aside] == ["git status"]
    assert _by_call(tl) == {"a": ["ls"], "b": ["pwd"]}
    assert [c.text for c in tl.commands()] == ["ls", "pwd"]


def test_a_command_no_call_asked_for_stays_in_its_place():
    """The oracle and command agents have no model: their commands are the timeline."""
    tl = turns.build([_exec("echo 1", source="agent"), _exec("echo 2", source="agent")])
    assert [i.text for i in tl.items] == ["echo 1", "echo 2"]


def test_the_traced_record_goes_by_time_and_id_and_the_launcher_is_the_program():
    """The agent-command record with its own times, exit codes, processes and the model's
    tool_call_id (what the tracer gives for every agent)."""
    def traced(command: str, at: float, **kw) -> dict:
        return {"type": "command", "command": command, "source": "traced", "started_at": at,
                "duration_s": 0.01, "exit_code": 0, **kw}

    trace = [_turn(1, 10.0, ("a", "make")), _turn(2, 20.0, ("b", "make test")),
             traced("git status", 12.0, ignored="housekeeping"),
             traced("make", 11.0, tool_call_id="a", processes=[{"argv": ["cc", "x.c"]}]),
             traced("make test", 21.0, stdout="ok\n"),
             {**traced("claude -p task", 1.0, ignored="launcher"), "source": "launcher",
              "duration_s": 30.0}]
    tl = turns.build(trace)
    assert _by_call(tl) == {"a": ["make"], "b": ["make test"]}
    assert tl.turns[0].calls[0].commands[0].processes == ["cc x.c"]
    assert [c.text for c in tl.turns[0].aside] == ["git status"]  # during turn 1
    program = tl.items[-1]
    assert isinstance(program, turns.Command) and program.source == "launcher"
    assert [c.text for c in tl.commands()] == ["make", "make test"]


def test_long_tagged_blocks_fold_and_short_ones_stay():
    from proctor.report.trajectory import parts

    reminder = "<system-reminder>\n" + "be careful. " * 40 + "\n</system-reminder>"
    assert parts(f"{reminder}\n\nCount the rows.") == [["<system-reminder>", reminder],
                                                         "Count the rows."]
    assert parts("use <b>bold</b> here\n<x>short</x>") == ["use <b>bold</b> here\n<x>short</x>"]
    # an agent's message full of unclosed tags is read once per look, a bounded number of looks
    hostile = "<a>\n" * 50_000
    assert parts(hostile) == [hostile.strip()]
