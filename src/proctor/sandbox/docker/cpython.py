"""A CPython the stand-in's Debian release does not ship, built into /usr/local.

`python:3.13-slim-bookworm` is bookworm (its compiler, its C library) with CPython 3.13 built
from source into /usr/local: that is how the official image is made. Bookworm's own Python
is 3.11, and Terminal-Bench's verifiers ask for 3.13 (`uvx -p 3.13 …`), which uv would
otherwise download from GitHub. So a recipe may name `python = "3.13"`: its source comes
from Debian's own source package (`python3.13` of the release that has it, from Debian's
mirror, as every other package), is built on the stand-in's release, and installed as the
official image installs it (`python3`, `pip` in /usr/local/bin, first on PATH; Debian's
/usr/bin/python3 stays). The build dependencies are removed afterwards; the libraries the
interpreter links stay.
"""

from __future__ import annotations

import json

# Where Debian has each CPython as a source package (the release whose default it is).
SOURCE = {"3.9": "bullseye", "3.11": "bookworm", "3.13": "trixie"}
# What the build needs, and what the interpreter keeps using (bookworm's names; the same in
# bullseye and trixie for these).
BUILD_DEPS = ["build-essential", "dpkg-dev", "libbz2-dev", "libexpat1-dev", "libffi-dev",
              "libgdbm-dev", "liblzma-dev", "libncursesw5-dev", "libreadline-dev",
              "libsqlite3-dev", "libssl-dev", "uuid-dev", "xz-utils", "zlib1g-dev"]


# A CPython put beside a release's own Python (`also_python`): the bookworm stand-in's build
# (glibc 2.36; runs on a release with the same or a newer one), with the libraries it links, by
# that release's package names. Terminal-Bench's verifiers run `uvx -p 3.13` on ubuntu:24.04
# (Python 3.12) and python:3.11-slim: uv downloads a 3.13 from GitHub (python-build-standalone),
# out of reach here, unless a `python3.13` is on PATH.
BESIDE = {"bookworm": ["libbz2-1.0", "libffi8", "libgdbm6", "liblzma5", "libncursesw6",
                       "libreadline8", "libsqlite3-0", "libssl3", "libtinfo6", "libuuid1",
                       "zlib1g"],
          "noble": ["libbz2-1.0", "libffi8", "libgdbm6t64", "liblzma5", "libncursesw6",
                    "libreadline8t64", "libsqlite3-0", "libssl3t64", "libtinfo6", "libuuid1",
                    "zlib1g"]}
DONOR = "bookworm"


def beside_lines(version: str, donor: str, suite: str) -> tuple[str, list[str]]:
    """(the donor stage's FROM line, the lines after the stand-in's FROM) that put `python
    VERSION` (only that name: the release's `python3` stays its own) into /usr/local."""
    py = f"python{version}"
    libs = " ".join(BESIDE[suite])
    return f"FROM {donor} AS proctor-python", [
        f"COPY --from=proctor-python /usr/local/bin/{py} /usr/local/bin/{py}",
        f"COPY --from=proctor-python /usr/local/lib/lib{py}.so.1.0 /usr/local/lib/",
        f"COPY --from=proctor-python /usr/local/lib/{py} /usr/local/lib/{py}",
        "RUN export DEBIAN_FRONTEND=noninteractive && /usr/bin/apt-get update -qq && "
        f"/usr/bin/apt-get install -y -qq --no-install-recommends {libs} >/dev/null && "
        "rm -rf /var/lib/apt/lists/* && ldconfig && "
        f"/usr/local/bin/{py} -c 'import ssl, sqlite3, ctypes, lzma, bz2, zlib, readline'"]


def known(version: str) -> bool:
    return version in SOURCE


def run_line(version: str) -> str:
    """One RUN line (exec form): fetch Debian's source of CPython `version`, build, install, clean up."""
    release = SOURCE[version]
    deps = " ".join(BUILD_DEPS)
    script = f"""set -e
export DEBIAN_FRONTEND=noninteractive
echo 'deb-src http://deb.debian.org/debian {release} main' > /etc/apt/sources.list.d/proctor-python-src.list
apt-get update -qq
new=$(for p in {deps}; do dpkg -s $p >/dev/null 2>&1 || echo $p; done)
/usr/bin/apt-get install -y -qq --no-install-recommends {deps} >/dev/null
mkdir -p /usr/src/python && cd /usr/src/python
apt-get source --download-only -qq python{version}/{release} 2>/dev/null
tar xf python{version}_*.orig.tar.xz --strip-components=1
./configure --prefix=/usr/local --enable-shared --with-ensurepip=install --without-static-libpython LDFLAGS=-Wl,-rpath=/usr/local/lib >/dev/null
make -j"$(nproc)" >/dev/null
make install >/dev/null
cd / && rm -rf /usr/src/python /etc/apt/sources.list.d/proctor-python-src.list
for src in idle3 pip3 pydoc3 python3 python3-config; do dst=$(echo $src | tr -d 3); [ -e /usr/local/bin/$dst ] || ln -s $src /usr/local/bin/$dst; done
find /usr/local -type f -executable -not -name '*tkinter*' -exec ldd '{{}}' ';' 2>/dev/null | awk '/=>/ {{ so = $(NF-1); if (index(so, "/usr/local/") == 1) next; gsub("^/(usr/)?", "", so); printf "*%s\\n", so }}' | sort -u | xargs -r dpkg-query --search 2>/dev/null | cut -d: -f1 | sort -u | xargs -r apt-mark manual >/dev/null
/usr/bin/apt-get purge -y -qq $new >/dev/null && /usr/bin/apt-get autoremove -y -qq --purge >/dev/null
rm -rf /var/lib/apt/lists/*
find /usr/local -depth -type d -name __pycache__ -exec rm -rf '{{}}' +
/usr/local/bin/python{version} -c 'import ssl, sqlite3, ctypes, lzma, bz2, zlib, readline'"""
    return json.dumps(["bash", "-c", script])  # RUN's exec form: JSON, so lines stay lines
