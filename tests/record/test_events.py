"""Every line a real trial writes to trace.jsonl is one of the events proctor.record.events
declares, with exactly the keys it declares and values of their types: the recorder's writers
and the reports' readers share one description."""

from __future__ import annotations

import dataclasses
import json
import sys
import typing

import pytest
from pydantic import TypeAdapter

from proctor.model import CommandRecord, Process
from proctor.record import events

SUITE = """
cli: sh
tasks:
  - id: steps
    intent: write hello into out.txt
    setup: ["echo ready > ready.txt"]
    solution: ["echo hello > out.txt", "ls | wc -l"]
    assert:
      - file_contains: {path: out.txt, text: hello}
      - exit_code: 0
      - ran: "never-ran-this"
"""

AGENT = ("import subprocess\n"
         "subprocess.run('echo hi | cat > said.txt', shell=True)\n"
         "print('done')\n")


def _by_type() -> dict[str, type]:
    out = {}
    for cls in typing.get_args(events.TraceEvent):
        (name,) = typing.get_args(typing.get_type_hints(cls)["type"])
        out[name] = cls
    return out


def _check_line(line: dict, by_type: dict[str, type]) -> None:
    cls = by_type.get(line["type"])
    assert cls is not None, f"undeclared trace event type {line['type']!r}: {line}"
    keys = set(line) - {"time"}  # the recorder's, on every line
    assert keys <= cls.__required_keys__ | cls.__optional_keys__, (
        f"{line['type']}: undeclared keys {keys - cls.__required_keys__ - cls.__optional_keys__}")
    assert cls.__required_keys__ <= keys, f"{line['type']}: missing {cls.__required_keys__ - keys}"
    TypeAdapter(cls).validate_python({k: line[k] for k in keys})  # each value of its type


def test_the_declared_types_are_the_union_and_the_list():
    assert sorted(_by_type()) == sorted(events.EVENT_TYPES)


def test_a_real_trials_trace_lines_are_declared_events(cli, spec, tmp_path):
    spec(SUITE)
    (tmp_path / "agent.py").write_text(AGENT)
    by_type, seen = _by_type(), set()
    runs = [("llm", ["--agent", "llm", "--model", "mock/solver"]),
            ("command", ["--agent", "command", "--agent-command", f"{sys.executable} agent.py"])]
    for name, argv in runs:
        out = cli("run", "spec.yaml", *argv, "-q", "--output-dir", name)
        assert out.returncode == 1, out.stdout + out.stderr  # `ran: never-ran-this` fails
        for trace in (tmp_path / name / "trials").glob("*/trace.jsonl"):
            for text in trace.read_text().splitlines():
                line = json.loads(text)
                assert isinstance(line.get("time"), float), line
                _check_line(line, by_type)
                seen.add(line["type"])
    assert {"setup", "model_call", "command", "agent_stop", "check"} <= seen, seen


def test_an_undeclared_key_is_caught():
    with pytest.raises(AssertionError, match="undeclared keys"):
        _check_line({"type": "step", "name": "one", "time": 1.0, "extra": 1}, _by_type())


def test_a_command_record_is_its_event_key_for_key():
    assert set(events.CommandLine.__annotations__) == {
        f.name for f in dataclasses.fields(CommandRecord)}
    assert set(events.ProcessLine.__annotations__) == {f.name for f in dataclasses.fields(Process)}
    rec = CommandRecord("ls", ["sh", "-c", "ls"], "/w", 0, "a\n", "", 1.0, 0.5,
                        processes=[Process(["ls"], -1, 0, exe="/bin/ls")])
    line = events.command_event(rec, ignored="launcher")
    assert list(line)[:2] == ["type", "command"] and list(line)[-1] == "ignored"
    _check_line(line, _by_type())
    assert "ignored" not in events.command_event(rec)
