"""What a container per trial costs the engine, before the docker backend exists (issue 16).

One "trial" = create a per-trial network, start a container on it, run a first command
(`docker exec C true`), then remove container and network: the lifecycle the backend will
use. The image is a two-megabyte probe built from this host's own `sh` and libc, so the
figure is the engine's cost, not an image pull; or give an IMAGE already local (e.g. a Debian
base). Usage: `python bench/docker_overhead.py [N [IMAGE]]`.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

PROBE = "proctor-bench-probe:1"
FILES = ["/bin/sh", "/bin/sleep", "/bin/true", "/lib/x86_64-linux-gnu/libc.so.6",
         "/lib64/ld-linux-x86-64.so.2"]


def docker(*args: str, stdin: bytes | None = None) -> str:
    done = subprocess.run(["docker", *args], input=stdin, capture_output=True, check=True)
    return done.stdout.decode().strip()


def build_probe() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        for f in FILES:
            dest = Path(tmp) / f.lstrip("/")
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(Path(f).resolve().read_bytes())
            dest.chmod(0o755)
        tar = subprocess.run(["tar", "-C", tmp, "-c", "."], capture_output=True, check=True)
    docker("import", "-", PROBE, stdin=tar.stdout)


def one_trial(image: str) -> tuple[float, float]:
    """(seconds to the first command's end, seconds for the whole lifecycle)."""
    name = f"proctor-bench-{uuid.uuid4().hex[:12]}"
    start = time.perf_counter()
    docker("network", "create", "--label", "proctor.bench=1", name)
    box = docker("run", "-d", "--rm", "--label", "proctor.bench=1", "--network", name,
                 image, "/bin/sleep", "3600")
    docker("exec", box, "/bin/true")
    first = time.perf_counter() - start
    docker("rm", "-f", box)
    docker("network", "rm", name)
    return first, time.perf_counter() - start


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    image = sys.argv[2] if len(sys.argv) > 2 else PROBE
    if image == PROBE:
        build_probe()
    runs = [one_trial(image) for _ in range(n)]
    for label, values in (("create -> first command", [r[0] for r in runs]),
                          ("create -> first command -> removed", [r[1] for r in runs])):
        print(f"{label}: median {statistics.median(values) * 1000:.0f} ms, "
              f"max {max(values) * 1000:.0f} ms over {n}")
    if image == PROBE:
        docker("image", "rm", PROBE)


if __name__ == "__main__":
    main()
