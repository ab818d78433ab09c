"""proctor.jsontext: an encoder made once writes what json.dumps writes, byte for byte, with
every option combination proctor's writers use (the trace, results.jsonl's signed body,
results.json's records)."""

from __future__ import annotations

import json
import math
from pathlib import PurePosixPath

import pytest

from proctor import jsontext

OPTIONS = [
    {},
    {"default": str},
    {"sort_keys": True, "separators": (",", ":"), "ensure_ascii": False, "default": str},
    {"sort_keys": True},
    {"ensure_ascii": False},
]

LINE = {"type": "command", "command": "echo step-0 >> log.txt", "argv": ["sh", "-c", "echo"],
        "exit_code": 0, "stdout": "", "started_at": 1796627310.622467, "processes": [
            {"argv": ["/bin/sh"], "parent": -1, "exit_code": 0, "exe": "/usr/bin/dash"}],
        "tool_call_id": None, "time": 1796627310.623464}
VALUES = [
    "plain", "", "é ü 漢字 😀", "\udcff lone surrogate", "quote \" backslash \\ \n\t\x00\x1f",
    0, -1, 2**70, 0.1, 1e-7, 1e300, -0.0, 3.0, math.inf, -math.inf, math.nan, True, False, None,
    [], {}, (1, "two"), [[[]]],
    {"b": 1, "a": [1, 2.5, {"z": None, "y": "é"}], "c": {"nested": {"deep": True}}},
    LINE,
    {1: "int key", 2.5: "float key", None: "none key"}, {False: "bool key", "s": 1},
]


@pytest.mark.parametrize("options", OPTIONS, ids=lambda o: ",".join(sorted(o)) or "defaults")
@pytest.mark.parametrize("c_encoder", [True, False], ids=["c", "python"])
def test_it_writes_what_json_dumps_writes(options, c_encoder, monkeypatch):
    if not c_encoder:  # an interpreter without json's C accelerator
        monkeypatch.setattr(jsontext, "_c_make_encoder", None)
    encode = jsontext.encoder(**options)
    for value in VALUES:
        assert _outcome(encode, value) == _outcome(lambda v: json.dumps(v, **options), value)
    for _ in range(3):  # made once, used again and again: the same text each time
        assert encode(LINE) == json.dumps(LINE, **options)


def _outcome(write, value):
    """The text written, or the error (mixed keys cannot be sorted)."""
    try:
        return write(value)
    except TypeError as e:
        return type(e)


def test_what_json_lacks_is_written_by_default_else_refused_as_json_refuses_it():
    odd = {"path": PurePosixPath("/work/a"), "set": {1}, "bytes": b"x"}
    assert jsontext.encoder(default=str)(odd) == json.dumps(odd, default=str)
    encode = jsontext.encoder()
    with pytest.raises(TypeError, match="not JSON serializable"):
        encode(odd)
    # an error half-way leaves nothing behind: the next value is written whole
    assert encode({"a": [1, {"b": 2}]}) == '{"a": [1, {"b": 2}]}'


def test_mixed_keys_cannot_be_sorted_as_json_cannot():
    with pytest.raises(TypeError):
        json.dumps({1: "a", "b": 2}, sort_keys=True)
    with pytest.raises(TypeError):
        jsontext.encoder(sort_keys=True)({1: "a", "b": 2})


def test_a_circular_structure_is_refused_not_written():
    loop: list[object] = []
    loop.append(loop)
    with pytest.raises((ValueError, RecursionError)):
        jsontext.encoder(default=str)(loop)


def test_the_encoder_is_made_once_not_per_line(monkeypatch):
    made = []
    real = jsontext._c_make_encoder
    assert real is not None, "json's C accelerator is part of CPython"
    monkeypatch.setattr(jsontext, "_c_make_encoder", lambda *a: made.append(a) or real(*a))
    encode = jsontext.encoder(default=str)
    lines = [encode(LINE) for _ in range(5)]
    assert len(made) == 1 and lines == [json.dumps(LINE, default=str)] * 5
