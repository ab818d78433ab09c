"""The images trials run in, made local before any trial runs (no registry needed).

* No `base`: proctor's base image, built here on first use from Debian's packages
  (`mmdebstrap --variant=minbase` + the tools the bundled examples need, then
  `docker import`). Its tag is a digest of the recipe, so a changed recipe is a new image.
  The root file system tarball is cached under the cache dir, so a fresh engine (CI) only
  re-imports it.
* `base: IMAGE`: used as it is when local, else pulled (`docker pull`).
* `setup.packages`: a derived image, `FROM` the base + one package-manager install, tagged
  by a digest of (base image id, sorted packages, the install line): built once, reused by
  every trial and run.
* `environment: {dockerfile: PATH}`: `docker build` with the Dockerfile's directory as the
  context, tagged by a digest of the Dockerfile and every file of the context.

Whatever fails (no engine, no mmdebstrap, a pull or build error) is a SetupError (exit 2)
before the first trial, with the last lines of the build log.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

from proctor import proc
from proctor.dockercli import docker_sync
from proctor.errors import SetupError
from proctor.sandbox import dockerbuild
from proctor.sandbox.dockerbuild import Status

RELEASE = "bookworm"
MIRROR = os.environ.get("PROCTOR_DEBIAN_MIRROR", "")  # empty: mmdebstrap's default (deb.debian.org)
BASE_PACKAGES = sorted([
    "bash", "ca-certificates", "coreutils", "curl", "diffutils", "file", "findutils", "git",
    "gzip", "iproute2", "jq", "less", "mariadb-client", "netcat-openbsd", "nodejs", "patch",
    "postgresql-client", "procps", "python3", "sed", "sqlite3", "strace", "tar", "unzip",
    "xz-utils",
])
RECIPE = 1  # bump when the way the base is built changes
BUILD_TIMEOUT_S = 1800.0
LOG_LINES = 15
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# One package-manager line for whatever the base is (Debian/Ubuntu, Alpine, Fedora/RHEL);
# apt's lists and its two package caches (80 MB) are not kept in the image.
_INSTALL = ('if command -v apt-get >/dev/null; then apt-get update -qq && '
            'DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends '
            '"$@" && apt-get clean && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin; '
            'elif command -v apk >/dev/null; then apk add --no-cache "$@"; '
            'elif command -v dnf >/dev/null; then dnf install -y "$@" && dnf clean all; '
            'else echo "no package manager (apt-get, apk, dnf) in the base image" >&2; exit 1; fi')
_lock = threading.Lock()
_ready: set[str] = set()


def digest(*parts: Any) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:16]


_digest = digest


def lock() -> threading.Lock:
    return _lock


def is_ready(tag: str) -> bool:
    """Known to be local (checked once per process)."""
    if tag in _ready or _local(tag):
        _ready.add(tag)
        return True
    return False


def mark_ready(tag: str) -> None:
    _ready.add(tag)


def is_local(image: str) -> bool:
    return _local(image) is not None


def base_tag() -> str:
    return f"proctor-base:{_digest(RELEASE, BASE_PACKAGES, RECIPE)}"


def cache_dir() -> Path:
    """Where the base tarball is kept: $PROCTOR_CACHE, else ~/.cache/proctor."""
    given = os.environ.get("PROCTOR_CACHE")
    if given:
        return Path(given)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "proctor"


def _local(image: str) -> str | None:
    """The image's id if it is local."""
    done = docker_sync("image", "inspect", "-f", "{{.Id}}", image, timeout=60)
    return done.stdout.strip() if done.exit_code == 0 else None


_NOISE = ("DEPRECATED: The legacy builder", "Install the buildx component",
          "docs.docker.com/go/buildx")


def failed(what: str, log: str, source: str = "the build log ends") -> SetupError:
    return _fail(what, log, source)


def _fail(what: str, log: str, source: str = "the build log ends") -> SetupError:
    from proctor.dockercli import is_advice
    from proctor.text import plain

    lines = [ln for ln in plain(log).splitlines()
             if ln.strip() and not any(n in ln for n in _NOISE) and not is_advice(ln)]
    body = "\n".join("  " + ln[:300] for ln in lines[-LOG_LINES:])
    key = _key_line(lines) if source == "the build log ends" else ""
    if key:  # the first line (a trial's one-line reason) says why; the log's end follows
        return SetupError(f"--backend docker: {what}: {key}\n{source}:\n{body}")
    return SetupError(f"--backend docker: {what}" + (f"; {source}:\n{body}" if lines else ""))


_BUILDER = re.compile(r"^\s*(Removing intermediate container|---> |The command '.*' returned a "
                      r"non-zero code|Successfully |Sending build context|Step \d+/\d+ :)")


_ERROR = re.compile(r"^\s*(E:|(error|fatal)\b)", re.IGNORECASE)

# A download that could not be made: usually why a build failed on a machine without the
# outside internet, though the step goes on to fail later on what is missing (`git clone`
# fails, then `fatal: not a git repository`).
_NETWORK = re.compile(r"Could not resolve host|Temporary failure in name resolution|"
                      r"Name or service not known|Could not connect to|Failed to connect to|"
                      r"Network is unreachable|unable to access '|Failed to fetch https?://|"
                      r"unable to resolve host address|curl: \(\d+\)", re.IGNORECASE)


def _key_line(lines: list[str]) -> str:
    """The line of a failed build's log that says why, for the one-line reason: proctor's own
    (a pinned version named, pins.py), else the last failed download, else the last error
    (`E: …`, `error: …`), else the last one that is not the builder's."""
    mine = [ln.strip().removeprefix("proctor: ") for ln in lines if ln.startswith("proctor: ")]
    network = [ln.strip() for ln in lines if _NETWORK.search(ln)]
    errors = [ln.strip() for ln in lines if _ERROR.match(ln)]
    theirs = [ln.strip() for ln in lines if not _BUILDER.match(ln)]
    found = (mine or network or errors or theirs or [""])[-1]
    return found[:300]


def _note(text: str, quiet: bool) -> None:
    if not quiet:
        print(f"proctor: {text}", file=sys.stderr, flush=True)


def ensure_base(quiet: bool = True) -> str:
    """proctor's base image, built (or imported from the cached tarball) if not local."""
    tag = base_tag()
    with _lock:
        if tag in _ready or _local(tag):
            _ready.add(tag)
            return tag
        tar = cache_dir() / f"{tag.split(':')[1]}-rootfs.tar"
        if not tar.exists():
            _note(f"building the docker base image {tag} (Debian {RELEASE}, once; ~1 min)",
                  quiet)
            debootstrap(tar, RELEASE, BASE_PACKAGES, MIRROR)
        with open(tar, "rb") as f:
            done = docker_sync("import", "--change", f"ENV PATH={SYSTEM_PATH}",
                               "--change", "ENV LANG=C.UTF-8", "--change", 'CMD ["bash"]',
                               "--message", f"proctor base: {RELEASE} + {' '.join(BASE_PACKAGES)}",
                               "-", tag, stdin=f, timeout=BUILD_TIMEOUT_S)
        if done.exit_code != 0:
            raise _fail(f"importing the base image {tag} failed", done.stderr)
        _ready.add(tag)
        return tag


def debootstrap(tar: Path, release: str, packages: list[str], mirror: str) -> None:
    """A Debian root file system tarball (`mmdebstrap --variant=minbase`), cached at `tar`."""
    if shutil.which("mmdebstrap") is None:
        raise SetupError("--backend docker: the proctor base image is built with mmdebstrap, "
                         "which is not installed (Debian package `mmdebstrap`; ./setup.sh "
                         "installs it); or give each task a `base:` image")
    tar.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".rootfs-", suffix=".tar", dir=tar.parent)
    os.close(fd)
    argv = ["mmdebstrap", "--variant=minbase", f"--include={','.join(packages)}",
            "--dpkgopt=path-exclude=/usr/share/doc/*", "--dpkgopt=path-exclude=/usr/share/man/*",
            "--dpkgopt=path-exclude=/usr/share/locale/*", release, tmp, *([mirror] if mirror else [])]
    try:
        done = proc.run_sync(argv, timeout=BUILD_TIMEOUT_S, limit=1 << 24)  # its log's end
        if done.timed_out:
            raise SetupError(f"--backend docker: building a Debian {release} image took more "
                             f"than {BUILD_TIMEOUT_S:g} s")
        if done.exit_code != 0:
            raise _fail(f"building a Debian {release} image with mmdebstrap failed",
                        done.stderr + done.stdout)
        os.replace(tmp, tar)
    finally:  # failed, timed out or Ctrl-C: no half-written tarball stays in the cache
        Path(tmp).unlink(missing_ok=True)


def ensure_image(image: str, quiet: bool = True) -> str:
    """A named image, pulled if it is not local."""
    with _lock:
        if image in _ready or _local(image):
            _ready.add(image)
            return image
        _note(f"pulling {image}", quiet)
        done = docker_sync("pull", "-q", image, timeout=BUILD_TIMEOUT_S)
        if done.exit_code != 0:
            raise _fail(f"image {image!r} is not local and could not be pulled",
                        done.stderr or done.stdout, "the engine says")
        _ready.add(image)
        return image


def with_packages(base: str, packages: list[str], quiet: bool = True) -> str:
    """`base` + `packages`, built once per distinct (base image id, packages, install line)."""
    base_id = _local(base) or base
    tag = f"proctor-task:{_digest(base_id, sorted(set(packages)), _INSTALL)}"
    with _lock:
        if tag in _ready or _local(tag):
            _ready.add(tag)
            return tag
        _note(f"building {tag}: {base} + {' '.join(sorted(set(packages)))}", quiet)
        words = " ".join(json.dumps(p) for p in sorted(set(packages)))
        dockerfile = (f"FROM {base}\nUSER 0\nRUN set -e; set -- {words}; {_INSTALL}\n"
                      f"LABEL proctor.packages={json.dumps(' '.join(sorted(set(packages))))}\n")
        done = docker_sync("build", "-q", "--force-rm", "-t", tag, "-",
                           stdin=dockerfile.encode(), timeout=BUILD_TIMEOUT_S)
        if done.exit_code != 0:
            raise _fail(f"installing setup.packages into {base} failed", done.stdout + done.stderr)
        _ready.add(tag)
        return tag


def external(image: str, config: dict[str, Any] | None = None, quiet: bool = True,
             notes: list[str] | None = None) -> str:
    """An image named by a task (`base`, a FROM, a service's `image`) made local: as it is,
    pulled, or through the image map (imagemap.py); what stands in for it is returned."""
    from proctor.sandbox import imagemap

    with _lock:
        if image in _ready or _local(image):
            _ready.add(image)
            return image
    mapped = imagemap.lookup(image, config or {})
    with _lock:
        done = docker_sync("pull", "-q", image, timeout=BUILD_TIMEOUT_S)
        if done.exit_code == 0:
            _ready.add(image)
            return image
    if mapped is None:
        raise _fail(f"image {image!r} is not local and could not be pulled, and proctor.toml's "
                    "[images] map has no entry for it (docs/harbor.md#the-image-map)",
                    done.stderr or done.stdout, "the engine says")
    key, value = mapped
    note = imagemap.describe(image, value)
    if notes is not None and note not in notes:
        notes.append(note)
    if isinstance(value, str):
        return ensure_image(value, quiet)
    return imagemap.stand_in(dict(value), quiet)


def from_dockerfile(path: str, quiet: bool = True, *, config: dict[str, Any] | None = None,
                    timeout: float = BUILD_TIMEOUT_S, notes: list[str] | None = None,
                    status: Status | None = None, what: str = "",
                    env: dict[str, str] | None = None) -> str:
    """`docker build` of a task's Dockerfile, its directory as the context; an image it
    names that no registry gives is resolved first (`external`), in a copy of the
    Dockerfile (the file itself is not changed), with `env` set after each FROM. Its steps
    go to `status` (`what`: the task, said when the build starts)."""
    from proctor.sandbox import imagemap

    dockerfile = Path(path)
    if not dockerfile.is_file():
        raise SetupError(f"--backend docker: dockerfile {path} does not exist")
    context = dockerfile.parent
    text = imagemap.rewrite(dockerfile.read_text(errors="replace"),
                            lambda image: external(image, config, quiet, notes), env)
    h = hashlib.sha256(text.encode())
    for f in sorted(p for p in context.rglob("*") if p.is_file()):
        h.update(str(f.relative_to(context)).encode() + b"\0")
        h.update(f.read_bytes())
    for line in text.splitlines():  # a rebuilt base (same name, new content) rebuilds this
        if line.lstrip().upper().startswith("FROM"):
            h.update((_local(line.split()[-1]) or "").encode())
    tag = f"proctor-task:{h.hexdigest()[:16]}"
    with _lock:
        if tag in _ready or _local(tag):
            _ready.add(tag)
            return tag
        status = status or Status(1, quiet=quiet)
        status.begin(f"{what + ': ' if what else ''}{tag} from {path}")
        # --force-rm: a failed step's container is removed too, not left for the user.
        done = dockerbuild.build(["--force-rm", "-t", tag, "-f", "-", str(context)],
                                 stdin=text.encode(), timeout=timeout, status=status)
        status.end(done.exit_code == 0, done.seconds)
        if done.exit_code is None:
            raise _fail(f"building {path} took more than {timeout:g} s (the task's build "
                        "timeout)", done.log)
        if done.exit_code != 0:
            raise _fail(f"building {path} failed", done.log)
        _ready.add(tag)
        return tag


def resolve(base: str | None, packages: list[str], dockerfile: str | None,
            quiet: bool = True, *, config: dict[str, Any] | None = None,
            timeout: float = BUILD_TIMEOUT_S, notes: list[str] | None = None,
            status: Status | None = None, what: str = "",
            env: dict[str, str] | None = None) -> str:
    """The local image a task's trials run in, built or pulled now if need be."""
    if dockerfile:
        return from_dockerfile(dockerfile, quiet, config=config, timeout=timeout, notes=notes,
                               status=status, what=what, env=env)
    image = external(base, config, quiet, notes) if base else ensure_base(quiet)
    missing = sorted(set(packages) - (set(BASE_PACKAGES) if not base else set()))
    return with_packages(image, missing, quiet) if missing else image


def prepare(tasks: list[Any], quiet: bool = False, config: dict[str, Any] | None = None) -> None:
    """Resolve every task's image (and its image services' images) before any trial runs;
    the result is the task's `base_image` from here on (what `SandboxSpec.image` carries to
    each trial). A task whose image cannot be made has its trials `error` (`unavailable`,
    the reason with the build log's end), whether it runs alone or in a dataset; the others
    run."""
    notes: list[str] = []
    todo = [t for t in tasks if not getattr(t, "unavailable", None)]  # else: errors already
    status = Status(len(todo), quiet=quiet)
    for status.n, task in enumerate(todo, 1):
        try:
            _prepare_task(task, quiet, config, notes, status)
        except SetupError as e:
            task.unavailable = str(e).removeprefix("--backend docker: ")
            _note(f"warning: {task.id}: its trials are errors: "
                  f"{task.unavailable.splitlines()[0]}", quiet)
    for note in notes:
        _note(f"image map: {note}", quiet)


def _prepare_task(task: Any, quiet: bool, config: dict[str, Any] | None, notes: list[str],
                  status: Status) -> None:
    from proctor.sandbox import pins

    timeout = float(task.resources.get("build_timeout") or BUILD_TIMEOUT_S)
    env = {pins.VAR: "1"} if pins.relaxed(task.id, config) else None
    if env:
        task.env = {**task.env, **env}
    dockerfile = getattr(task, "dockerfile", None)
    if dockerfile and task.base_image:  # Harbor's docker_image beside its Dockerfile
        if is_local(task.base_image):
            _note(f"{task.id}: runs docker_image {task.base_image} (in the engine; "
                  "environment/Dockerfile not built)", quiet)
            dockerfile = None
        else:
            _note(f"{task.id}: docker_image {task.base_image} is not in the engine: runs the "
                  "image of environment/Dockerfile (built unless already built)", quiet)
    task.base_image = resolve(task.base_image if not dockerfile else None, list(task.packages),
                              dockerfile, quiet, config=config, timeout=timeout, notes=notes,
                              status=status, what=task.id, env=env)
    task.packages = []
    for svc in task.services:  # image services' images: built or pulled now, not mid-run
        if svc.kind != "container":
            continue
        if svc.config.get("build"):
            svc.config["image"] = from_dockerfile(str(svc.config["build"]), quiet, config=config,
                                                  timeout=timeout, notes=notes, status=status,
                                                  what=f"{task.id}, service {svc.name}",
                                                  env=env)
        elif svc.config.get("image"):
            svc.config["image"] = external(str(svc.config["image"]), config, quiet, notes)
