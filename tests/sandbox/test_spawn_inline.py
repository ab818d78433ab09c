"""A request's strings (RUN's cwd, argv and environment, OPEN's path, LISTEN's address) go
inline in its message up to MAX_INLINE bytes, in a memfd beyond (spawn.py, spawner.c): no
memfd is made for the usual small request, and both ways give the spawner the same strings,
traced or not."""

from __future__ import annotations

import errno
import os

import pytest

from proctor.sandbox import spawn
from proctor.sandbox.spawn import MAX_INLINE, OPEN_READ
from tests.helpers.box import new_sandbox, run_traced


@pytest.fixture
async def box_sandbox(tmp_path):
    sb = await new_sandbox(tmp_path / "sb")
    yield sb
    await sb.close()


@pytest.fixture
def memfds(monkeypatch):
    """How many request memfds proctor makes."""
    made: list[str] = []
    real = os.memfd_create

    def counting(name, *args):
        if name == "proctor-request":
            made.append(name)
        return real(name, *args)

    monkeypatch.setattr(spawn.os, "memfd_create", counting)
    return made


@pytest.mark.parametrize("traced", [False, True])
async def test_small_and_large_requests_give_the_same_strings(box_sandbox, memfds, traced,
                                                              tmp_path):
    sb = box_sandbox
    script = 'printf "%s|%s|%s" "$1" "${#BIG}" "$(pwd)"'
    for size, want_memfds in ((10, 0), (MAX_INLINE, 1)):  # inline, then a memfd
        env = {**sb.env, "BIG": "b" * size}
        argv = ["/bin/sh", "-c", script, "sh", "arg é"]
        if traced:
            fd = os.open(tmp_path / f"trace-{size}", os.O_WRONLY | os.O_CREAT, 0o600)
            try:
                res = await sb.box.spawner.run(argv, env=env, cwd="/tmp", timeout=30,
                                               trace_fd=fd)
            finally:
                os.close(fd)
            assert b"/bin/sh" in (tmp_path / f"trace-{size}").read_bytes()
        else:
            res = await sb.box.spawner.run(argv, env=env, cwd="/tmp", timeout=30)
        assert (res.exit_code, res.stdout) == (0, f"arg é|{size}|/tmp"), res
        assert len(memfds) == want_memfds, (size, memfds)


async def test_a_traced_command_with_inline_strings_is_recorded(box_sandbox, memfds,
                                                                tmp_path):
    res = await run_traced(box_sandbox, ["/bin/sh", "-c", "/bin/true; echo done"],
                           tmp_path / "trace")
    assert res.exit_code == 0 and res.stdout == "done\n", res
    assert b"/bin/true" in (tmp_path / "trace").read_bytes()
    assert memfds == []


async def test_open_inline_and_a_path_too_long_for_it(box_sandbox, memfds):
    sb = box_sandbox
    await sb.exec("echo hello > f.txt", timeout=30)
    fd, _ = await sb.box.spawner.open(os.path.join(sb.workdir, "f.txt"), OPEN_READ)
    try:
        assert os.read(fd, 100) == b"hello\n"
    finally:
        os.close(fd)
    assert memfds == []
    long = "/" + "a/" * (MAX_INLINE // 2 + 1)  # more than fits inline: a memfd
    with pytest.raises(OSError) as e:
        await sb.box.spawner.open(long, OPEN_READ)
    assert e.value.filename == long and e.value.errno == errno.ENAMETOOLONG  #, as the agent gets
    assert len(memfds) == 1
