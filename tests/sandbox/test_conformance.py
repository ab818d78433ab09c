"""The Sandbox contract, run against every registered backend (and both local modes).

A backend that passes these can be used by `--backend NAME` with every check, agent and the
custom-check runner unchanged. The pattern is Inspect AI's sandbox self-check.
"""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

import pytest

from proctor.errors import ProctorError
from proctor.sandbox import BACKENDS, create_sandbox
from proctor.sandbox.base import Resources, SandboxSpec, UnreadableFile
from tests.docker.engine import require_engine

VARIANTS = [("local", "auto"), ("local", "none"),
            *((name, "auto") for name in BACKENDS.names() if name != "local")]


def _usable(backend: str, isolation: str) -> str | None:
    try:
        BACKENDS.get(backend)().preflight(isolation)
    except (ProctorError, KeyError, NotImplementedError, AttributeError) as e:
        return str(e)
    return None


@pytest.fixture(params=VARIANTS, ids=[f"{b}-{i}" for b, i in VARIANTS])
async def sandbox(request, tmp_path):
    backend, isolation = request.param
    if backend == "docker":  # skips only where ./setup.sh said no engine can run here
        require_engine()
    if (why := _usable(backend, isolation)) is not None:
        pytest.skip(f"{backend} backend not usable here: {why}")
    spec = SandboxSpec(trial_id="conf.r0", root=tmp_path / "sb", env={"GREETING": "hello"},
                       output_limit=10_000, resources=Resources(memory_bytes=1 << 30, pids=512),
                       isolation=isolation)
    sb = await create_sandbox(backend, spec)
    yield sb
    await sb.close()


async def test_exec_returns_exit_code_and_both_streams(sandbox):
    res = await sandbox.exec("echo out; echo err >&2; exit 3", timeout=10)
    assert (res.exit_code, res.stdout, res.stderr) == (3, "out\n", "err\n")


async def test_exec_env_cwd_and_stdin(sandbox):
    res = await sandbox.exec('echo "$GREETING $EXTRA"; cat; pwd', timeout=10,
                             env={"EXTRA": "world"}, stdin=b"piped\n")
    assert res.stdout.splitlines() == ["hello world", "piped", sandbox.workdir]
    await sandbox.exec("mkdir -p sub", timeout=10)
    res = await sandbox.exec("pwd", timeout=10, cwd=f"{sandbox.workdir}/sub")
    assert res.stdout.strip() == f"{sandbox.workdir}/sub"


async def test_timeout_kills_everything_the_command_started(sandbox):
    # Sleeps far longer than any test: had the timeout waited for them, the run would hang.
    res = await sandbox.exec("sleep 3131 & sleep 3132", timeout=0.5)
    assert res.timed_out and res.exit_code is None
    assert not _running("sleep 3131") and not _running("sleep 3132")


def _running(cmdline: str) -> list[int]:
    """Processes on this machine (any namespace) whose command line is `cmdline`."""
    import os

    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if f.read().replace(b"\0", b" ").strip() == cmdline.encode():
                    found.append(int(pid))
        except OSError:
            continue
    return found


async def test_output_past_the_limit_is_counted_and_dropped(sandbox):
    res = await sandbox.exec("head -c 50000 /dev/zero | tr '\\0' x", timeout=10)
    assert res.truncated and res.stdout.startswith("x" * 10_000)
    assert "40000 more bytes" in res.stdout


async def test_files_written_read_listed_and_stat(sandbox):
    await sandbox.write_file("dir/a.txt", b"alpha")
    assert await sandbox.read_file("dir/a.txt") == b"alpha"
    assert await sandbox.read_file(f"{sandbox.workdir}/dir/a.txt", limit=2) == b"alp"
    res = await sandbox.exec("cat dir/a.txt", timeout=10)
    assert res.stdout == "alpha"
    assert (await sandbox.stat("dir/a.txt")).kind == "file"
    assert (await sandbox.stat("dir")).kind == "dir"
    assert await sandbox.stat("nope") is None
    assert await sandbox.list_dir("dir") == ["a.txt"]
    await sandbox.exec("mkdir dir/sub", timeout=10)
    assert await sandbox.list_dir("dir") == ["a.txt", "sub/"]
    with pytest.raises(FileNotFoundError):
        await sandbox.read_file("nope")


async def test_read_if_file_tells_what_a_path_is_and_reads_only_files(sandbox):
    """`stat` and `read_file` in one step: a file's bytes (limit + 1), any other kind's
    entry alone, never blocking on a FIFO; a file the agent cannot read is not read for it
    (an isolated sandbox's agent is not root)."""
    await sandbox.exec("mkdir d && printf 0123456789 > f && ln -s f l && mkfifo p && "
                       "echo secret > locked && chmod 000 locked", timeout=10)
    assert await sandbox.read_if_file("nope") is None
    assert await sandbox.read_if_file("nope/deeper") is None
    entry, data = await sandbox.read_if_file("f", 4)
    assert (entry.kind, entry.size, data) == ("file", 10, b"01234")
    entry, data = await sandbox.read_if_file(f"{sandbox.workdir}/l")
    assert (entry.kind, data) == ("file", b"0123456789")
    entry, data = await sandbox.read_if_file("d")
    assert (entry.kind, data) == ("dir", None)
    entry, data = await asyncio.wait_for(sandbox.read_if_file("p"), 10)
    assert (entry.kind, data) == ("other", None)
    if sandbox.isolated:
        with pytest.raises(UnreadableFile):
            await sandbox.read_if_file("locked")


async def test_files_the_commands_write_are_seen(sandbox):
    await sandbox.exec("echo made > made.txt", timeout=10)
    assert await sandbox.read_file("made.txt") == b"made\n"


async def test_copy_in_and_export(sandbox, tmp_path):
    src = tmp_path / "scaffold"
    (src / "pkg").mkdir(parents=True)
    (src / "pkg" / "m.py").write_text("x = 1\n")
    await sandbox.copy_in(src, ".")
    res = await sandbox.exec("cat pkg/m.py && echo more >> pkg/m.py", timeout=10)
    assert res.stdout == "x = 1\n" and res.exit_code == 0
    exported = await sandbox.export()
    assert (Path(exported) / "pkg" / "m.py").read_text() == "x = 1\nmore\n"


async def test_snapshot_compares_by_content(sandbox):
    await sandbox.exec("echo aaaa > f.txt", timeout=10)
    before = await sandbox.snapshot()
    await sandbox.exec("cp -p f.txt /tmp/keep; echo bbbb > f.txt; touch -r /tmp/keep f.txt",
                       timeout=10)
    after = await sandbox.snapshot()
    assert before["f.txt"].size == after["f.txt"].size
    assert before["f.txt"].digest != after["f.txt"].digest


async def test_trace_records_every_process(sandbox):
    res = await sandbox.exec("ls / > /dev/null; true", timeout=10, trace=True)
    argvs = res.execs or []
    assert any(a[0] == "ls" for a in argvs), argvs
    assert not any(a[0].endswith(("nsenter", "setpriv", "exectrace")) for a in argvs), argvs


async def test_kill_processes_stops_daemons(sandbox):
    await sandbox.exec("setsid sh -c 'while :; do date > tick; sleep 0.05; done' "
                       "> /dev/null 2>&1 &", timeout=10)
    await asyncio.sleep(0.3)
    await sandbox.kill_processes()
    first = await sandbox.read_file("tick")
    await asyncio.sleep(0.3)
    assert await sandbox.read_file("tick") == first


async def test_expose_reaches_a_host_endpoint(sandbox):
    server = await asyncio.start_server(_answer, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        host, inner_port = await sandbox.expose("127.0.0.1", port)
        res = await sandbox.exec(
            f"python3 -c \"import socket; s = socket.create_connection(('{host}', {inner_port}));"
            f" print(s.recv(10).decode())\"", timeout=10)
        assert res.stdout.strip() == "proctor", res.stderr
    finally:
        server.close()


async def _answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    writer.write(b"proctor")
    await writer.drain()
    writer.close()


async def test_isolated_sandboxes_cannot_reach_unexposed_host_ports(sandbox):
    if not sandbox.isolated:
        pytest.skip("only an isolated sandbox has its own network")
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    try:
        res = await sandbox.exec(
            f"python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), 2)\"",
            timeout=10)
        assert res.exit_code != 0
    finally:
        listener.close()


async def test_close_removes_the_sandbox(sandbox, tmp_path):
    await sandbox.write_file("x", b"1")
    await sandbox.close()
    assert not (tmp_path / "sb").exists()


async def test_files_in_home_and_tmp_are_reachable(sandbox):
    await sandbox.exec('echo h > "$HOME/h.txt"; echo t > "$TMPDIR/t.txt"', timeout=10)
    home, tmp = sandbox.env["HOME"], sandbox.env["TMPDIR"]
    assert await sandbox.read_file(f"{home}/h.txt") == b"h\n"
    assert await sandbox.read_file(f"{tmp}/t.txt") == b"t\n"
    assert (await sandbox.stat(home)).kind == "dir"
    snap = await sandbox.snapshot()
    assert any(p.endswith("h.txt") for p in snap) and any(p.endswith("t.txt") for p in snap)


async def test_close_ends_forwarded_connections(request, tmp_path):
    # A command leaves a connection open through a forwarder; closing the sandbox ends it,
    # and no task of the forwarder is left pending (it would be "destroyed but pending" when
    # the loop closes, on stderr even under -q).
    backend, isolation = "local", "auto"
    if (why := _usable(backend, isolation)) is not None:
        pytest.skip(f"no isolated sandbox here: {why}")
    connected, done = asyncio.Event(), asyncio.Event()

    async def hold(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connected.set()
        await done.wait()  # a server that keeps the connection open (a model proxy's stream)
        writer.close()

    server = await asyncio.start_server(hold, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    spec = SandboxSpec(trial_id="fwd.r0", root=tmp_path / "sb", env={}, isolation=isolation,
                       endpoints=[("127.0.0.1", port)])
    sb = await create_sandbox(backend, spec)
    try:
        await sb.exec(f"python3 -c \"import socket, time; s = socket.create_connection("
                      f"('127.0.0.1', {port})); time.sleep(60)\" > /dev/null 2>&1 &", timeout=10)
        await asyncio.wait_for(connected.wait(), 10)
    finally:
        await sb.close()
        pending = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()
                   and "Forwarder" in getattr(t.get_coro(), "__qualname__", "")]
        done.set()
        server.close()
    assert pending == []
