"""sandbox/trace.py reads an E line's argv as json.loads reads it (the tracer's format,
exectrace.c): the fast reading of the tracer's plain `[...]` gives the same programs as
json.loads for every argv, and whatever else json.loads would take (odd spacing) or refuse
(a line cut short) is taken or refused as before."""

from __future__ import annotations

import json

import pytest

from proctor.sandbox.trace import _text, parse_trace


def _argv_of(tmp_path, argv_text: str) -> list[list[str]]:
    path = tmp_path / "trace"
    path.write_bytes(("S 6 1.5\n"
                      f"E 6 1.6 {argv_text}\n"
                      "X 6 0 1.7\n"
                      "Z 1.8\n").encode("latin-1"))
    return parse_trace(path).execs


ARGVS = [
    '["/bin/sh","-c","echo step-0 >> log.txt"]',
    '["printf","%s\\n","a \\"quoted\\" \\\\ word","tab\\there"]',
    '["echo","\\u00c3\\u00a9t\\u00c3\\u00a9"]',  # UTF-8 bytes, one character a byte: "été"
    '["x","\\u00ff\\u00fe"]',  # bytes that are not UTF-8
    '[]',
    '["a"] ',  # a space after: json.loads takes it
    ' ["a"]',  # two spaces before the argv
]


@pytest.mark.parametrize("argv_text", ARGVS)
def test_an_argv_reads_as_json_loads_reads_it(tmp_path, argv_text):
    expected = [_text(str(a)) for a in json.loads(argv_text)]
    assert _argv_of(tmp_path, argv_text) == [expected]


def test_utf8_in_an_argv_is_text():
    assert _text("\u00c3\u00a9t\u00c3\u00a9") == "été"


@pytest.mark.parametrize("cut", ['["/bin/sh","-c","ec', '["a"] junk', '', '["a",'])
def test_a_line_cut_short_or_not_json_is_skipped(tmp_path, cut):
    assert _argv_of(tmp_path, cut) == []
