"""The docker sandbox beyond the shared conformance suite: limits through the engine, labels,
host names for services, the egress proxy and what is left behind."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess

import pytest

from proctor.sandbox import create_sandbox
from proctor.sandbox.base import Resources, SandboxSpec
from tests.helpers.docker import containers, gone

pytestmark = [pytest.mark.slow]


def _spec(tmp_path, **kw) -> SandboxSpec:
    return SandboxSpec(trial_id="t.r0", root=tmp_path / "sb",
                       env={"PROCTOR_RUN_ID": "dktest-limits"}, **kw)


async def test_limits_and_labels_are_the_engines(base_image, tmp_path):
    sb = await create_sandbox("docker", _spec(tmp_path, resources=Resources(
        memory_bytes=256 << 20, cpus=0.5, pids=64)))
    try:
        info = json.loads(subprocess.run(["docker", "inspect", sb.container], capture_output=True,
                                         text=True, check=True).stdout)[0]
        host = info["HostConfig"]
        assert (host["Memory"], host["NanoCpus"], host["PidsLimit"]) == (256 << 20, 5 * 10**8, 64)
        assert host["NetworkMode"] == "none" and not host["PortBindings"]
        assert info["Config"]["Labels"] == {"proctor.run": "dktest-limits",
                                           "proctor.trial": "t.r0"}
        assert info["Name"].startswith("/") and "t.r0" not in info["Name"]  # engine-chosen
        res = await sb.exec("id -u; echo $HOME", timeout=10)
        assert res.stdout.split() == ["65534", "/home/agent"]
    finally:
        await sb.close()
    assert gone("dktest-limits") == []


async def test_closing_kills_the_init_and_the_engine_removes_the_container(
        base_image, tmp_path, monkeypatch):
    """A trial's close does not wait for the removal: it kills the container's init (every
    process of it dies with it) and the engine removes the container (--rm)."""
    import uuid

    from proctor.sandbox.docker import container as dockercontainer
    from tests.security.test_processes import sleepers

    removed: list[str] = []
    real_remove = dockercontainer.remove

    async def remove(container: str) -> None:
        removed.append(container)
        await real_remove(container)

    monkeypatch.setattr(dockercontainer, "remove", remove)
    tag = f"{uuid.uuid4().int % 10**6 + 4 * 10**6}"  # a sleep length no other process uses
    sb = await create_sandbox("docker", _spec(tmp_path))
    try:
        info = json.loads(subprocess.run(["docker", "inspect", sb.container], capture_output=True,
                                         text=True, check=True).stdout)[0]
        assert info["HostConfig"]["AutoRemove"] is True
        await sb.exec(f"setsid sleep {tag} > /dev/null 2>&1 &", timeout=10)
        assert sleepers(f"sleep {tag}")
        await sb.keep_processes()  # a daemon left running to the end, as an agent may leave
    finally:
        await sb.close()
    assert removed == [] and sleepers(f"sleep {tag}") == []
    assert gone("dktest-limits") == []


async def test_a_container_whose_init_is_not_known_is_removed_and_awaited(base_image, tmp_path):
    from proctor.sandbox.docker.processes import pidfd_of

    assert pidfd_of(os.getpid(), "0" * 64) is None  # a pid outside the container: no handle
    sb = await create_sandbox("docker", _spec(tmp_path))
    os.close(sb._init)
    sb._init = None
    await sb.close()
    assert containers("dktest-limits") == []  # removed before close returned


async def test_memory_and_process_limits_are_faults(base_image, tmp_path):
    sb = await create_sandbox("docker", _spec(tmp_path, resources=Resources(
        memory_bytes=64 << 20, pids=40)))
    try:
        assert sb.fault() is None
        await sb.exec("python3 -c 'b = bytearray(200 << 20); print(len(b))'", timeout=30)
        assert "out of memory" in (sb.fault() or "")
    finally:
        await sb.close()
    sb = await create_sandbox("docker", _spec(tmp_path, resources=Resources(pids=40)))
    try:
        await sb.exec("for i in $(seq 80); do sleep 5 & done; wait", timeout=20)
        assert "process limit reached" in (sb.fault() or "")
    finally:
        await sb.close()


async def test_service_names_resolve_to_their_endpoints(base_image, tmp_path):
    server = await asyncio.start_server(_hello, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        sb = await create_sandbox("docker", _spec(tmp_path, hosts={"db": "127.0.0.1"},
                                                  endpoints=[("127.0.0.1", port)]))
        try:
            res = await sb.exec(f"python3 -c \"import socket; s = socket.create_connection("
                                f"('db', {port}), 5); print(s.recv(10).decode())\"", timeout=20)
            assert res.stdout.strip() == "hello", res.stderr
            res = await sb.exec("getent hosts db", timeout=10)
            assert res.stdout.split() == ["127.0.0.1", "db"]
        finally:
            await sb.close()
    finally:
        server.close()


async def _hello(reader, writer):
    writer.write(b"hello")
    await writer.drain()
    writer.close()


async def test_a_keeper_survives_kill_processes(base_image, tmp_path):
    sb = await create_sandbox("docker", _spec(tmp_path))
    try:
        await sb.exec("sleep 100 > /dev/null 2>&1 & sleep 100 > /dev/null 2>&1 &", timeout=10)
        assert await sb.kill_processes() == 2
        assert (await sb.exec("echo alive", timeout=10)).stdout == "alive\n"
        assert await sb.kill_processes() == 0
    finally:
        await sb.close()


async def test_timeout_spares_what_earlier_commands_started(base_image, tmp_path):
    sb = await create_sandbox("docker", _spec(tmp_path))
    try:
        await sb.exec("setsid sleep 100 > /dev/null 2>&1 &", timeout=10)
        res = await sb.exec("sleep 30", timeout=0.5)
        assert res.timed_out
        ps = await sb.exec("ps -eo args", timeout=10)
        assert "sleep 100" in ps.stdout and "sleep 30" not in ps.stdout
    finally:
        await sb.close()


async def test_paths_outside_the_places_are_read_through_the_engine(base_image, tmp_path):
    sb = await create_sandbox("docker", _spec(tmp_path))
    try:
        assert (await sb.read_file("/etc/os-release")).startswith(b"PRETTY_NAME=\"Debian")
        assert (await sb.stat("/usr/bin")).kind == "dir"
        assert (await sb.stat("/etc/os-release")).kind == "file"
        assert await sb.stat("/nope") is None
        assert "python3" in await sb.list_dir("/usr/bin")
        with pytest.raises(FileNotFoundError):
            await sb.read_file("/nope")
        with pytest.raises(IsADirectoryError):
            await sb.read_file("/etc")
        await sb.exec("ln -s /etc/hostname link", timeout=10)  # a link out of the workspace
        assert await sb.read_file("link") == await sb.read_file("/etc/hostname")
        with pytest.raises(PermissionError):
            await sb.write_file("/etc/evil", b"x")
    finally:
        await sb.close()


async def test_readonly_paths_are_shown_at_their_host_path(base_image, tmp_path):
    tool = tmp_path / "tools" / "my-agent"
    tool.parent.mkdir()
    tool.write_text("#!/bin/sh\necho agent-ran\n")
    tool.chmod(0o755)
    sb = await create_sandbox("docker", _spec(tmp_path, readonly_paths=[str(tool)]))
    try:
        assert (await sb.exec(str(tool), timeout=10)).stdout == "agent-ran\n"
        res = await sb.exec(f"echo x > {tool}", timeout=10)
        assert res.exit_code != 0 and tool.read_text().endswith("agent-ran\n")
    finally:
        await sb.close()


async def test_only_the_places_are_writable(base_image, tmp_path):
    sb = await create_sandbox("docker", _spec(tmp_path))
    try:
        res = await sb.exec("for d in /var/tmp /run/lock /etc /usr/local /; do touch $d/x 2>/dev/null "
                            "&& echo wrote $d; done; touch x $HOME/x /tmp/x /dev/shm/x && echo ok",
                            timeout=10)
        assert res.stdout == "ok\n", res.stdout + res.stderr
    finally:
        await sb.close()
