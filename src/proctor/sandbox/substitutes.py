"""Installer substitutes: proctor answers a few download URLs itself, from package registries.

A verifier that runs `curl -LsSf https://astral.sh/uv/0.9.7/install.sh | sh` needs a host a
machine whose only way out is the package registries (PyPI, npm, Debian) cannot reach. The
trial's egress proxy (egress.py) sees the request and, for a URL a substitute covers, answers
it itself: TLS with a certificate from proctor's own CA (which the container trusts:
docker/trust.py), and a body with the same effect as the original, built from a registry. Nothing
in the task changes. A host that is covered is never contacted.

Built in: uv's installer (`https://astral.sh/uv[/VERSION]/install.sh`) installs the same uv
from PyPI's wheel, and makes sure a `python3` is there for it (from the image's package
manager) rather than letting uv download one from GitHub. proctor.toml adds more:

    [[substitutes]]
    url = "https://example.com/tool/install.sh"   # exact, or ending in * for a prefix
    file = "substitutes/tool-install.sh"           # relative to proctor.toml's directory

The CA (`$PROCTOR_CACHE/substitutes/ca.crt`) and each host's certificate are made once with
`openssl`; without openssl there are no substitutes (and the original URL is tried).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import io
import json
import os
import platform
import re
import ssl
import subprocess
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from proctor.config import SubstituteRule

PYPI = os.environ.get("PROCTOR_PYPI_URL", "https://pypi.org").rstrip("/")
MAX_REQUEST_BYTES = 64 * 1024
_UV_INSTALLER = re.compile(r"^/uv/(?:(?P<v>[0-9][A-Za-z0-9.+-]*|latest)/)?install\.sh$")
_UV_BINARY = re.compile(r"^/uv/(?P<v>[0-9][A-Za-z0-9.+-]*)/(?P<bin>uvx?)$")
_lock = threading.Lock()


def cache_dir() -> Path:
    from proctor.sandbox.cache import cache_dir as base

    return base() / "substitutes"


def ca_pem() -> bytes | None:
    """proctor's substitutes CA certificate, made on first use; None without openssl."""
    d = cache_dir()
    cert = d / "ca.crt"
    with _lock:
        if not cert.exists():
            try:
                d.mkdir(parents=True, exist_ok=True)
                _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "3650",
                         "-subj", "/CN=proctor installer substitutes CA",
                         "-addext", "basicConstraints=critical,CA:TRUE",
                         "-addext", "keyUsage=critical,keyCertSign,cRLSign",
                         "-keyout", str(d / "ca.key"), "-out", str(d / ".ca.crt"))
                os.chmod(d / "ca.key", 0o600)
                os.replace(d / ".ca.crt", cert)
            except (OSError, subprocess.CalledProcessError):
                return None
    return cert.read_bytes()


def _openssl(*args: str) -> None:
    subprocess.run(["openssl", *args], check=True, capture_output=True, timeout=60)


def _leaf(host: str) -> tuple[Path, Path]:
    """(certificate, key) for `host`, signed by the CA; made once."""
    d = cache_dir() / "hosts"
    safe = re.sub(r"[^A-Za-z0-9.-]", "_", host)
    cert, key = d / f"{safe}.crt", d / f"{safe}.key"
    with _lock:
        if not cert.exists():
            d.mkdir(parents=True, exist_ok=True)
            ca = cache_dir()
            ext = d / f"{safe}.ext"
            ext.write_text(f"subjectAltName=DNS:{host}\nbasicConstraints=CA:FALSE\n"
                           "extendedKeyUsage=serverAuth\n")
            _openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", f"/CN={host}",
                     "-keyout", str(key), "-out", str(d / f"{safe}.csr"))
            _openssl("x509", "-req", "-in", str(d / f"{safe}.csr"), "-CA", str(ca / "ca.crt"),
                     "-CAkey", str(ca / "ca.key"), "-CAcreateserial", "-days", "825",
                     "-extfile", str(ext), "-out", str(d / f".{safe}.crt"))
            os.replace(d / f".{safe}.crt", cert)
    return cert, key


class Substitutes:
    """The URLs a run answers itself (built-in ones and proctor.toml's `[[substitutes]]`)."""

    def __init__(self, rules: list[SubstituteRule] | None = None, base_dir: str = "."):
        self.files: list[tuple[str, Path]] = []  # (url or prefix*, file)
        for rule in rules or []:
            if rule.url and rule.file:
                self.files.append((rule.url, Path(base_dir, os.path.expanduser(rule.file))))
        self.hosts = {"astral.sh"} | {_host(u) for u, _ in self.files}

    def covers(self, host: str) -> bool:
        return host.lower() in self.hosts and ca_pem() is not None

    async def serve(self, method: str, host: str, port: int, reader: asyncio.StreamReader,
                    writer: asyncio.StreamWriter, first: list[str] | None) -> None:
        """Answer one request for `host`: over TLS after a CONNECT, else the plain request
        already read (`first`: its lines)."""
        try:
            tls = None
            if method == "CONNECT":
                cert, key = await asyncio.to_thread(_leaf, host)  # before the client speaks
                writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
                await writer.drain()
                ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
                ctx.load_cert_chain(cert, key)
                tls = _Tls(ctx, reader, writer)
                await asyncio.wait_for(tls.handshake(), 30)
                first = (await asyncio.wait_for(tls.head(), 30)).decode("latin-1").split("\r\n")
            assert first is not None
            verb, _, rest = first[0].partition(" ")
            path = re.sub(r"^[a-z]+://[^/]+", "", rest.rsplit(" ", 1)[0]) or "/"
            scheme = "https" if tls else "http"
            url = f"{scheme}://{host}{'' if port in (80, 443) else f':{port}'}{path}"
            body = await asyncio.to_thread(self.answer, url)
            status = "200 OK" if body is not None else "404 Not Found"
            payload = body if body is not None else f"proctor: no substitute for {url}\n".encode()
            out = (f"HTTP/1.1 {status}\r\nContent-Type: application/octet-stream\r\n"
                   f"Content-Length: {len(payload)}\r\nConnection: close\r\n\r\n".encode()
                   + (payload if verb != "HEAD" else b""))
            if tls:
                await tls.send(out)
            else:
                writer.write(out)
                await writer.drain()
        except (OSError, ssl.SSLError, ConnectionError, TimeoutError, ValueError,
                subprocess.CalledProcessError):
            pass  # the client sees the connection end; the trace has the request
        finally:
            with contextlib.suppress(OSError, RuntimeError):
                writer.close()

    def answer(self, url: str) -> bytes | None:
        """The body proctor answers `url` with, or None (404)."""
        for pattern, file in self.files:
            if url == pattern or (pattern.endswith("*") and url.startswith(pattern[:-1])):
                return file.read_bytes() if file.is_file() else None
        if _host(url) == "astral.sh":
            path = url.split("astral.sh", 1)[1]
            if m := _UV_INSTALLER.match(path):
                return uv_installer(m.group("v") or "latest").encode()
            if m := _UV_BINARY.match(path):
                return uv_binary(m.group("v"), m.group("bin"))
        return None


class _Tls:
    """The server side of TLS over a stream already open (memory BIOs: bytes the client sent
    right after the CONNECT answer are not lost, as they could be with start_tls)."""

    def __init__(self, ctx: ssl.SSLContext, reader: asyncio.StreamReader,
                 writer: asyncio.StreamWriter):
        self.inc, self.out = ssl.MemoryBIO(), ssl.MemoryBIO()
        self.obj = ctx.wrap_bio(self.inc, self.out, server_side=True)
        self.reader, self.writer = reader, writer

    async def _flush(self) -> None:
        data = self.out.read()
        if data:
            self.writer.write(data)
            await self.writer.drain()

    async def _feed(self) -> None:
        await self._flush()
        data = await self.reader.read(65536)
        if not data:
            raise ConnectionError("the client closed the connection")
        self.inc.write(data)

    async def handshake(self) -> None:
        while True:
            try:
                self.obj.do_handshake()
                break
            except ssl.SSLWantReadError:
                await self._feed()
        await self._flush()

    async def head(self) -> bytes:
        """The request line and headers."""
        data = b""
        while b"\r\n\r\n" not in data:
            if len(data) > MAX_REQUEST_BYTES:
                raise ValueError("request header too large")
            try:
                data += self.obj.read(65536)
            except ssl.SSLWantReadError:
                await self._feed()
        return data

    async def send(self, data: bytes) -> None:
        self.obj.write(data)
        await self._flush()
        with contextlib.suppress(ssl.SSLError):
            self.obj.unwrap()
        await self._flush()


def _host(url: str) -> str:
    return re.sub(r"^[a-z]+://", "", url).split("/", 1)[0].split(":", 1)[0].lower()


def uv_installer(version: str) -> str:
    """A stand-in for uv's install.sh: same place, same `env` file, uv from PyPI."""
    version = version if version != "latest" else _latest("uv")
    return f"""#!/bin/sh
# uv {version}, installed by proctor's substitute for astral.sh's installer: the same
# binaries, from PyPI's uv wheel (docs/harbor.md#downloads-at-verify-time).
set -eu
dest="${{UV_INSTALL_DIR:-${{XDG_BIN_HOME:-$HOME/.local/bin}}}}"
base="https://astral.sh/uv/{version}"
fetch() {{
  if command -v curl >/dev/null 2>&1; then curl -fsSL "$1" -o "$2"; else wget -q "$1" -O "$2"; fi
}}
mkdir -p "$dest"
for b in uv uvx; do
  fetch "$base/$b" "$dest/$b.part" && chmod 755 "$dest/$b.part" && mv "$dest/$b.part" "$dest/$b"
done
cat > "$dest/env" <<ENV
#!/bin/sh
case ":\\${{PATH}}:" in *:"$dest":*) ;; *) export PATH="$dest:\\$PATH" ;; esac
ENV
# uv uses a python3 that is there instead of downloading one (from a host out of reach).
if ! command -v python3 >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
  if command -v apt-get >/dev/null 2>&1; then
    ls /var/lib/apt/lists/*_Packages >/dev/null 2>&1 || apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3 >/dev/null
  elif command -v apk >/dev/null 2>&1; then apk add --no-cache python3 >/dev/null
  elif command -v dnf >/dev/null 2>&1; then dnf install -y python3 >/dev/null
  fi
fi
echo "installing to $dest"
echo "everything's installed!"
"""


def uv_binary(version: str, name: str) -> bytes | None:
    """`uv` or `uvx` of a version, from PyPI's static (musllinux) wheel; cached."""
    d = cache_dir() / f"uv-{version}-{platform.machine()}"
    target = d / name
    if target.exists():
        return target.read_bytes()
    with _lock:
        if not target.exists():
            wheel = _wheel("uv", version)
            if wheel is None:
                return None
            import zipfile

            d.mkdir(parents=True, exist_ok=True)
            with zipfile.ZipFile(io.BytesIO(wheel)) as z:
                for member in z.namelist():
                    base = member.rsplit("/", 1)[-1]
                    if ".data/scripts/" in member and base in ("uv", "uvx"):
                        (d / f".{base}").write_bytes(z.read(member))
                        os.replace(d / f".{base}", d / base)
    return target.read_bytes() if target.exists() else None


def _simple(project: str) -> dict[str, Any]:
    """PyPI's simple index of a project, as JSON (PEP 691): files, hashes, versions."""
    import urllib.request  # here, not at import: a trial that fetches nothing pays nothing

    req = urllib.request.Request(f"{PYPI}/simple/{project}/",
                                 headers={"Accept": "application/vnd.pypi.simple.v1+json"})
    with urllib.request.urlopen(req, timeout=60) as r:
        index: dict[str, Any] = json.load(r)
    return index


def _latest(project: str) -> str:
    import urllib.request

    try:
        with urllib.request.urlopen(f"{PYPI}/pypi/{project}/json", timeout=60) as r:
            return str(json.load(r)["info"]["version"])
    except OSError:
        versions = _simple(project).get("versions") or []
        if not versions:
            raise
        return str(versions[-1])


def _wheel(project: str, version: str) -> bytes | None:
    """The static Linux wheel of this machine's architecture, checked against PyPI's digest."""
    import urllib.request

    arch = {"amd64": "x86_64", "arm64": "aarch64"}.get(platform.machine().lower(),
                                                        platform.machine().lower())
    for f in _simple(project)["files"]:
        name = f["filename"]
        if name.startswith(f"{project}-{version}-") and "musllinux" in name and \
                name.endswith(f"_{arch}.whl"):
            with urllib.request.urlopen(f["url"], timeout=300) as r:
                data: bytes = r.read()
            if hashlib.sha256(data).hexdigest() != f["hashes"]["sha256"]:
                raise OSError(f"{name}: sha256 does not match PyPI's")
            return data
    return None
