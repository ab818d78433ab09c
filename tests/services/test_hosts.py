"""Service names as host names: `db:5432`, `http://smtp:PORT` from a sandboxed command."""

from __future__ import annotations

import asyncio
import shutil

import pytest

from proctor.model import ServiceDef
from proctor.sandbox import hosts
from proctor.services import ServiceContext, ServiceHandle, create
from tests.helpers.services import sandbox_env

needs_namespaces = pytest.mark.skipif(not hosts.supported(),
                                      reason="no mount namespace here (see docs/services.md)")


async def run(argv: list[str], env: dict[str, str]) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(*argv, env=env, stdout=asyncio.subprocess.PIPE,
                                                stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), 30)
    return proc.returncode, out.decode(), err.decode()


def test_the_hosts_file_keeps_the_machines_entries(tmp_path):
    h = ServiceHandle(name="db", kind="postgres", host="127.9.8.7", port=5432, url="")
    bad = ServiceHandle(name="not a host", kind="http_mock", host="127.1.1.1", port=1, url="")
    assert hosts.aliases([h, bad]) == {"db": "127.9.8.7"}
    text = hosts.hosts_text(hosts.aliases([h]))
    assert "localhost" in text and text.endswith("127.9.8.7 db\n")
    assert hosts.wrap(["true"], None) == ["true"]


@needs_namespaces
async def test_names_resolve_only_inside_the_wrapped_command(tmp_path):
    h = ServiceHandle(name="db", kind="postgres", host="127.9.8.7", port=5432, url="")
    path = hosts.write_hosts_file(hosts.aliases([h]), tmp_path)
    code, out, _ = await run(hosts.wrap(["getent", "hosts", "db"], path), {"PATH": "/usr/bin:/bin"})
    assert code == 0 and out.split() == ["127.9.8.7", "db"]
    code, _, _ = await run(["getent", "hosts", "db"], {"PATH": "/usr/bin:/bin"})
    assert code != 0  # the machine's /etc/hosts is untouched


@needs_namespaces
@pytest.mark.postgres
async def test_psql_and_curl_reach_services_by_name(pg, tmp_path):
    ctx = ServiceContext(run_id="hosts", base_dir=tmp_path, tmp_dir=tmp_path)
    mock = create(ServiceDef("smtp", "http_mock",
                             {"routes": [{"method": "GET", "path": "/ping", "response": "pong"}]}),
                  ctx)
    db, smtp = await pg.provision("t.r0"), await mock.provision("t.r0")
    try:
        path = hosts.write_hosts_file(hosts.aliases([db, smtp]), tmp_path)
        env = sandbox_env(db, smtp)
        code, out, err = await run(hosts.wrap(
            ["psql", "-X", "-tA", "-h", "db", "-p", str(db.port), "-c", "SELECT count(*) FROM customers"],
            path), env)
        assert (code, out.strip()) == (0, "3"), err
        if shutil.which("curl"):
            code, out, err = await run(hosts.wrap(
                ["curl", "-sf", f"http://smtp:{smtp.port}/ping"], path), env)
            assert (code, out) == (0, "pong"), err
    finally:
        await db.release()
        await smtp.release()
