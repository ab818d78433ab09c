"""Finding secret values in everything a trial produced, in the forms they leak in.

A `SecretScanner` knows each secret in plain text, URL-encoded (`%2B` and `+` forms), hex,
and base64 at each of the three alignments a value can take inside a longer base64 text.
It is fed bytes as they come (`feed(stream, chunk)`), keeps just enough of each stream's
tail to catch a value split across chunks, and also scans the streams of a command
interleaved in arrival order, so a value printed half on stdout and half on stderr is found.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Iterable, Mapping
from urllib.parse import quote, quote_plus, unquote_to_bytes

INTERLEAVED = "interleaved"
_MIN_FORM = 4  # shorter forms (a 1-character secret's base64 core) would match anything
_WHITESPACE = b" \t\r\n"


def forms(value: str) -> set[bytes]:
    """Every byte string whose presence means `value` leaked."""
    raw = value.encode()
    out = {raw, quote(value, safe="").encode(), quote_plus(value, safe="").encode(),
           raw.hex().encode(), raw.hex().upper().encode()}
    for offset in range(3):
        # Inside a longer base64 text, `value` may start at any of 3 byte offsets of a
        # 3-byte group; only the groups made wholly of its bytes are fixed.
        encoded = base64.b64encode(b"\0" * offset + raw)
        start = 4 if offset else 0
        end = 4 * ((offset + len(raw)) // 3)
        core = encoded[start:end]
        if len(core) >= _MIN_FORM:
            out.add(core)
            out.add(core.replace(b"+", b"-").replace(b"/", b"_"))  # base64url
    return {f for f in out if len(f) >= _MIN_FORM}


class SecretScanner:
    def __init__(self, secrets: Mapping[str, str]):
        self._names: dict[bytes, str] = {}
        for name, value in secrets.items():
            if value and len(value) >= 4:
                for form in forms(value):
                    self._names.setdefault(form, name)
        longest = max((len(f) for f in self._names), default=0)
        self._keep = max(longest - 1, 0)
        self._regex = re.compile(b"|".join(re.escape(f) for f in sorted(
            self._names, key=len, reverse=True))) if self._names else None
        self._tails: dict[str, bytes] = {}
        self.found: set[str] = set()

    def __bool__(self) -> bool:
        return self._regex is not None

    def feed(self, stream: str, chunk: bytes) -> None:
        """More bytes of a named stream ("stdout", "stderr", a file path, ...). Also scanned
        without whitespace: `base64` and `od` wrap their output in lines."""
        if self._regex is None or not chunk:
            return
        self._search(stream, chunk)
        self._search(stream + "\0nows", chunk.translate(None, _WHITESPACE))

    def _search(self, stream: str, chunk: bytes) -> None:
        data = self._tails.get(stream, b"") + chunk
        for m in self._regex.finditer(data):  # type: ignore[union-attr]
            self.found.add(self._names[m.group(0)])
        self._tails[stream] = data[-self._keep:] if self._keep else b""

    def feed_output(self, fd: int, chunk: bytes) -> None:
        """A command's output as it arrives: each stream, and both interleaved."""
        self.feed("stdout" if fd == 1 else "stderr", chunk)
        self.feed(INTERLEAVED, chunk)

    def end(self, stream: str) -> None:
        """A stream is over: what follows it is not its continuation."""
        self._tails.pop(stream, None)
        self._tails.pop(stream + "\0nows", None)

    def scan(self, stream: str, data: bytes | str) -> None:
        """A whole text at once (a file, a request), also URL-decoded: encoders disagree on
        which characters to escape, so no single encoded form covers them all."""
        raw = data.encode() if isinstance(data, str) else data
        texts = [raw]
        if b"%" in raw:
            texts.append(unquote_to_bytes(raw))
            texts.append(unquote_to_bytes(raw.replace(b"+", b" ")))
        for i, text in enumerate(texts):
            self.feed(f"{stream}\0{i}", text)
            self.end(f"{stream}\0{i}")

    def scan_all(self, items: Iterable[tuple[str, bytes | str]]) -> set[str]:
        for stream, data in items:
            self.scan(stream, data)
        return self.found
