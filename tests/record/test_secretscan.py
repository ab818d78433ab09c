"""SecretScanner on long texts fed in pieces (written files of any size, issue 25.5)."""

from __future__ import annotations

import base64
from urllib.parse import quote

import pytest

from proctor.record.secretscan import SecretScanner

TOKEN = "tok/AB+CD=EF&gh-123456"
ENCODED = quote(TOKEN, safe="").encode()


def _found(pieces: list[bytes]) -> set[str]:
    scanner = SecretScanner({"TOKEN": TOKEN})
    for piece in pieces:
        scanner.feed_text("file", piece)
    scanner.end_text("file")
    return scanner.found


@pytest.mark.parametrize("pieces", [
    [b"x" * 10 + ENCODED[:5], ENCODED[5:]],  # a %XX cut after the %
    [b"x" * 10 + ENCODED[:6], ENCODED[6:]],  # ... after its first digit
    [b"abc" + TOKEN.encode()[:3], TOKEN.encode()[3:]],
    [b"plain start " + ENCODED[:3], ENCODED[3:]],  # decoding starts mid-secret
    [TOKEN.encode("utf-16-le")],
    [b"\xff\xfe" + TOKEN.encode("utf-16-le")[:7], TOKEN.encode("utf-16-le")[7:]],
    [TOKEN.encode("utf-16-be")],
    [base64.b64encode(TOKEN.encode("utf-16-le"))],
    [TOKEN.encode("utf-16-le").hex().encode()],
])
def test_a_secret_split_across_pieces_in_any_form_is_found(pieces):
    assert _found(pieces) == {"TOKEN"}


def test_nothing_is_found_where_nothing_is():
    assert _found([b"nothing %20 here + there", b"%2"]) == set()


def test_an_ended_text_is_not_continued():
    scanner = SecretScanner({"TOKEN": TOKEN})
    scanner.feed_text("f", TOKEN.encode()[:5])
    scanner.end_text("f")  # e.g. a hole in the file between the two pieces
    scanner.feed_text("f", TOKEN.encode()[5:])
    scanner.end_text("f")
    assert scanner.found == set()


def test_names_that_are_not_utf8_are_scanned():
    scanner = SecretScanner({"TOKEN": TOKEN})
    scanner.scan("name", f"dir\udcff/{TOKEN}")
    assert scanner.found == {"TOKEN"}
