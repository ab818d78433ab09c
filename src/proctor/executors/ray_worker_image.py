"""`proctor ray worker-image`: a container image that is a Ray worker node for proctor — the
shape of a KubeRay RayCluster worker pod (docs/running.md#kuberay).

Built here, from what is here, without a registry:

* the base is proctor's own Debian image (docker/images.py: mmdebstrap + docker import,
  Python 3.11 and the tools tasks use), or `--base IMAGE` with this Python's minor version;
* one layer of Debian packages: bubblewrap (the local backend's namespaces) and the docker
  client alone (taken out of Debian's docker.io package, so the node can drive a mounted
  engine socket);
* a venv, /opt/proctor, with exactly this environment's Ray, proctor's dependencies and
  proctor itself, as wheels repacked from what is installed here (ray_wheels.py): the head
  and its nodes must run the same Ray, Python minor and proctor;
* proctor's C programs, built here (static), in the image's cache dir, so the node needs no
  compiler;
* this machine's extra CAs (trust.host_pems: a lab's TLS-inspecting proxy), as proctor's
  stand-in images have them: the node and its trials reach the registries as the head does.

The dependencies' layer is tagged by a digest of its inputs and reused; a new proctor only
adds a small layer on top. The default command runs `ray start --block --address
$RAY_ADDRESS` with whatever options follow.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
import tempfile
from pathlib import Path

from proctor.errors import SetupError

REPO = "proctor-ray-worker"
DEPS = "proctor-ray-deps"
RECIPE = 1  # bump when the way the image is built changes
VENV = "/opt/proctor"
NATIVE = "/opt/proctor-native"  # the C programs, copied into $PROCTOR_CACHE at start
CACHE = "/var/cache/proctor"
PACKAGES = ["bubblewrap"]
_APT = ("set -e; export DEBIAN_FRONTEND=noninteractive; apt-get update -qq; "
        "apt-get install -y -qq --no-install-recommends {packages} >/dev/null; "
        # the docker client alone (25 MB), not the daemon and containerd docker.io brings
        "cd /tmp; apt-get download -qq docker.io; "
        "dpkg-deb --fsys-tarfile docker.io_*.deb | tar -xO ./usr/bin/docker > /usr/local/bin/docker; "
        "chmod 755 /usr/local/bin/docker; rm -f docker.io_*.deb; apt-get clean; "
        "rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin")
ENTRY = f"""#!/bin/sh
# proctor's Ray worker node: with no command (or options only), `ray start` in the
# foreground, joining $RAY_ADDRESS; any other command runs as given (KubeRay gives its own).
set -e
cache="${{PROCTOR_CACHE:-{CACHE}}}"
mkdir -p "$cache" && cp -n {NATIVE}/* "$cache"/ 2>/dev/null || true
if [ $# -eq 0 ] || [ "${{1#-}}" != "$1" ]; then
  exec ray start --block --address "${{RAY_ADDRESS:?set RAY_ADDRESS=HEAD_IP:PORT (the head of the Ray cluster)}}" "$@"
fi
exec "$@"
"""


def _note(text: str, quiet: bool) -> None:
    if not quiet:
        print(f"proctor: {text}", file=sys.stderr, flush=True)


def _digest(*parts: object) -> str:
    return hashlib.sha256(repr(parts).encode()).hexdigest()[:12]


def _docker(*args: str, stdin: bytes | None = None, timeout: float = 1800) -> str:
    from proctor.dockercli import docker_sync

    done = docker_sync(*args, stdin=stdin, timeout=timeout)
    if done.exit_code != 0:
        from proctor.dockercli import is_advice

        lines = [ln for ln in (done.stdout + done.stderr).splitlines()
                 if ln.strip() and not is_advice(ln) and "legacy builder" not in ln
                 and "buildx" not in ln]
        raise SetupError(f"the Ray worker image: `docker {args[0]}` failed; it said:\n"
                         + "\n".join("  " + ln[:300] for ln in lines[-15:]))
    return done.stdout.strip()


def _python() -> str:
    return f"python{sys.version_info.major}.{sys.version_info.minor}"


def _static(path: Path) -> bool:
    """No program interpreter (PT_INTERP): runs in any image."""
    import struct

    data = path.read_bytes()
    if data[:4] != b"\x7fELF" or data[4] != 2:  # 64-bit only
        return False
    phoff, = struct.unpack_from("<Q", data, 32)
    phentsize, phnum = struct.unpack_from("<HH", data, 54)
    return all(struct.unpack_from("<I", data, phoff + i * phentsize)[0] != 3 for i in range(phnum))


def _native(into: Path) -> list[str]:
    """proctor's C programs built here into `into`; the names of those that are not static
    (the image then needs a compiler)."""
    from proctor.sandbox import native

    into.mkdir()
    dynamic = []
    for name in native.PROGRAMS:
        built = native.binary(name)
        if _static(built):
            shutil.copy2(built, into / built.name)
        else:
            dynamic.append(name)
    return dynamic


def _deps_image(base: str, deps: Path, wheels: list[Path], packages: list[str],
                quiet: bool) -> str:
    """The base + Debian packages + the dependencies' venv, made once per inputs
    (`docker run` + `docker commit`: the wheels are mounted, not copied into a layer)."""
    from proctor.executors.ray_wheels import pip_of
    from proctor.sandbox.docker.imagestore import image_id

    base_id = _docker("image", "inspect", "-f", "{{.Id}}", base)
    py = _python()
    names = " ".join(f"/wheels/{w.name}" for w in wheels)
    script = (f"{_APT.format(packages=' '.join(packages))}; "
              f"command -v {py} >/dev/null || {{ echo 'proctor: the base image has no {py} "
              f"(the head runs Python {sys.version_info.major}.{sys.version_info.minor}; "
              f"--base names an image that has it)' >&2; exit 3; }}; "
              f"{py} -m venv --without-pip {VENV}; "
              f"{VENV}/bin/python /wheels/{pip_of(wheels).name}/pip install -q --no-index "
              f"--no-deps --no-cache-dir --no-compile --no-warn-script-location {names}")
    tag = f"{DEPS}:{_digest(RECIPE, base_id, sorted((w.name, w.stat().st_size) for w in wheels), script)}"
    if image_id(tag):
        return tag
    name = f"proctor-ray-build-{os.getpid()}"
    _note(f"building {tag}: {base} + {' '.join(packages)} + the docker client + "
          f"{len(wheels)} wheels (Ray {_ray_version()}; once)", quiet)
    try:
        _docker("run", "--name", name, "-v", f"{deps}:/wheels:ro", "--entrypoint", "sh",
                base, "-c", script)
        path = f"ENV PATH={VENV}/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
        _docker("commit", "--change", path, "--change", "CMD []",
                "--message", f"proctor Ray worker dependencies: {base}", name, tag)
    finally:
        from proctor.dockercli import docker_sync

        docker_sync("rm", "-f", name, timeout=60)
    return tag


def _ray_version() -> str:
    from importlib import metadata

    return metadata.version("ray")


def build(base: str | None = None, tags: tuple[str, ...] = (), quiet: bool = False) -> str:
    """The worker image for this proctor and this Ray; returns its tag."""
    from proctor.executors.ray_wheels import FORMAT, wheelhouse
    from proctor.sandbox.cache import cache_dir
    from proctor.sandbox.docker.images import ensure_base

    if shutil.which("docker") is None:
        raise SetupError("the Ray worker image is built with Docker: no `docker` client here")
    if base is None:
        base = ensure_base(quiet=quiet)
    else:
        from proctor.sandbox.docker.imagestore import image_id

        if not image_id(base):
            raise SetupError(f"--base {base}: no such image in this Docker engine (build or "
                             "pull it first)")
    with tempfile.TemporaryDirectory(prefix="proctor-worker-image-") as tmp:
        ctx = Path(tmp)
        wheels, own = wheelhouse(cache_dir() / f"worker-wheels-{FORMAT}", ctx)
        dynamic = _native(ctx / "native")
        packages = PACKAGES + (["gcc", "libc6-dev"] if dynamic else [])
        deps = _deps_image(base, cache_dir() / f"worker-wheels-{FORMAT}", wheels, packages, quiet)
        (ctx / "proctor-ray-node").write_text(ENTRY)
        (ctx / "proctor-ray-node").chmod(0o755)
        from proctor.sandbox.docker import trust

        certs = trust.host_pems()  # a lab's TLS-inspecting proxy: the node reaches PyPI through it
        (ctx / "certs").mkdir()
        for cert, pem in certs.items():
            (ctx / "certs" / cert).write_bytes(pem)
        minor = "minor"  # Ray checks the Python patch version too; the minor one is what counts
        lines = [f"FROM {deps}",
                 f"COPY native/ {NATIVE}/",
                 f"COPY native/ {CACHE}/",
                 "COPY proctor-ray-node /usr/local/bin/proctor-ray-node",
                 f"COPY {own.name} /tmp/",
                 *([f"COPY certs/ {trust.HOST_CA_DIR}/",
                    "RUN update-ca-certificates >/dev/null 2>&1 || true",
                    "ENV SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt "
                    "REQUESTS_CA_BUNDLE=/etc/ssl/certs/ca-certificates.crt"] if certs else []),
                 f"RUN {VENV}/bin/pip install -q --no-index --no-deps --no-cache-dir --no-compile "
                 f"--no-warn-script-location /tmp/{own.name} && rm /tmp/{own.name} && "
                 f"proctor --version",
                 f"ENV PROCTOR_CACHE={CACHE} RAY_DEFAULT_PYTHON_VERSION_MATCH_LEVEL={minor}",
                 'ENTRYPOINT ["/usr/local/bin/proctor-ray-node"]',
                 "CMD []",
                 f"LABEL proctor.ray={_ray_version()} proctor.python={sys.version_info.major}."
                 f"{sys.version_info.minor}"]
        (ctx / "Dockerfile").write_text("\n".join(lines) + "\n")
        digest = hashlib.sha256((ctx / "Dockerfile").read_bytes() + own.read_bytes())
        for f in sorted([*(ctx / "native").iterdir(), *(ctx / "certs").iterdir()]):
            digest.update(f.name.encode() + f.read_bytes())
        from importlib import metadata

        tag = f"{REPO}:{metadata.version('proctor')}-{digest.hexdigest()[:12]}"
        from proctor.sandbox.docker.imagestore import image_id

        if not image_id(tag):
            _note(f"building {tag} (proctor on {deps})", quiet)
            _docker("build", "-q", "--force-rm", "-t", tag, str(ctx))
    for extra in tags:
        _docker("tag", tag, extra)
    return tag
