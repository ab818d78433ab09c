"""Package sources on this machine for the install tests: an npm registry over loopback
HTTP and a directory of wheels. The real npm and pip install from them, so the installer is
tested end to end with no network (the real agents come from ./setup.sh's cache)."""

from __future__ import annotations

import base64
import csv
import hashlib
import http.server
import io
import json
import tarfile
import threading
import zipfile
from collections import Counter
from pathlib import Path


class NpmRegistry:
    """Serves packuments and tarballs of the packages `publish`ed to it; counts downloads."""

    def __init__(self) -> None:
        self.packuments: dict[str, dict] = {}
        self.tarballs: dict[str, bytes] = {}
        self.downloads: Counter[str] = Counter()
        registry = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802
                path = self.path.split("?")[0].replace("%2f", "/").replace("%2F", "/")
                if path in registry.tarballs:
                    registry.downloads[path.rsplit("/", 1)[-1]] += 1
                    self._send(200, registry.tarballs[path], "application/octet-stream")
                elif path.lstrip("/") in registry.packuments:
                    self._send(200, json.dumps(registry.packuments[path.lstrip("/")]).encode(),
                               "application/json")
                else:
                    self._send(404, b'{"error": "Not found"}', "application/json")

            def _send(self, status: int, body: bytes, kind: str) -> None:
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def publish(self, name: str, version: str, files: dict[str, str], bin: dict[str, str]) -> None:
        manifest = {"name": name, "version": version, "bin": bin}
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w:gz") as tar:
            for rel, text in {"package.json": json.dumps(manifest), **files}.items():
                data = text.encode()
                info = tarfile.TarInfo(f"package/{rel}")
                info.size, info.mode = len(data), 0o755 if rel in bin.values() else 0o644
                tar.addfile(info, io.BytesIO(data))
        tarball = buf.getvalue()
        path = f"/{name}/-/{name.rsplit('/', 1)[-1]}-{version}.tgz"
        self.tarballs[path] = tarball
        dist = {"tarball": self.url.rstrip("/") + path,
                "shasum": hashlib.sha1(tarball).hexdigest(),
                "integrity": "sha512-" + base64.b64encode(hashlib.sha512(tarball).digest()).decode()}
        self.packuments[name] = {"name": name, "dist-tags": {"latest": version},
                                 "versions": {version: {**manifest, "dist": dist}}}

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def wheel(directory: Path, name: str, version: str, module: str,
          scripts: dict[str, str] | None = None) -> Path:
    """A pure-Python wheel of one module `name` (source `module`), with console scripts
    {name: "module:function"}."""
    dist = f"{name.replace('-', '_')}-{version}"
    files = {f"{name.replace('-', '_')}.py": module,
             f"{dist}.dist-info/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
             f"{dist}.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: proctor-tests\n"
                                        "Root-Is-Purelib: true\nTag: py3-none-any\n"}
    if scripts:
        files[f"{dist}.dist-info/entry_points.txt"] = "[console_scripts]\n" + "".join(
            f"{k} = {v}\n" for k, v in scripts.items())
    record = io.StringIO()
    writer = csv.writer(record, lineterminator="\n")
    for rel, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=")
        writer.writerow([rel, f"sha256={digest.decode()}", len(text.encode())])
    writer.writerow([f"{dist}.dist-info/RECORD", "", ""])
    path = directory / f"{dist}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as z:
        for rel, text in files.items():
            z.writestr(rel, text)
        z.writestr(f"{dist}.dist-info/RECORD", record.getvalue())
    return path
