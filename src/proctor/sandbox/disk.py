"""A trial's disk limit (`resources.disk`, default 2 GiB): what its files may take in all.

As root, a box's directory (its places: workspace, HOME, /tmp, /dev/shm, and proctor's own
files for it) is a file system of exactly that size: an ext4 image, sparse on the host disk,
loop-mounted there. A write past it (`fallocate -l 4G "$TMPDIR/x"`, a runaway log) fails with
"No space left on device", like on a full disk, and nothing else of the machine fills up; its
inodes bound how many entries the snapshot can meet. The empty image is made once per size
and machine (`mkfs.ext4`, kept in proctor's cache directory), and each box gets a sparse copy
of it (its metadata only: about a MB).

Without root no file system can be mounted: every command gets `RLIMIT_FSIZE` (no single file
past the limit) and the trial's files are measured after the agent (`over`), which makes the
trial `error` naming the limit. A leftover mount of a killed run is removed by the janitor.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import functools
import os
import shutil
import struct
import threading
from pathlib import Path

from proctor import proc
from proctor.sandbox.cache import cache_dir
from proctor.sandbox.files import copy_sparse

DEFAULT_BYTES = 2 << 30
_MKFS_TIMEOUT_S = 60.0
_templates: dict[int, Path] = {}
_lock = threading.Lock()


def usable() -> bool:
    """Whether this process can give a box a file system of its own (root, mkfs, loop)."""
    return (os.geteuid() == 0 and shutil.which("mkfs.ext4") is not None
            and os.path.exists("/dev/loop-control"))


def mount(root: Path, size: int) -> bool:
    """Make `root` (an empty or missing directory) a file system of `size` bytes; False when
    that cannot be done here (then the caller falls back to `RLIMIT_FSIZE`)."""
    if not usable():
        return False
    image = _image(root)
    try:
        copy_sparse(str(_template(size)), str(image))
        root.mkdir(parents=True, exist_ok=True)
        _mount_loop(image, root)
    except OSError:
        image.unlink(missing_ok=True)
        return False
    os.chmod(root, 0o755)
    with contextlib.suppress(OSError):
        (root / "lost+found").rmdir()  # not a place of the agent's: out of the way
    return True


def unmount(root: Path) -> None:
    """Undo `mount` (lazily: a process still holding a file lets go when it dies; the loop
    device frees itself then, LO_FLAGS_AUTOCLEAR)."""
    if os.path.ismount(root) and _libc().umount2(os.fsencode(root), _MNT_DETACH) != 0:
        proc.run_sync(["umount", "-l", str(root)], timeout=_MKFS_TIMEOUT_S)
    _image(root).unlink(missing_ok=True)


# Loop devices and mounts by system call, not by mount(8): two processes fewer per box.
_LOOP_CTL_GET_FREE, _LOOP_CONFIGURE, _LO_FLAGS_AUTOCLEAR = 0x4C82, 0x4C0A, 4
_MS_NOSUID, _MS_NODEV, _MNT_DETACH = 2, 4, 2
_LOOP_CONFIG = struct.Struct("=II5Q4I64s64s32s2Q8Q")  # struct loop_config (linux/loop.h)


@functools.cache
def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _mount_loop(image: Path, root: Path) -> None:
    """`image` on a free loop device (freed with its last user), mounted at `root`."""
    backing = os.open(image, os.O_RDWR | os.O_CLOEXEC)
    try:
        for _ in range(20):  # another process may take the free device first
            control = os.open("/dev/loop-control", os.O_RDWR | os.O_CLOEXEC)
            try:
                n = fcntl.ioctl(control, _LOOP_CTL_GET_FREE)
            finally:
                os.close(control)
            dev = f"/dev/loop{n}"
            loop = os.open(dev, os.O_RDWR | os.O_CLOEXEC)
            try:
                config = _LOOP_CONFIG.pack(backing, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                                           _LO_FLAGS_AUTOCLEAR, b"", b"", b"", 0, 0,
                                           *([0] * 8))
                try:
                    fcntl.ioctl(loop, _LOOP_CONFIGURE, config)
                except OSError as e:
                    if e.errno == errno.EBUSY:
                        continue
                    raise
                flags = _MS_NOSUID | _MS_NODEV
                if _libc().mount(dev.encode(), os.fsencode(root), b"ext4", flags,
                                 b"discard") != 0:
                    err = ctypes.get_errno()
                    raise OSError(err, os.strerror(err), str(root))
                return
            finally:
                os.close(loop)  # the mount holds the device now (or nothing does)
        raise OSError(errno.EBUSY, "no free loop device")
    finally:
        os.close(backing)


def sweep(top: Path) -> int:
    """Unmount every file system mounted under `top` (a killed run's temp directory)."""
    prefix = str(top).rstrip("/") + "/"
    n = 0
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return 0
    for line in reversed(lines):  # the innermost first
        point = line.split()[4].encode().decode("unicode_escape")
        if point.startswith(prefix):
            proc.run_sync(["umount", "-l", point], timeout=_MKFS_TIMEOUT_S)
            n += 1
    return n


def _image(root: Path) -> Path:
    return root.with_name(f".{root.name}.disk")


def _template(size: int) -> Path:
    """An empty ext4 image of `size` bytes, made once per machine (like proctor's C programs,
    in its cache directory, under a lock, atomically) and copied sparse into each box."""
    with _lock:
        done = _templates.get(size)
        if done is not None and done.exists():
            return done
        where = cache_dir()
        template = where / f"ext4-{size}.img"
        if not template.exists():
            where.mkdir(parents=True, exist_ok=True)
            with open(where / ".ext4.lock", "w") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)
                if not template.exists():
                    _mkfs(template, size)
        _templates[size] = template
        return template


def _mkfs(template: Path, size: int) -> None:
    tmp = template.with_name(template.name + f".{os.getpid()}.tmp")
    with open(tmp, "wb") as f:
        f.truncate(size)
    res = proc.run_sync(["mkfs.ext4", "-q", "-F", "-m", "0", "-O", "^has_journal",
                         "-E", "lazy_itable_init=1,lazy_journal_init=1,nodiscard", str(tmp)],
                        timeout=_MKFS_TIMEOUT_S)
    if res.exit_code != 0:
        tmp.unlink(missing_ok=True)
        raise OSError(f"mkfs.ext4 failed: {res.stderr.strip()[-300:]}")
    os.replace(tmp, template)


def over(allocated: int, limit: int | None) -> str | None:
    """Why the trial's files break its disk limit (measured, without a file system of its
    own), or None."""
    if limit is None or allocated <= limit:
        return None
    return (f"disk limit: the trial's files take {_mib(allocated)}, more than resources.disk "
            f"({_mib(limit)})")


def _mib(n: int) -> str:
    return f"{n / (1 << 20):.0f} MiB"
