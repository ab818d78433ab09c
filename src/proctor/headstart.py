"""A docker trial's container made while proctor starts (`proctor run … --backend docker`).

Making and starting a container takes the engine ~0.2 s, as long as proctor's own start-up
(imports, reading the specs); one after the other they are most of a one-trial run. So the
first container a run makes is remembered — the engine's create request exactly as
`dockercli.run_detached` sends it, with the run's id, its scratch directory and the
container's hostname left as blanks — under a key of the command line, the working
directory and the spec files' contents. The next identical `proctor run` makes that
container first thing (`begin`, on a thread, before proctor imports the rest of itself):
its run id and scratch directory are the ones the run then uses (`run_id`, `scratch`).

The trial takes it (`claim`) only when the request it would send itself is the same, byte
for byte but the hostname (a random name either way): the same image, mounts, labels,
limits and user, so the trial's container is the one it would have made, made earlier.
Anything else — the spec edited, an option, another machine's paths — and it is not used:
killed at exit (the engine removes it, `--rm`), and the trial makes its own. A run killed
(SIGKILL) before its run directory exists, so that no `--resume` could sweep it, leaves it
behind only until the next head start: each begun container is labelled with the process
that began it (OWNER), and the next one removes those whose process is gone.

Standard library only (and `engineapi`, which is): this runs before the rest of proctor is
imported.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

_RUN, _ROOT, _HOST = "\x00run\x00", "\x00root\x00", "\x00host\x00"
# A begun container's label: the process that began it (its PID namespace, pid and start
# time), so that one killed before its run directory existed is found and removed.
OWNER = "proctor.headstart"
KEEP = 64  # remembered command lines at most


class _Start:
    """One container being made: the thread, then its id (None if the engine refused)."""

    def __init__(self, key: str, run_id: str, root: str, host: str, body: dict[str, Any]):
        self.key, self.run_id, self.root, self.host, self.body = key, run_id, root, host, body
        import threading

        self.container: str | None = None
        self.claimed = False
        self.made = threading.Event()  # the container is up (or refused); the sweep follows
        self.thread = threading.Thread(target=self._make, daemon=True, name="headstart")

    def _make(self) -> None:
        body = {**self.body, "Labels": {**self.body.get("Labels", {}), OWNER: _owner()}}
        try:
            for bind in self.body.get("HostConfig", {}).get("Binds", []):
                source = bind.split(":", 1)[0]
                if source.startswith(self.root + "/"):
                    os.makedirs(source, exist_ok=True)  # modes, owners: the trial's, later
            got = _api("POST", "/containers/create", body)
            if got is not None and got[0] == 201:
                container = str(json.loads(got[1])["Id"])
                started = _api("POST", f"/containers/{container}/start")
                if started is not None and started[0] in (204, 304):
                    self.container = container
                else:
                    _api("DELETE", f"/containers/{container}?force=1&v=1")
        finally:
            self.made.set()
        sweep_orphans()  # off the trial's way: it waits for `made` only


_started: _Start | None = None
_reserved: tuple[str, str] | None = None  # (run id, scratch directory): `reserve_run`
_key: str | None = None  # this run's key: its first container is remembered under it
_recorded = False


def begin(argv: list[str]) -> None:
    """Called first by the CLI: for `proctor run … --backend docker` whose container was
    remembered, make it now (a thread); otherwise note the key to remember it under."""
    global _started, _key
    if os.environ.get("PROCTOR_NO_HEADSTART") or not _wanted(argv):
        return
    _key = _key_of(argv)
    if _key is None:
        return
    recipe = _recipe(_dir() / f"{_key}.json")
    if recipe is None:
        return
    import secrets

    run_id, root = reserve_run()
    host = secrets.token_hex(6)
    text = str(recipe["body"]).replace(_ROOT, root).replace(_RUN, run_id).replace(_HOST, host)
    _started = _Start(_key, run_id, root, host, json.loads(text))
    _started.thread.start()
    import atexit
    import signal

    atexit.register(_unclaimed)
    if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:  # until the run's loop takes it
        signal.signal(signal.SIGTERM, _terminated)


def _owner(pid: int | None = None) -> str:
    """A process as OWNER names it: its PID namespace, pid and start time (pids are reused);
    "" when /proc cannot say."""
    pid = os.getpid() if pid is None else pid
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
        namespace = os.readlink("/proc/self/ns/pid")
    except OSError:
        return ""
    started = stat[stat.rindex(b")") + 2:].split()[19].decode()  # field 22, starttime
    return f"{namespace}/{pid}/{started}"


def sweep_orphans() -> int:
    """Remove the begun containers whose process is gone (killed before its run directory,
    and so its `--resume`, existed). Only owners of this PID namespace are judged: another
    namespace's pids mean nothing here."""
    got = _api("GET", "/containers/json?all=1&filters=" +
               json.dumps({"label": [OWNER]}).replace(" ", ""))
    if got is None or got[0] != 200:
        return 0
    here = _owner().rsplit("/", 2)[0]
    removed = 0
    for container in json.loads(got[1]):
        owner = str((container.get("Labels") or {}).get(OWNER, ""))
        namespace, _, rest = owner.rpartition("/")[0].rpartition("/")
        if not here or namespace != here or not rest.isdigit():
            continue
        if _owner(int(rest)) != owner:  # that process is gone (or its pid is another's)
            _api("DELETE", f"/containers/{container['Id']}?force=1&v=1")
            removed += 1
    return removed


def _terminated(signum: int, frame: object) -> None:
    """SIGTERM before the run's loop handles it: exit through atexit (`_unclaimed`)."""
    raise SystemExit(128 + signum)


def _recipe(path: Path) -> dict[str, Any] | None:
    """The remembered request (`trusted`)."""
    recipe = trusted(path)
    return recipe if recipe is not None and isinstance(recipe.get("body"), str) else None


def trusted(path: Path) -> dict[str, Any] | None:
    """A remembered JSON object, if only this user could have written it (what it says is
    started before anything else runs): owned by us, writable by no one else, in a
    directory likewise."""
    try:
        for p in (path.parent, path):
            st = os.stat(p)
            if st.st_uid != os.geteuid() or st.st_mode & 0o022:
                return None
        recipe = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return recipe if isinstance(recipe, dict) else None


def reserve_run() -> tuple[str, str]:
    """This run's id and scratch directory, made now: something begun at start-up (a
    container here, boxes in boxstart.py) is made with them, and the run then uses them."""
    global _reserved
    if _reserved is None:
        import secrets
        import tempfile
        from datetime import UTC, datetime

        run_id = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ") + "-" + secrets.token_hex(3)
        _reserved = (run_id, tempfile.mkdtemp(prefix=f"proctor-{run_id}-"))
    return _reserved


def reserved() -> tuple[str, str] | None:
    """The run id and scratch directory `reserve_run` made, if it was called."""
    return _reserved


def run_id() -> str | None:
    """The id of this run when something was begun with it at start-up (RunStore.create
    uses it)."""
    return _reserved[0] if _reserved is not None else None


def scratch(run_id: str) -> Path | None:
    """The run's scratch directory made at start-up (the local executor's tmp root)."""
    if _reserved is None or _reserved[0] != run_id or not os.path.isdir(_reserved[1]):
        return None
    return Path(_reserved[1])


def claim(body: dict[str, Any] | None) -> str | None:
    """The container begun at start-up, if `body` (the trial's own create request) is the
    one it was made with, but the hostname; else None (the trial makes its own). Blocking
    (waits for the engine to start it): call it off the event loop."""
    start = _started
    if body is None or start is None or start.claimed:
        return None
    host = body.get("Hostname")
    mine = json.dumps(body, sort_keys=True)
    if isinstance(host, str) and host:
        mine = mine.replace(host, start.host)
    if mine != json.dumps(start.body, sort_keys=True):
        return None  # another trial's, or another request: not waited for
    start.made.wait()
    if start.container is None:
        return None
    start.claimed = True
    return start.container


def remember(body: dict[str, Any] | None, run_id: str, root: Path) -> None:
    """The first container of a keyed run: its create request kept for the next identical
    run (only where every mount of the run's own lies in its scratch `root`)."""
    global _recorded
    if _key is None or _recorded or body is None:
        return
    _recorded = True
    if _started is not None and _started.claimed:
        return  # it was made from the remembered request: that is what is kept already
    text = json.dumps(body, sort_keys=True)
    host = body.get("Hostname")
    if not isinstance(host, str) or not host or not run_id or str(root) not in text:
        return
    text = text.replace(str(root), _ROOT).replace(run_id, _RUN).replace(host, _HOST)
    try:
        where = _dir()
        where.mkdir(mode=0o700, parents=True, exist_ok=True)
        tmp = where / f".{_key}.{os.getpid()}"
        tmp.write_text(json.dumps({"body": text}))
        tmp.chmod(0o600)
        tmp.replace(where / f"{_key}.json")
        kept = list(where.glob("*.json"))
        if len(kept) > KEEP:  # the least recently remembered go
            kept.sort(key=lambda p: p.stat().st_mtime)
            for old in kept[:len(kept) - KEEP]:
                old.unlink(missing_ok=True)
    except OSError:
        pass


def _unclaimed() -> None:
    """At exit: a container begun and never claimed is killed (the engine removes it)."""
    start = _started
    if start is None or start.claimed:
        return
    start.thread.join(timeout=30)
    if start.container is not None:
        _api("DELETE", f"/containers/{start.container}?force=1&v=1")
    if os.path.isdir(start.root) and all(  # no run took it (its executor removes its own)
            not files for _, _, files in os.walk(start.root)):
        import shutil

        shutil.rmtree(start.root, ignore_errors=True)


def _wanted(argv: list[str]) -> bool:
    """`run` with `--backend docker`, and nothing that makes a run's container differ from
    the last one's by design (--resume, --keep's workdirs in the run directory)."""
    args = argv[1:]
    if not args or args[0] != "run" or "--resume" in args or "--keep" in args or any(
            a.startswith("--executor") for a in args):  # trials elsewhere: not this engine
        return False
    return any(a == "--backend=docker" or (a == "--backend" and b == "docker")
               for a, b in zip(args, [*args[1:], ""], strict=True))


def _key_of(argv: list[str]) -> str | None:
    """A digest of the command line, the working directory and every named spec file's
    contents (a directory's files: names, sizes and times, at most 200); None when a
    path cannot be read."""
    import hashlib

    args = _without_output_dir(argv[1:])  # where results go is not in the container
    digest = hashlib.sha256(json.dumps([args, os.getcwd(), sys.version]).encode())
    for arg in args[1:]:
        if arg.startswith("-") or not os.path.exists(arg):
            continue
        try:
            if os.path.isdir(arg):
                seen = 0
                for top, dirs, files in os.walk(arg):
                    dirs.sort()
                    for name in sorted(files):
                        st = os.stat(os.path.join(top, name))
                        digest.update(f"{top}/{name}\0{st.st_size}\0{st.st_mtime_ns}\0".encode())
                        seen += 1
                        if seen > 200:
                            return None
            else:
                with open(arg, "rb") as f:
                    digest.update(f.read(1 << 20))
        except OSError:
            return None
    return digest.hexdigest()[:32]


def _without_output_dir(args: list[str]) -> list[str]:
    out, skip = [], False
    for a in args:
        if skip:
            skip = False
        elif a == "--output-dir":
            skip = True
        elif not a.startswith("--output-dir="):
            out.append(a)
    return out


def _dir() -> Path:
    given = os.environ.get("PROCTOR_CACHE")
    base = Path(given) if given else Path(
        os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "proctor"
    return base / "headstart"


def _api(method: str, path: str, body: object = None) -> tuple[int, bytes] | None:
    """One request to the engine's socket (blocking), where the client would use it."""
    from proctor import engineapi  # a docker run's only

    return engineapi.call(method, path, 60, body)
