"""A local run's first boxes started while proctor starts (`proctor run`, local backend).

Before its first trial can run, a local run imports the rest of proctor and reads its specs
(~0.1 s on one core), then makes a box per trial slot: its file system and directories, its
cgroup, bubblewrap building namespaces and mounts, the spawner's start, the spawner moved
into the cgroup (the kernel waits a grace period: ~10 ms on cgroup v1): ~40 ms, mostly
waiting. One after the other. So the boxes a run makes first are remembered (`remember`) —
bubblewrap's command line and environment exactly as `Box.start` launches them, the box's
disk size and limits, the run's id and scratch directory left as blanks — under the
command line's key (headstart.py: the command line, the working directory, the spec files'
contents), in $PROCTOR_CACHE/headstart/local-KEY.json. The next identical `proctor run`
makes them first thing (`begin`), with the run id and scratch directory it then uses
(headstart.reserve_run): they build on the other core while the rest of proctor is imported
on this one.

A slot takes one (`claim`) only when what it would make itself is the same: the command
line byte for byte but the descriptor numbers (the same mounts of the same directories,
namespaces, capabilities, spawner binary and uid), the environment, the disk size and the
limits. Made by the same code (disk.mount, cgroup.TrialCgroup), in the same order; pool.py
then gives the directories their owners and modes as it does every box's, before any of
the trial's commands. Anything else and it is not used: its spawner sees EOF and the box
ends, its cgroup, file system and directories are removed, and the slot makes its own.
Boxes never claimed are removed so at exit. A run killed (SIGKILL) meanwhile takes them
down with it (bubblewrap's --die-with-parent, the spawner's EOF); its scratch directory
(the boxes' file systems) is removed by the next run that makes boxes early
(`sweep_orphans`: the scratch directory names the process that made them), its empty
cgroups by any `--resume` (janitor.py).

Standard library only at import (and headstart): this runs before the rest of proctor is
imported; disk.py and cgroup.py only when there are boxes to make.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from pathlib import Path
from typing import Any

from proctor import headstart

# The descriptors a box's command line names, numbered anew in each process.
INFO, PROGRAM, SOCK = "\x00info-fd\x00", "\x00program-fd\x00", "\x00sock-fd\x00"
OWNER = ".boxstart-owner"  # in the scratch directory: the process that made its boxes
KEEP_BOXES = 16  # boxes remembered at most (the first a run makes: one per trial slot)
# While the boxes' spawners are moved into their cgroups (a thread, mostly waiting on the
# kernel), the interpreter is handed over this often, not every 5 ms: a thread waiting for
# it would otherwise wait that long after every system call.
SWITCH_S = 0.0005


class Launched:
    """One box's bubblewrap started: its process, proctor's end of the spawner's socket and
    the pipe bubblewrap writes the spawner's pid to (`read_pid`)."""

    def __init__(self, bwrap: Any, sock: Any, info: int):
        self.bwrap, self.sock, self.info = bwrap, sock, info


def launch(argv: list[str], env: dict[str, str], program: str) -> Launched:
    """Start bubblewrap with `argv` (INFO, PROGRAM and SOCK standing for the descriptors it is
    handed): a box whose first process is the spawner `program`. Not an asyncio subprocess:
    the box outlives any event loop hiccup; in a process group of its own (proc.start)."""
    import socket
    import subprocess

    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    fd = info_r = info_w = -1
    try:
        fd = os.open(program, os.O_RDONLY)  # run as /proc/self/fd/N
        info_r, info_w = os.pipe()
        names = {INFO: str(info_w), PROGRAM: f"/proc/self/fd/{fd}", SOCK: str(theirs.fileno())}
        bwrap = subprocess.Popen(
            [names.get(a, a) for a in argv], stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, process_group=0, env=env,
            pass_fds=(info_w, theirs.fileno(), fd))
    except BaseException:
        ours.close()
        if info_r >= 0:
            os.close(info_r)
        raise
    finally:
        theirs.close()
        for f in (fd, info_w):
            if f >= 0:
                os.close(f)
    return Launched(bwrap, ours, info_r)


def read_pid(fd: int) -> int | None:
    """The spawner's pid as bubblewrap writes it to its info pipe; None if it exited first."""
    data = b""
    while b"}" not in data:
        chunk = os.read(fd, 4096)
        if not chunk:
            return None
        data += chunk
    return int(json.loads(data[: data.index(b"}") + 1])["child-pid"])


class Early:
    """A remembered box, made at start-up: its request, then what was made of it."""

    def __init__(self, recipe: dict[str, Any]):
        import threading

        self.root: str = recipe["root"]
        self.argv: list[str] = recipe["argv"]
        self.env: dict[str, str] = recipe["env"]
        self.program: str = recipe["program"]
        self.disk: int = recipe["disk"]
        self.limits: dict[str, Any] = recipe["limits"]
        self.prepared = False  # its file system, directories and cgroup made (`_make`)
        self.mounted = False  # its root is a file system of `disk` bytes (disk.py)
        self.cgroup: Any = None  # its cgroup.TrialCgroup, if one could be made
        self.launched: Launched | None = None
        self.pid: int | None = None  # its spawner's, once moved into the cgroup
        self.claimed = False  # looked at by its slot (taken or not), or given up at exit
        self.taken = False  # the slot's box
        self.ready = threading.Event()  # pid read and moved (or failed): `claim` waits

    def handed(self) -> tuple[Launched, int]:
        """What `Box.start` takes of a claimed box: its bubblewrap and spawner pid."""
        assert self.launched is not None and self.pid is not None  # as `claim` gives it
        return self.launched, self.pid

    def request(self) -> tuple[Any, ...]:
        return self.argv, self.env, self.program, self.disk, self.limits


_early: list[Early] = []
_key: str | None = None  # this run's key: the boxes it makes first are remembered under it
_seen: list[dict[str, Any]] = []  # the requests this run made (blanks in), up to KEEP_BOXES
_recipe: list[dict[str, Any]] | None = None  # what was remembered, as read
_makers: list[Any] = []  # `_make`'s threads, until `launch_made`
_thread: Any = None  # `_join`'s
_pending: tuple[float, str] | None = None  # (switch interval, scratch), until `launch_made`


def begin(argv: list[str]) -> None:
    """Called first by the CLI: for `proctor run` on the local backend whose first boxes were
    remembered, start making them now (`launch_made` launches them); otherwise note the key
    to remember them under."""
    global _key, _recipe, _makers, _pending
    if os.environ.get("PROCTOR_NO_HEADSTART") or not _wanted(argv):
        return
    _key = headstart._key_of(argv)
    if _key is None:
        return
    import atexit

    atexit.register(_end)
    recipe = headstart.trusted(_path(_key))
    boxes = recipe.get("boxes") if recipe is not None else None
    if not isinstance(boxes, list) or not boxes or not all(_valid(b) for b in boxes):
        return
    _recipe = boxes
    run_id, scratch = headstart.reserve_run()

    def filled(value: Any) -> Any:
        if isinstance(value, str):
            return value.replace(headstart._ROOT, scratch).replace(headstart._RUN, run_id)
        if isinstance(value, list):
            return [filled(v) for v in value]
        if isinstance(value, dict):
            return {k: filled(v) for k, v in value.items()}
        return value
    with open(os.path.join(scratch, OWNER), "w") as f:  # for `sweep_orphans`, if killed
        f.write(headstart._owner())
    _early.extend(Early(filled(box)) for box in boxes)
    switch = sys.getswitchinterval()
    sys.setswitchinterval(min(switch, SWITCH_S))
    _makers, _pending = _make(_early), (switch, scratch)
    import signal

    if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:  # until the run's loop takes it
        signal.signal(signal.SIGTERM, headstart._terminated)


def _valid(box: object) -> bool:
    def strings(v: object) -> bool:
        return isinstance(v, list) and all(isinstance(a, str) for a in v)
    return (isinstance(box, dict) and strings(box.get("argv")) and isinstance(box.get("env"), dict)
            and all(isinstance(k, str) and isinstance(v, str) for k, v in box["env"].items())
            and isinstance(box.get("program"), str) and isinstance(box.get("root"), str)
            and type(box.get("disk")) is int and isinstance(box.get("limits"), dict))


def _make(early: list[Early]) -> list[Any]:
    """Each box's file system, directories and cgroup made as pool.py's `_make_dirs` makes
    them, each box on a thread of its own, side by side, while this one goes on importing the
    rest of proctor: mostly the kernel's work (a sparse copy, a loop device, a mount, a fresh
    file system's first writes, cgroup directories), the interpreter handed over every
    SWITCH_S (`begin`). What they use is imported here first. Returns the threads. Not
    bubblewrap's launch: that is `launch_made`'s, on the main thread."""
    import threading

    from proctor.sandbox import cgroup, disk
    from proctor.sandbox.base import Resources

    def make(box: Early) -> None:
        try:
            if box.disk:
                with contextlib.suppress(Exception):  # not mounted: its slot's own would not be
                    box.mounted = disk.mount(Path(box.root), box.disk)
            for name in ("work", "home", "tmp", "shm", "private"):  # pool.PLACES, private
                os.makedirs(os.path.join(box.root, name), mode=0o755, exist_ok=True)
            with open(os.path.join(box.root, "private", "hosts"), "a"):
                pass  # owners, modes: the slot's (pool.py `_make_dirs`), before any trial
            box.cgroup = cgroup.TrialCgroup.create(
                f"proctor-{os.getpid()}-{os.path.basename(box.root)}", Resources(**box.limits))
            box.prepared = True
        except Exception:
            pass  # not made: not launched, no slot takes it (`claim` clears what was)
    threads = [threading.Thread(target=make, args=(box,), daemon=True) for box in early]
    for thread in threads:
        thread.start()
    return threads


def launch_made() -> None:
    """Called by the CLI on the main thread as a run's body begins: each box `begin` made
    launched (bubblewrap started, as `Box.start` starts it), then `_join` moves their
    spawners into their cgroups while the rest of proctor is imported. On this thread and no
    other: bubblewrap's --die-with-parent kills a box when the *thread* that started it ends
    (the kernel's parent-death signal follows the thread, not the process), so a box started
    by a thread that then ended was killed at random, its slot's first trial lost with it."""
    global _makers, _pending, _thread
    if _pending is None:
        return
    import threading

    assert threading.current_thread() is threading.main_thread()
    for maker in _makers:
        maker.join()
    (switch, scratch), _makers, _pending = _pending, [], None
    for box in _early:
        if box.prepared:
            try:
                box.launched = launch(box.argv, box.env, box.program)
            except Exception:
                box.launched = None
    _thread = threading.Thread(target=_join, args=(list(_early), switch, scratch),
                               daemon=True, name="boxstart")
    _thread.start()


def _join(early: list[Early], switch: float, scratch: str) -> None:
    """Each spawner's pid read and the spawner moved into its box's cgroup (Box.start's
    `join`), while the main thread imports; then what killed runs' early boxes left."""
    try:
        for box in early:
            try:
                if box.launched is not None:
                    pid = read_pid(box.launched.info)
                    if pid is not None and box.cgroup is not None:
                        box.cgroup.attach(pid)
                    box.pid = pid
            except Exception:
                box.pid = None
            finally:
                box.ready.set()
    finally:
        if sys.getswitchinterval() == min(switch, SWITCH_S):
            sys.setswitchinterval(switch)
    with contextlib.suppress(Exception):
        sweep_orphans(scratch)


def sweep_orphans(here: str) -> int:
    """Remove the scratch directories (their boxes' file systems unmounted) of runs whose
    boxes were made at start-up and whose process is gone: one killed (SIGKILL) before its
    run directory existed, so that no `--resume` sweeps them. Only owners of this PID
    namespace are judged. (Its cgroups, empty, are left to any `--resume`'s sweep.)"""
    import shutil
    import tempfile

    from proctor.sandbox import disk

    namespace = headstart._owner().rsplit("/", 2)[0]
    removed = 0
    with os.scandir(tempfile.gettempdir()) as entries:  # (no glob: no pattern to compile)
        tops = [Path(e.path) for e in entries if e.name.startswith("proctor-")]
    for top in tops:
        try:
            owner = (top / OWNER).read_text()
        except OSError:
            continue
        parts = owner.rsplit("/", 2)
        if str(top) == here or len(parts) != 3 or not namespace or parts[0] != namespace \
                or not parts[1].isdigit() or headstart._owner(int(parts[1])) == owner:
            continue  # ours, another namespace's, or its process is alive
        disk.sweep(top)
        shutil.rmtree(top, ignore_errors=True)
        removed += 1
    return removed


def started(root: str) -> bool:
    """Whether a box was made at start-up in `root` and not claimed."""
    return any(b.root == root and not b.claimed for b in _early)


def claim(root: str, argv: list[str], env: dict[str, str], program: str, disk: int,
          limits: dict[str, Any]) -> Early | None:
    """The box made at start-up in `root` if it was made from exactly this request (argv
    with INFO, PROGRAM, SOCK for its descriptors; a file system of `disk` bytes, 0: none;
    the cgroup's `limits`, Resources' fields), its spawner in its cgroup; else None, and that
    box is removed, `root` cleared for the slot's own. Blocking (it may still be starting):
    call it off the event loop."""
    for box in _early:
        if box.root != root or box.claimed:
            continue
        box.claimed = True
        if _pending is not None:  # never launched (no run body began: `launch_made`)
            for maker in _makers:
                maker.join()
        else:
            box.ready.wait()
        if box.launched is not None and box.pid is not None and \
                box.request() == (argv, env, program, disk, limits):
            box.taken = True
            return box
        _close(box)
        return None
    return None


def remember(root: str, argv: list[str], env: dict[str, str], program: str, disk: int,
             limits: dict[str, Any], scratch: str) -> None:
    """A box this run made among its first (in `root`, in the run's `scratch` directory):
    its request kept, the run's id and its scratch directory as blanks, for the next
    identical run (`_end` writes them)."""
    run_id = env.get("PROCTOR_RUN_ID", "")
    if _key is None or len(_seen) >= KEEP_BOXES or not run_id or \
            not root.startswith(scratch.rstrip("/") + "/"):
        return

    def blank(text: str) -> str:
        return text.replace(scratch, headstart._ROOT).replace(run_id, headstart._RUN)
    _seen.append({"root": blank(root), "argv": [blank(a) for a in argv],
                  "env": {k: blank(v) for k, v in env.items()}, "program": program,
                  "disk": disk, "limits": limits})


def _end() -> None:
    """At exit: boxes made and never claimed are removed, and this run's first boxes
    remembered when they are not what was."""
    for maker in _makers:  # a run that ended before its body began (`launch_made`)
        maker.join(30)
    if _thread is not None:
        _thread.join(30)  # its cgroup moves and sweep done (a run stopped at once)
    else:  # never launched, or stopped while launching: nothing will say they are ready
        for box in _early:
            box.ready.set()
    for box in _early:
        if not box.claimed:
            box.claimed = True
            box.ready.wait(30)
            _close(box)
    run = headstart.reserved()
    if _early and run is not None and os.path.isdir(run[1]) and all(
            not [f for f in files if f != OWNER] for _, _, files in os.walk(run[1])):
        import shutil

        shutil.rmtree(run[1], ignore_errors=True)
    if _key is not None and _seen and _seen != _recipe:
        _write(_path(_key), {"boxes": _seen})


def _close(box: Early) -> None:
    """A box nobody takes: its spawner sees EOF and ends the box, bubblewrap is reaped, its
    cgroup and file system removed, its directories too."""
    launched, box.launched = box.launched, None
    if launched is not None:
        launched.sock.close()
        os.close(launched.info)
        import subprocess

        try:
            launched.bwrap.wait(10)
        except subprocess.TimeoutExpired:
            import signal

            with contextlib.suppress(OSError):
                os.killpg(launched.bwrap.pid, signal.SIGKILL)
            launched.bwrap.wait()
        if launched.bwrap.stderr is not None:
            launched.bwrap.stderr.close()
    if box.cgroup is not None:
        box.cgroup.remove()
        box.cgroup = None
    if box.mounted:
        from proctor.sandbox import disk

        disk.unmount(Path(box.root))
        box.mounted = False
    import shutil

    shutil.rmtree(box.root, ignore_errors=True)


def _write(path: Path, recipe: dict[str, Any]) -> None:
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}")
        tmp.write_text(json.dumps(recipe))
        tmp.chmod(0o600)
        tmp.replace(path)
        kept = list(path.parent.glob("local-*.json"))
        if len(kept) > headstart.KEEP:  # the least recently remembered go
            kept.sort(key=lambda p: p.stat().st_mtime)
            for old in kept[:len(kept) - headstart.KEEP]:
                old.unlink(missing_ok=True)
    except OSError:
        pass


def _path(key: str) -> Path:
    return headstart._dir() / f"local-{key}.json"


def _wanted(argv: list[str]) -> bool:
    """`run` without `--backend docker`, and nothing that makes a run's boxes differ from the
    last one's by design (--resume, --keep's workdirs in the run directory), nor runs its
    trials elsewhere (--executor), nor runs them unboxed (--isolation none)."""
    args = argv[1:]
    if not args or args[0] != "run" or "--resume" in args or "--keep" in args or any(
            a.startswith(("--executor", "--resume=")) for a in args):
        return False
    pairs = list(zip(args, [*args[1:], ""], strict=True))
    return sys.platform == "linux" and not any(
        a in ("--backend=docker", "--isolation=none") or (a == "--backend" and b == "docker")
        or (a == "--isolation" and b == "none") for a, b in pairs)
