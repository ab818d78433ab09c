"""A seeded fuzz of the spawner's request protocol (sandbox/spawner.c), against a real box:
short, oversized and malformed requests, bad descriptor sets, bad request memfds and inline
strings, random bytes and random mutations of valid requests. Every one must be answered with exactly one
E reply (id 0 for what is not a whole request, else its own id) and change nothing: the
spawner never forks, leaks no descriptor, and afterwards still runs a real command (the
honest twin). A fixed corpus plus RANDOM_CASES random ones, a few seconds in all. And the
orders proctor gives a tracer on its own socket (TRACER): one that is not an order ends that
tracer alone (D), one of the other variant is refused with the command's 126, and the box
goes on running traced commands."""

from __future__ import annotations

import array
import asyncio
import errno
import os
import random
import socket
import struct
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

from proctor.sandbox.namespaces import Box, missing
from proctor.sandbox.spawn import (
    FLAG_CAPTURE,
    FLAG_TRACE,
    MAX_INLINE,
    OP_KILL,
    OP_KILLALL,
    OP_LISTEN,
    OP_NEWTRIAL,
    OP_OPEN,
    OP_PING,
    OP_RUN,
    OP_TRACER,
    REPLY,
    REQUEST,
)

SEED = 20261126
RANDOM_CASES = 400
UNKNOWN_FLAG = 0x8000_0000  # refused by every op: a mutated request stays malformed


@dataclass
class Case:
    name: str
    data: bytes
    fds: list[int] = field(default_factory=list)

    @property
    def is_request(self) -> bool:
        """One whole request (its struct, maybe inline strings) with all its descriptors
        (the spawner takes up to 8)."""
        return REQUEST.size <= len(self.data) <= REQUEST.size + MAX_INLINE and len(self.fds) <= 8


FLAGS_AT = 24  # the offset of `flags` in a request

def req(op: int, id_: int, sig: int = 0, argc: int = 0, envc: int = 0, as_mib: int = 0,
        flags: int = 0, cap_per: int = 0, cap_total: int = 0) -> bytes:
    return REQUEST.pack(op, id_, sig, argc, envc, as_mib, flags, cap_per, cap_total)


class Fds:
    """Descriptors of every kind a request can carry; closed at the end."""

    def __init__(self) -> None:
        self.opened: list[int] = []

    def keep(self, fd: int) -> int:
        self.opened.append(fd)
        return fd

    def memfd(self, data: bytes) -> int:
        fd = self.keep(os.memfd_create("fuzz", os.MFD_CLOEXEC))
        os.write(fd, data)
        return fd

    def sparse(self, size: int) -> int:
        fd = self.keep(os.memfd_create("fuzz", os.MFD_CLOEXEC))
        os.ftruncate(fd, size)
        return fd

    def devnull(self) -> int:
        return self.keep(os.open(os.devnull, os.O_RDWR | os.O_CLOEXEC))

    def others(self) -> list[int]:
        r, w = os.pipe()
        a, b = socket.socketpair()
        return [self.keep(r), self.keep(w), self.keep(os.open("/", os.O_PATH | os.O_CLOEXEC)),
                self.keep(os.open("/", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)),
                self.keep(a.detach()), self.keep(b.detach()),
                self.keep(os.open("/dev/zero", os.O_RDONLY | os.O_CLOEXEC))]

    def close(self) -> None:
        for fd in self.opened:
            os.close(fd)


def corpus(fds: Fds) -> Iterator[Case]:
    """Known-bad requests, one of each kind."""
    ids = iter(range(1000, 10**6))
    good_run = b"/\0/bin/true\0PATH=/bin\0"
    io = [fds.devnull() for _ in range(3)]
    yield Case("empty", b"")
    for n in (1, 4, 8, 12, REQUEST.size - 1):
        yield Case(f"short {n}", req(OP_PING, next(ids))[:n])
    for n in (REQUEST.size + MAX_INLINE + 1, 65536):
        yield Case(f"oversized {n}", req(OP_RUN, next(ids), argc=1, envc=1) + b"\1" * (n - REQUEST.size),
                   io)
    # Inline strings: with an op that takes none, not what the header says, with a memfd too
    for op in (OP_PING, OP_KILL, OP_NEWTRIAL, OP_KILLALL, OP_TRACER, 0, 9):
        for n in (REQUEST.size + 1, 64, 4096):
            yield Case(f"op {op} with {n} bytes", req(op, next(ids), sig=9 if op == OP_KILL else 0)
                       + b"\1" * (n - REQUEST.size))
    for name, strings in {
        "no final NUL": b"/\0/bin/true\0PATH=/bin", "too few strings": b"/\0/bin/true\0",
        "too many strings": good_run + b"X=1\0", "one NUL": b"\0",
        "at the limit, too many": b"\0" * MAX_INLINE,
    }.items():
        yield Case(f"inline {name}", req(OP_RUN, next(ids), argc=1, envc=1) + strings, io)
    # A traced command is a tracer's, never the spawner's: refused, however well formed
    yield Case("traced run", req(OP_RUN, next(ids), argc=1, envc=1, flags=FLAG_TRACE) + good_run,
               [*io, fds.devnull()])
    yield Case("traced run, a memfd", req(OP_RUN, next(ids), argc=1, envc=1, flags=FLAG_TRACE),
               [fds.memfd(good_run), *io, fds.devnull()])
    yield Case("inline run and a memfd", req(OP_RUN, next(ids), argc=1, envc=1) + good_run,
               [fds.memfd(good_run), *io])
    yield Case("inline run with 2 fds", req(OP_RUN, next(ids), argc=1, envc=1) + good_run,
               io[:2])
    yield Case("inline listen and a memfd", req(OP_LISTEN, next(ids)) + b"127.0.0.1\x008080\0",
               [fds.memfd(b"127.0.0.1\x008080\0")])
    yield Case("inline listen port 0", req(OP_LISTEN, next(ids)) + b"127.0.0.1\x000\0")
    yield Case("inline open two paths", req(OP_OPEN, next(ids), sig=2) + b"/etc\0/tmp\0")
    yield Case("inline open, no final NUL", req(OP_OPEN, next(ids)) + b"/etc")
    yield Case("inline open with a field", req(OP_OPEN, next(ids), argc=1) + b"/etc\0")
    for op in (0, 9, 255, 0xFFFFFFFF):
        yield Case(f"unknown op {op}", req(op, next(ids)))
    # RUN: descriptor sets that do not fit
    for n in (0, 1, 3, 5, 6, 8):
        yield Case(f"run with {n} fds", req(OP_RUN, next(ids), argc=1, envc=1),
                   [fds.memfd(good_run), *io, *[fds.devnull() for _ in range(max(0, n - 4))]][:n])
    yield Case("traced run with 4 fds", req(OP_RUN, next(ids), argc=1, envc=1, flags=FLAG_TRACE),
               [fds.memfd(good_run), *io])
    yield Case("run with 16 fds (truncated)", req(OP_RUN, next(ids), argc=1, envc=1),
               [fds.memfd(good_run), *io, *[fds.devnull() for _ in range(12)]])
    # RUN: request memfds that do not hold what the header says
    bad_memfds = {
        "empty memfd": fds.memfd(b""),
        "no final NUL": fds.memfd(b"/\0/bin/true\0PATH=/bin"),
        "too few strings": fds.memfd(b"/\0/bin/true\0"),
        "too many strings": fds.memfd(good_run + b"X=1\0"),
        "over 64 MiB": fds.sparse((64 << 20) + 1),
    }
    for name, fd in bad_memfds.items():
        yield Case(name, req(OP_RUN, next(ids), argc=1, envc=1), [fd, *io])
    for i, fd in enumerate(fds.others()):
        yield Case(f"request fd of another kind #{i}", req(OP_RUN, next(ids), argc=1, envc=1),
                   [fd, *io])
    for name, header in {
        "argc 0": req(OP_RUN, next(ids), argc=0, envc=2),
        "huge argc": req(OP_RUN, next(ids), argc=0xFFFFFFFF, envc=0),
        "huge envc": req(OP_RUN, next(ids), argc=1, envc=0xFFFFFFFF),
        "argc + envc wrap": req(OP_RUN, next(ids), argc=0x80000000, envc=0x80000000),
        "unknown flag": req(OP_RUN, next(ids), argc=1, envc=1, flags=4),
        "capture without trace": req(OP_RUN, next(ids), argc=1, envc=1, flags=2, cap_per=10,
                                     cap_total=10),
        "capture limits without capture": req(OP_RUN, next(ids), argc=1, envc=1, cap_per=1),
        "a signal with run": req(OP_RUN, next(ids), sig=9, argc=1, envc=1),
    }.items():
        yield Case(name, header, [fds.memfd(good_run), *io])
    # KILL: signals out of range, fields that do not belong, descriptors
    for sig in (0, -1, 65, 1000, -(2**31)):
        yield Case(f"kill signal {sig}", req(OP_KILL, next(ids), sig=sig))
    yield Case("kill with argc", req(OP_KILL, next(ids), sig=9, argc=1))
    yield Case("kill with an fd", req(OP_KILL, next(ids), sig=9), [fds.devnull()])
    # LISTEN: addresses and ports that are not
    for name, strings in {
        "port 0": b"127.0.0.1\x000\0", "port 65536": b"127.0.0.1\x0065536\0",
        "port -1": b"127.0.0.1\0-1\0", "port abc": b"127.0.0.1\0abc\0", "empty port": b"127.0.0.1\0\0",
        "port 80x": b"127.0.0.1\x0080x\0", "bad ipv4": b"1.2.3.4.5\x0080\0",
        "bad ipv6": b"::1::\x0080\0", "one string": b"127.0.0.1\0", "three": b"a\0b\0c\0",
        "no final NUL": b"127.0.0.1\x0080",
    }.items():
        yield Case(f"listen {name}", req(OP_LISTEN, next(ids)), [fds.memfd(strings)])
    yield Case("listen without fd", req(OP_LISTEN, next(ids)))
    yield Case("listen with 2 fds", req(OP_LISTEN, next(ids)),
               [fds.memfd(b"127.0.0.1\x008080\0"), fds.devnull()])
    # OPEN: how to open out of range, fields that do not belong, not exactly one path
    for sig in (-1, 3, 2**31 - 1):
        yield Case(f"open how {sig}", req(OP_OPEN, next(ids), sig=sig), [fds.memfd(b"/etc\0")])
    yield Case("open with argc", req(OP_OPEN, next(ids), sig=2, argc=1), [fds.memfd(b"/etc\0")])
    yield Case("open with a flag", req(OP_OPEN, next(ids), flags=1), [fds.memfd(b"/etc\0")])
    yield Case("open without fd", req(OP_OPEN, next(ids), sig=2))
    yield Case("open two paths", req(OP_OPEN, next(ids), sig=2), [fds.memfd(b"/etc\0/tmp\0")])
    yield Case("open with 2 fds", req(OP_OPEN, next(ids)),
               [fds.memfd(b"/etc\0"), fds.devnull()])
    # The ops without arguments, with arguments
    for op in (OP_NEWTRIAL, OP_PING, OP_KILLALL, OP_TRACER):
        yield Case(f"op {op} with an fd", req(op, next(ids)), [fds.devnull()])
        yield Case(f"op {op} with a field", req(op, next(ids), as_mib=1))
    # TRACER takes FLAG_CAPTURE alone, NEWTRIAL FLAG_TRACE with or without it, KILL FLAG_TRACE
    for op, flags in ((OP_TRACER, FLAG_TRACE), (OP_TRACER, 4), (OP_NEWTRIAL, FLAG_CAPTURE),
                      (OP_NEWTRIAL, 4), (OP_KILL, FLAG_CAPTURE)):
        yield Case(f"op {op} with flags {flags}",
                   req(op, next(ids), sig=9 if op == OP_KILL else 0, flags=flags))
    for field_, value in (("sig", 9), ("argc", 1), ("envc", 1), ("cap_per", 1)):
        yield Case(f"tracer with {field_}", req(OP_TRACER, next(ids), **{field_: value}))


def random_cases(fds: Fds, rng: random.Random, n: int) -> Iterator[Case]:
    """Random bytes, and valid requests with random bytes changed (an unknown flag kept, so
    that none can become a valid request), with random descriptor sets."""
    pool = [fds.devnull(), fds.memfd(b"/\0/bin/true\0"), fds.memfd(bytes(range(256))),
            *fds.others()]
    for i in range(n):
        kind = rng.randrange(3)
        if kind == 0:  # random bytes of a random length (a request's op only by a fluke)
            size = rng.choice([rng.randrange(REQUEST.size), rng.randrange(REQUEST.size + 1, 512)])
            data = rng.randbytes(size)
        else:
            op = rng.choice([OP_RUN, OP_KILL, OP_LISTEN, OP_NEWTRIAL, OP_PING, OP_KILLALL, OP_OPEN,
                             OP_TRACER])
            data = bytearray(req(op, rng.randrange(2**32), rng.randrange(-70, 70),
                                 rng.randrange(4), rng.randrange(4), 0, UNKNOWN_FLAG))
            for _ in range(rng.randrange(1, 6)):
                at = rng.choice([i for i in range(REQUEST.size) if not FLAGS_AT <= i < FLAGS_AT + 4])
                data[at] = rng.randrange(256)  # anything but the flags
            data = bytes(data)
        yield Case(f"random #{i}", data, rng.sample(pool, rng.randrange(0, 6)))


def _send(sock: socket.socket, case: Case) -> None:
    anc = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", case.fds))] if case.fds else []
    sock.sendmsg([case.data], anc)


def _replies_until_ping(sock: socket.socket, ping_id: int) -> list[tuple[str, int, int, int]]:
    """Every reply up to the PING's (the ping sent after the case); without the ping's."""
    sock.sendmsg([req(OP_PING, ping_id)])
    out = []
    while True:
        data, anc, _, _ = sock.recvmsg(REPLY.size, socket.CMSG_SPACE(4))
        assert not anc, "a reply carried a descriptor"
        kind, id_, value, err = REPLY.unpack(data)
        if chr(kind) == "P" and id_ == ping_id:
            return out
        out.append((chr(kind), id_, value, err))


def _reply(sock: socket.socket, kind: str, id_: int) -> tuple[str, int, int, int]:
    """The next reply of that kind and id (a tracer's Z, the spawner's D): every request's
    reply comes before a PING's, but these are not replies to a request."""
    while True:
        got = REPLY.unpack(sock.recv(REPLY.size))
        if (chr(got[0]), got[1]) == (kind, id_):
            return (kind, *got[1:])
        _passed.append((chr(got[0]), got[1]))


_passed: list[tuple[str, int]] = []  # the replies `_reply` read past (kind, id)


def _new_tracer(sock: socket.socket, id_: int, flags: int = 0) -> socket.socket:
    """A tracer of the box's trial (TRACER): the socket its orders go on."""
    sock.sendmsg([req(OP_TRACER, id_, flags=flags)])
    data, anc, _, _ = sock.recvmsg(REPLY.size, socket.CMSG_SPACE(4))
    kind, got, _, err = REPLY.unpack(data)
    assert (chr(kind), got, err) == ("N", id_, 0) and anc, (chr(kind), got, err)
    return socket.socket(fileno=array.array("i", anc[0][2])[0])


def _fd_count(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def _tracers(pid: int) -> list[str]:
    """The spawner's children that are tracers (the trial's init is one of its children too)."""
    return [c for c in _children(pid) if open(f"/proc/{c}/comm").read().strip() == "tracer"]


def _children(pid: int) -> list[str]:
    return open(f"/proc/{pid}/task/{pid}/children").read().split()


@pytest.fixture
async def box():
    if missing() is not None:
        pytest.skip(f"no namespace box here: {missing()}")
    box = await Box.start([], workdir="/", hosts_file=None, env={})
    loop = asyncio.get_running_loop()
    loop.remove_reader(box.spawner.sock.fileno())  # the test reads the socket itself
    box.spawner.sock.setblocking(True)
    box.spawner.sock.settimeout(10)
    try:
        yield box
    finally:
        await box.close()


async def test_malformed_requests_are_refused_and_change_nothing(box):
    sock, spawner = box.spawner.sock, box.spawner_pid
    fds = Fds()
    try:
        cases = [*corpus(fds), *random_cases(fds, random.Random(SEED), RANDOM_CASES)]
        _replies_until_ping(sock, 1)
        before = _fd_count(spawner)
        pings = iter(range(2**31, 2**32))
        for case in cases:
            _send(sock, case)
            replies = _replies_until_ping(sock, next(pings))
            want_id = struct.unpack_from("=I", case.data, 4)[0] if case.is_request else 0
            assert len(replies) == 1, (case.name, replies)
            kind, id_, _, err = replies[0]
            assert kind == "E" and id_ == want_id and err, (case.name, replies)
            if not case.is_request:
                assert err == errno.EBADMSG, (case.name, replies)
        assert _children(spawner) == [], "the spawner started something"
        assert _fd_count(spawner) == before, "the spawner kept descriptors"
    finally:
        fds.close()
    # The honest twin: a well-formed request still runs a command, as the agent's uid.
    out_r, out_w = os.pipe()
    request = os.memfd_create("ok", os.MFD_CLOEXEC)
    os.write(request, b"/\0/bin/sh\0-c\0id -u\0PATH=/usr/bin:/bin\0")
    null = os.open(os.devnull, os.O_RDWR)
    try:
        _send(sock, Case("run", req(OP_RUN, 7, argc=3, envc=1), [request, null, out_w, null]))
        os.close(out_w)
        assert "E" not in [k for k, *_ in _replies_until_ping(sock, 8)]  # (no S: X at its end)
        assert os.read(out_r, 100).decode().strip() == str(box.uid)
        # ... and so does one with its strings inline, and one traced: given to a tracer
        # the spawner makes (TRACER), on the tracer's own socket, its Z on the spawner's.
        trace_r, trace_w = os.pipe()
        tracer = _new_tracer(sock, 13)
        for id_, to, flags, extra in ((10, sock, 0, []), (11, tracer, FLAG_TRACE, [trace_w])):
            got_r, got_w = os.pipe()
            _send(to, Case("inline run", req(OP_RUN, id_, argc=3, envc=1, flags=flags)
                           + b"/\0/bin/sh\0-c\0echo inline $X\0X=" + str(id_).encode() + b"\0",
                           [null, got_w, null, *extra]))
            os.close(got_w)
            assert os.read(got_r, 100) == f"inline {id_}\n".encode()
            if to is tracer:
                assert _reply(sock, "Z", id_)[2] == 0
            else:
                seen = [(k, i) for k, i, *_ in _replies_until_ping(sock, 12)]
                assert ("E", id_) not in seen
                _passed.extend(seen)
            os.close(got_r)
        os.close(trace_w)
        tracer.close()
        with os.fdopen(trace_r, "rb") as trace:
            assert b"/bin/sh" in trace.read(), "the traced one was not traced"
        sock.sendmsg([req(OP_KILLALL, 9)])
        kinds = set(_passed)
        while ("A", 9) not in kinds:
            kinds.add(tuple(REPLY.unpack(sock.recv(REPLY.size))[:2]))
            kinds = {(chr(k) if isinstance(k, int) else k, i) for k, i in kinds}
        assert ("X", 10) in kinds
    finally:
        for fd in (out_r, request, null):
            os.close(fd)


ORDER = b"/\0/bin/sh\0-c\0echo ordered\0PATH=/usr/bin:/bin\0"


def bad_orders(fds: Fds) -> Iterator[Case]:
    """What a tracer must not take as an order: each ends that tracer (exit 126)."""
    io = [fds.devnull() for _ in range(3)]
    trace = fds.devnull()
    good = req(OP_RUN, 50, argc=3, envc=1, flags=FLAG_TRACE)
    yield Case("short", good[:10], [*io, trace])
    yield Case("no descriptors", good + ORDER)
    yield Case("three descriptors", good + ORDER, io)
    yield Case("not traced", req(OP_RUN, 51, argc=3, envc=1) + ORDER, [*io, trace])
    yield Case("another op", req(OP_PING, 52) + ORDER, [*io, trace])
    yield Case("an unknown flag", req(OP_RUN, 53, argc=3, envc=1, flags=FLAG_TRACE | 4) + ORDER,
               [*io, trace])
    yield Case("a signal", req(OP_RUN, 54, sig=9, argc=3, envc=1, flags=FLAG_TRACE) + ORDER,
               [*io, trace])
    yield Case("no argv", req(OP_RUN, 55, argc=0, envc=1, flags=FLAG_TRACE) + ORDER, [*io, trace])
    yield Case("limits without capture",
               req(OP_RUN, 56, argc=3, envc=1, flags=FLAG_TRACE, cap_per=1) + ORDER, [*io, trace])


async def test_what_is_not_an_order_ends_its_tracer_alone(box):
    """A tracer's socket is proctor's alone, but a tracer trusts it no more than the spawner
    trusts its own: anything that is not a well-formed order ends that tracer (D: exit 126)
    before it starts anything, and the box's next tracer runs a traced command as ever; an
    order of the other variant (capturing, to a tracer that does not) is refused with the
    command's own 126 and a word on its stderr."""
    sock, spawner = box.spawner.sock, box.spawner_pid
    fds = Fds()
    try:
        for i, case in enumerate(bad_orders(fds)):
            tracer = _new_tracer(sock, 100 + i)
            _send(tracer, case)
            tracer.settimeout(10)
            assert tracer.recv(REPLY.size) == b"", case.name  # it ended: EOF
            tracer.close()
            assert _reply(sock, "D", 100 + i)[2] == 126 << 8, case.name  # its TRACER's id
            assert _replies_until_ping(sock, 200 + i) == [], case.name
        assert _tracers(spawner) == [], "a tracer stayed"
        # The other variant: refused, said, the tracer kept.
        tracer = _new_tracer(sock, 300)
        err_r, err_w = os.pipe()
        null = fds.devnull()
        _send(tracer, Case("capturing", req(OP_RUN, 301, argc=3, envc=1,
                                            flags=FLAG_TRACE | FLAG_CAPTURE, cap_per=10,
                                            cap_total=10) + ORDER, [null, null, err_w, null]))
        os.close(err_w)
        assert b"a tracer without the command's filter" in os.read(err_r, 200)
        os.close(err_r)
        assert _reply(sock, "Z", 301)[2] == 126 << 8
        # The honest twin: the same tracer runs a command of its own kind.
        got_r, got_w = os.pipe()
        _send(tracer, Case("order", req(OP_RUN, 303, argc=3, envc=1, flags=FLAG_TRACE) + ORDER,
                           [null, got_w, null, null]))
        os.close(got_w)
        assert os.read(got_r, 100) == b"ordered\n"
        os.close(got_r)
        assert _reply(sock, "Z", 303)[2] == 0
        tracer.close()
    finally:
        fds.close()
