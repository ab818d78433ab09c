"""Finding secret values in everything a trial produced, in the forms they leak in.

A `SecretScanner` knows each secret in plain text, URL-encoded (`%2B` and `+` forms), hex,
and base64 at each of the three alignments a value can take inside a longer base64 text —
each of its UTF-8 bytes and of its UTF-16 (little- and big-endian) bytes, so `iconv -t
UTF-16LE` or PowerShell's `-EncodedCommand` base64 hide nothing. It is fed bytes as they come
(`feed(stream, chunk)`), keeps just enough of each stream's tail to catch a value split across
chunks, and also scans the streams of a command interleaved in arrival order, so a value
printed half on stdout and half on stderr is found. Long texts (a written file of any size)
are fed piece by piece (`feed_text`), URL-decoded as they go, with no size limit.
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
    out = {quote(value, safe="").encode(), quote_plus(value, safe="").encode()}
    for raw in (value.encode(), value.encode("utf-16-le"), value.encode("utf-16-be")):
        out |= {raw, raw.hex().encode(), raw.hex().upper().encode()}
        for offset in range(3):
            # Inside a longer base64 text, `raw` may start at any of 3 byte offsets of a
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
        self._carry: dict[str, bytes] = {}  # per long text being URL-decoded: a cut `%X`
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
        """A whole text at once (a request, a name), also URL-decoded: encoders disagree on
        which characters to escape, so no single encoded form covers them all."""
        raw = data.encode("utf-8", "surrogateescape") if isinstance(data, str) else data
        self.feed_text(stream, raw)
        self.end_text(stream)

    def feed_text(self, stream: str, chunk: bytes) -> None:
        """The next piece of a long text (a file read in pieces): scanned as it is and
        URL-decoded (from the first `%` or `+` on; a `%XX` cut at the end of a piece waits
        for the next)."""
        if self._regex is None or not chunk:
            return
        if stream not in self._carry and (b"%" in chunk or b"+" in chunk):
            # Decoded, the text so far is the raw text: its tail starts the decoded streams.
            self._carry[stream] = b""
            for i in (1, 2):
                for suffix in ("", "\0nows"):
                    self._tails[f"{stream}\0{i}{suffix}"] = self._tails.get(
                        f"{stream}\0raw{suffix}", b"")
        self.feed(f"{stream}\0raw", chunk)
        if stream not in self._carry:
            return
        text = self._carry.get(stream, b"") + chunk
        cut = text.rfind(b"%", max(0, len(text) - 2))
        head, self._carry[stream] = (text[:cut], text[cut:]) if cut >= 0 else (text, b"")
        self.feed(f"{stream}\0{1}", unquote_to_bytes(head))
        self.feed(f"{stream}\0{2}", unquote_to_bytes(head.replace(b"+", b" ")))

    def end_text(self, stream: str) -> None:
        """A long text is over (or jumps: a hole in a file)."""
        rest = self._carry.pop(stream, b"")
        if rest:
            self.feed(f"{stream}\0{1}", rest)
            self.feed(f"{stream}\0{2}", rest)
        for i in ("raw", 1, 2):
            self.end(f"{stream}\0{i}")

    def scan_all(self, items: Iterable[tuple[str, bytes | str]]) -> set[str]:
        for stream, data in items:
            self.scan(stream, data)
        return self.found
