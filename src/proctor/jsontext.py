"""JSON text exactly as `json.dumps` writes it, from an encoder made once.

`json.dumps(obj, **options)` builds a JSONEncoder and then a C encoder for every call (any
option but the defaults: the first; even the defaults: the second), about a third of what a
small line costs. The writers called for every trial and every agent turn (trace and audit
lines, results.jsonl, its results.json text) make theirs once here instead: the same C
encoder json.dumps would make, the same text (tests/test_jsontext.py compares them).

The one difference: no check for circular references (json's `check_circular`), whose
markers live in the encoder and would be left set by an error half-way through. A circular
structure still cannot be written: the recursion limit stops it (RecursionError instead
of ValueError); proctor's records never hold one.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

_c_make_encoder: Any
try:
    from _json import make_encoder as _c_make_encoder
except ImportError:  # an interpreter without json's C accelerator: json's own way
    _c_make_encoder = None


def encoder(*, sort_keys: bool = False, separators: tuple[str, str] | None = None,
            ensure_ascii: bool = True,
            default: Callable[[Any], Any] | None = None) -> Callable[[Any], str]:
    """A function writing what `json.dumps(obj, sort_keys=..., separators=...,
    ensure_ascii=..., default=...)` writes (no indent: one line)."""
    py = json.JSONEncoder(sort_keys=sort_keys, separators=separators,
                          ensure_ascii=ensure_ascii, default=default, check_circular=False)
    if _c_make_encoder is None:
        return py.encode
    strings = json.encoder.encode_basestring_ascii if ensure_ascii else \
        json.encoder.encode_basestring
    # The arguments json.JSONEncoder.iterencode gives it, markers None (no circular check).
    c = _c_make_encoder(None, py.default, strings, None, py.key_separator, py.item_separator,
                        sort_keys, False, True)

    def encode(obj: Any) -> str:
        return "".join(c(obj, 0))

    return encode
