"""Reading a trial's places from the host: every entry, every byte, never a silent limit.

The places (workspace, HOME, /tmp, /dev/shm) are directories proctor made; once the agent's
processes are gone nothing changes them. They are walked through directory descriptors
(`openat` relative to the parent, `O_NOFOLLOW` everywhere), so

* depth is unbounded: no path is ever longer than one name (no PATH_MAX), and at most
  `_OPEN_DIRS` directories are held open at once (a closed one is found again from its
  child's `..`);
* a symlink is recorded, never followed: nothing outside the places is read;
* every regular file is hashed whatever its size, in 64 KiB blocks, a block of zeros counting
  the same whether it is a hole or written zeros, and holes are skipped without reading
  (`SEEK_DATA`/`SEEK_HOLE`): a 300 MiB sparse file costs what its data costs;
* the walk stops only at a limit it names (`FilesLimit`: too many entries, past its
  deadline), and the trial then ends `error` — never judged on a partial view.

As root every file is readable; otherwise (proctor runs as the agent's uid) a directory or
file the agent made unreadable is opened by giving its owner (proctor's uid) read access for
the moment, and its mode put back.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import stat
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from proctor.fieldwise import Fieldwise
from proctor.sandbox.base import Entry, Snapshot

BLOCK = 1 << 16
_ZERO_BLOCK = bytes(BLOCK)
MAX_ENTRIES = 1_000_000  # what a snapshot holds in memory at most (~200 MB): then `error`
_OPEN_DIRS = 64
_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY


class FilesLimit(Exception):
    """The trial's files could not all be read: the message names the limit."""


@dataclass(eq=False, repr=False)
class Budget(Fieldwise):
    """What one walk may take: a deadline (monotonic seconds) and a number of entries."""

    deadline: float
    max_entries: int = MAX_ENTRIES
    entries: int = 0
    allocated: int = 0  # bytes the files take on disk (st_blocks)
    read: int = 0  # bytes read so far
    # (entries, bytes read, monotonic time): past any of them, a walk meant to be cheap
    # enough for the event loop gives up (TooBig), to be done again in a thread.
    stop_at: tuple[int, int, float] | None = None

    def tick(self, n: int = 1) -> None:
        self.entries += n
        if self.entries > self.max_entries:
            raise FilesLimit(f"the sandbox holds more than {self.max_entries:,} entries")
        if self.stop_at is not None:
            entries, size, until = self.stop_at
            if self.entries > entries or self.read > size or time.monotonic() > until:
                raise TooBig
        elif self.entries % 256 == 0:
            self.check_time()

    def add_read(self, n: int) -> None:
        """`n` more bytes read: past a cheap walk's bound it gives up; time is checked every
        4 MiB."""
        before, self.read = self.read, self.read + n
        if self.stop_at is not None and self.read > self.stop_at[1]:
            raise TooBig
        if before >> 22 != self.read >> 22:
            self.check_time()

    def check_time(self) -> None:
        if time.monotonic() > self.deadline:
            raise FilesLimit("reading the sandbox's files did not finish before the grading "
                             "deadline")


class TooBig(Exception):
    """A walk meant to be cheap (on the event loop) is not: redo it in a thread."""


@dataclass(eq=False, repr=False)
class _Frame(Fieldwise):
    """A directory being walked by the snapshot: its descriptor and the names left."""
    fd: int | None  # None: closed to bound the open descriptors; found again from a child
    rel: str  # the path of this directory in the snapshot, with a trailing "/" (or "")
    names: list[str] = field(default_factory=list)
    mode: int | None = None  # the mode to put back when done (a directory made readable)


def snapshot(places: list[tuple[str, Path]], budget: Budget) -> Snapshot:
    """Every entry of each place, by content. `places`: (prefix in the snapshot, host dir)."""
    out: Snapshot = {}
    try:
        for prefix, root in places:
            walk(root, prefix, budget, out.__setitem__)
    except OSError as e:  # never judged on what could be read: the trial is `error`
        raise FilesLimit(f"could not read the sandbox's files: {e}") from None
    return out


def walk(root: Path, prefix: str, budget: Budget, emit: Callable[[str, Entry], None],
         prune: Callable[[str], bool] | None = None, content: bool = True) -> None:
    """Emit (path, entry) for everything under `root`, depth first; directories whose name
    `prune` accepts are emitted but not walked into; without `content`, files are not read
    (their digest is empty)."""
    names = os.listdir(root)  # most places are empty: then no descriptor is needed
    if not names:
        return
    top = os.open(root, _DIR)
    stack = [_Frame(top, prefix, sorted(names, reverse=True))]
    try:
        while stack:
            frame = stack[-1]
            assert frame.fd is not None
            if not frame.names:
                stack.pop()
                if stack and stack[-1].fd is None:  # found again from its child's ".."
                    stack[-1].fd = os.open("..", _DIR, dir_fd=frame.fd)
                _done(frame)
                continue
            name = frame.names.pop()
            budget.tick()
            child = _entry(frame.fd, name, frame.rel + name, budget, emit, content)
            if child is not None and prune is not None and prune(name):
                os.close(child[0])
                child = None
            if child is not None:
                fd, mode = child
                opened = [f for f in stack[1:] if f.fd is not None]
                if len(opened) >= _OPEN_DIRS:  # the oldest but the place's own root
                    os.close(opened[0].fd)  # type: ignore[arg-type]
                    opened[0].fd = None
                stack.append(_Frame(fd, frame.rel + name + "/", _names(fd), mode))
    finally:
        for frame in stack:
            if frame.fd is not None:
                _done(frame)


def _done(frame: _Frame) -> None:
    assert frame.fd is not None
    try:
        if frame.mode is not None:
            os.fchmod(frame.fd, frame.mode)
    finally:
        os.close(frame.fd)
        frame.fd = None


def _entry(dirfd: int, name: str, rel: str, budget: Budget, emit: Callable[[str, Entry], None],
           content: bool = True) -> tuple[int, int | None] | None:
    """Emit one entry; for a directory, its descriptor (to walk into) and the mode to put
    back when done with it."""
    try:
        st = os.stat(name, dir_fd=dirfd, follow_symlinks=False)
    except FileNotFoundError:
        return None
    mode = st.st_mode
    if stat.S_ISDIR(mode):
        emit(rel, Entry("dir", 0, ""))
        return _open(dirfd, name, _DIR, st)
    if stat.S_ISLNK(mode):
        emit(rel, Entry("symlink", st.st_size, "-> " + os.readlink(name, dir_fd=dirfd)))
    elif stat.S_ISREG(mode):
        budget.allocated += st.st_blocks * 512
        if not content:
            emit(rel, Entry("file", st.st_size, ""))
            return None
        fd, _ = _open(dirfd, name, _FILE, st, keep=False)
        try:
            emit(rel, Entry("file", st.st_size, digest(fd, st.st_size, st.st_blocks, budget)))
        finally:
            os.close(fd)
    else:
        emit(rel, Entry("other", 0, ""))
    return None


def _names(fd: int) -> list[str]:
    """The directory's names, in reverse order (popped from the end: walked in order)."""
    # Listing a descriptor dups it and sets it up (ten system calls); opening the same
    # directory again through /proc/self/fd (no name the agent controls is looked up)
    # lists it in five.
    try:
        names = os.listdir(_SELF_FD + str(fd))
    except OSError:  # no /proc, or it will not reopen it: the long way
        names = os.listdir(fd)
    return sorted(names, reverse=True)


_SELF_FD = "/proc/self/fd/"


def _open(dirfd: int, name: str, flags: int, st: os.stat_result,
          keep: bool = True) -> tuple[int, int | None]:
    """Open an entry the walk found: (fd, the mode to put back later or None). Without root,
    one its owner (proctor's uid, the agent's too) made unreadable is given read (and for a
    directory search) access: for the moment of the open, or while it is walked (`keep`)."""
    try:
        return os.open(name, flags, dir_fd=dirfd), None
    except PermissionError:
        if os.geteuid() == 0 or st.st_uid != os.geteuid():
            raise
    old = stat.S_IMODE(st.st_mode)
    os.chmod(name, old | stat.S_IRUSR | (stat.S_IXUSR if stat.S_ISDIR(st.st_mode) else 0),
             dir_fd=dirfd)
    try:
        fd = os.open(name, flags, dir_fd=dirfd)
    except BaseException:
        os.chmod(name, old, dir_fd=dirfd)
        raise
    if keep:
        return fd, old
    os.chmod(name, old, dir_fd=dirfd)
    return fd, None


def digest(fd: int, size: int, blocks: int | None = None, budget: Budget | None = None) -> str:
    """BLAKE2b of the content in 64 KiB blocks, where a run of all-zero blocks counts by its
    length whether it is a hole or written zeros: holes are never read, and the same content
    has the same digest however it is laid out."""
    h = hashlib.blake2b(digest_size=16)
    h.update(size.to_bytes(8, "little"))
    block = zeros = 0  # the next block to hash; all-zero blocks not yet written to h
    for start, end in data_extents(fd, size, blocks):
        first = start // BLOCK
        if first > block:  # whole blocks of hole
            zeros += first - block
            block = first
        while block * BLOCK < end:
            data = os.pread(fd, BLOCK, block * BLOCK)
            if not data:
                break
            if budget is not None:
                budget.add_read(len(data))
            if _zero(data):
                zeros += 1
            else:
                if zeros:
                    h.update(b"\0" + zeros.to_bytes(8, "little"))
                    zeros = 0
                h.update(b"\1")
                h.update(data)
            block += 1
    zeros += max(0, -(-size // BLOCK) - block)
    if zeros:
        h.update(b"\0" + zeros.to_bytes(8, "little"))
    return h.hexdigest()


def _zero(data: bytes) -> bool:
    return data == _ZERO_BLOCK if len(data) == BLOCK else not data.strip(b"\0")


def data_extents(fd: int, size: int, blocks: int | None = None) -> Iterator[tuple[int, int]]:
    """(start, end) of each stretch of the file that may hold data, in order: the file's
    data extents (SEEK_DATA / SEEK_HOLE), or the whole file where that is not supported."""
    if size == 0:
        return
    if blocks is None:
        blocks = os.fstat(fd).st_blocks
    if blocks * 512 >= size:  # no room for a hole: one stretch, no seeking
        yield 0, size
        return
    pos = 0
    while pos < size:
        try:
            start = os.lseek(fd, pos, os.SEEK_DATA)
        except OSError as e:
            if e.errno == errno.ENXIO:  # only a hole from here on
                return
            if e.errno == errno.EINVAL:  # not supported here: all of it
                yield pos, size
                return
            raise
        end = min(os.lseek(fd, start, os.SEEK_HOLE), size)
        if end <= start:
            return
        yield start, end
        pos = end


def read_data(fd: int, size: int, chunk: int = 1 << 20) -> Iterator[tuple[int, bytes]]:
    """The file's data as (offset, bytes) chunks, holes skipped; a new extent starts at an
    offset the previous chunk did not end at."""
    for start, end in data_extents(fd, size):
        pos = start
        while pos < end:
            data = os.pread(fd, min(chunk, end - pos), pos)
            if not data:
                break
            yield pos, data
            pos += len(data)


def read_fd(fd: int, n: int, size: int | None = None) -> bytes:
    """Up to `n` bytes from the descriptor's position; `size`: the file's, as fstat gave it
    (a short read past it is the end: no last read to see it)."""
    parts, got = [], 0
    while n > 0:
        want = min(n, 1 << 20)
        chunk = os.read(fd, want)
        if not chunk:
            break
        parts.append(chunk)
        n -= len(chunk)
        got += len(chunk)
        if size is not None and got >= size and len(chunk) < want:
            break
    return b"".join(parts)


def stream(where: list[tuple[tuple[Path, str] | None, str]],
           sink: Callable[[str, int, bytes], None], budget: Budget) -> None:
    """For each ((place root, path in it), name): the file's data as sink(name, offset,
    chunk) calls, holes skipped, then sink(name, -1, b""); gone or not a file: skipped."""
    for place, name in where:
        fd = open_in(*place) if place is not None else None
        if fd is None:
            continue
        try:
            for offset, chunk in read_data(fd, os.fstat(fd).st_size):
                budget.add_read(len(chunk))
                sink(name, offset, chunk)
        except OSError as e:
            raise FilesLimit(f"could not read {name}: {e.strerror or e}") from None
        finally:
            os.close(fd)
        sink(name, -1, b"")


def open_in(root: Path, rel: str) -> int | None:
    """A regular file at `rel` under `root`, opened without following any symlink on the way
    (None if it is not there, or not a regular file, any more)."""
    parts = [p for p in rel.split("/") if p]
    if not parts:
        return None
    fd = os.open(root, _DIR)
    try:
        for part in parts[:-1]:
            nxt = os.open(part, _DIR, dir_fd=fd)
            os.close(fd)
            fd = nxt
        st = os.stat(parts[-1], dir_fd=fd, follow_symlinks=False)
        if not stat.S_ISREG(st.st_mode):
            return None
        return _open(fd, parts[-1], _FILE, st, keep=False)[0]
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as e:
        if e.errno == errno.ELOOP:  # a symlink where a directory was: not followed
            return None
        raise
    finally:
        os.close(fd)


def copy_sparse(src: str, dst: str) -> None:
    """`shutil.copy2` that keeps holes holes (`--keep` of a 3 GiB sparse file writes its data,
    not 3 GiB of zeros)."""
    import shutil

    with contextlib.ExitStack() as stack:
        fin = os.open(src, _FILE)
        stack.callback(os.close, fin)
        st = os.fstat(fin)
        if not stat.S_ISREG(st.st_mode):
            shutil.copy2(src, dst, follow_symlinks=False)
            return
        fout = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        stack.callback(os.close, fout)
        fast = True  # copy_file_range, where the kernel can (not across file systems)
        for start, end in data_extents(fin, st.st_size):
            pos = start
            while pos < end:
                n = 0
                if fast:
                    try:
                        n = os.copy_file_range(fin, fout, end - pos, pos, pos)
                    except OSError as e:
                        if e.errno not in (errno.EXDEV, errno.EINVAL, errno.ENOSYS,
                                           errno.EOPNOTSUPP):
                            raise
                        fast = False
                if not fast:
                    data = os.pread(fin, min(end - pos, 1 << 20), pos)
                    n = os.pwrite(fout, data, pos) if data else 0
                if n == 0:
                    break
                pos += n
        os.ftruncate(fout, st.st_size)
    shutil.copystat(src, dst, follow_symlinks=False)
