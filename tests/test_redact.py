"""Redaction happens before anything is cut, and a secret cut in part is masked too."""

from __future__ import annotations

import asyncio

import pytest

from proctor.proc import Capture
from proctor.redact import MIN_PIECE, Redactor
from proctor.text import cut

SECRETS = {"TOK": "tok-ABCDEF", "ID": "DEF-123456"}


@pytest.mark.parametrize("at", range(MIN_PIECE, 10))
def test_a_secret_straddling_a_head_cut_leaves_no_piece(at):
    text = "x" * (100 - at) + "tok-ABCDEF" + "y" * 50
    out = Redactor(SECRETS).text(cut(text, 100))
    assert out == "x" * (100 - at) + f"[REDACTED:TOK]... [{60 - at} more characters]"


@pytest.mark.parametrize("at", range(MIN_PIECE, 10))
def test_a_secret_straddling_a_tail_cut_leaves_no_piece(at):
    text = "x" * 50 + "DEF-123456" + "y" * (100 - at)
    out = Redactor(SECRETS).text(cut(text, 100, keep="tail"))
    assert out == f"[{60 - at} earlier characters] ...[REDACTED:ID]" + "y" * (100 - at)


def test_both_ends_cut_masks_both_pieces():
    text = "a" * 10 + "tok-ABCDEF" + "b" * 20 + "DEF-123456" + "c" * 10
    out = Redactor(SECRETS).text(cut(text, 30, keep="both"))
    assert "tok-" not in out and "3456" not in out
    assert out.count("[REDACTED:") == 2


def test_the_output_cap_note_is_a_cut_too():
    cap = Capture(asyncio.new_event_loop(), 1000, None)
    cap.pipe_data_received(1, b"q" * 995 + b"DEF-123456 and more")
    out = Redactor(SECRETS).text(cap.text(1))
    assert "DEF-1" not in out and out.endswith("[REDACTED:ID]\n[proctor: 14 more bytes not kept]")


def test_text_without_cuts_is_only_redacted():
    r = Redactor(SECRETS)
    assert r.text("tok-AB is not the secret; DEF- neither") == \
        "tok-AB is not the secret; DEF- neither"
    assert r.text("use tok-ABCDEF") == "use [REDACTED:TOK]"


@pytest.mark.parametrize("at", range(1, 10))
def test_redactor_cut_redacts_before_cutting_a_tail(at):
    # The secret straddles the cut: cutting first would keep its last `at` characters.
    text = "x" * 50 + "tok-ABCDEF" + "y" * (100 - at)
    out = Redactor(SECRETS).cut(text, 100, keep="tail")
    assert "tok-" not in out and "ABCDEF"[-min(at, 6):] not in out.replace("y", "")
    assert out.endswith("[REDACTED:TOK]" + "y" * (100 - at))  # the mark is kept whole


@pytest.mark.parametrize("at", range(1, 10))
def test_redactor_cut_redacts_before_cutting_a_head(at):
    text = "x" * (100 - at) + "DEF-123456" + "y" * 50
    out = Redactor(SECRETS).cut(text, 100, keep="head")
    assert out.startswith("x" * (100 - at) + "[REDACTED:ID]")
    assert "DEF-" not in out


def test_redactor_cut_of_short_text_only_redacts():
    assert Redactor(SECRETS).cut("a tok-ABCDEF b", 100) == "a [REDACTED:TOK] b"
