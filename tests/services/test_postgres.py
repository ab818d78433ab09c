"""PostgreSQL service: a real server, a cloned database per trial, teardown, faults."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import time
from pathlib import Path

import psycopg
import pytest

from proctor.errors import ServiceError, SetupError
from proctor.model import ServiceDef
from proctor.services import create
from tests.helpers.services import context, group_members, pg_available, sandbox_env

pytestmark = pytest.mark.postgres


async def query(dsn: str, sql: str, *params):
    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
        cur = await conn.execute(sql, params or None)
        return await cur.fetchall() if cur.description else None


def psql(handle, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(["psql", "-X", "-tA", *args], capture_output=True, text=True,
                          env=env or sandbox_env(handle), timeout=30)


async def drain(service) -> None:
    """Wait until the server thread has done what was queued (background drops)."""
    await service.server.call(lambda: None)


async def test_each_trial_sees_only_its_own_writes(pg):
    a, b = await pg.provision("t.r0"), await pg.provision("t.r1")
    try:
        assert a.credentials["database"] != b.credentials["database"]
        await query(a.credentials["dsn"], "INSERT INTO customers VALUES (4, 'Edsger', 'e@x')")
        await query(a.credentials["dsn"], "DELETE FROM orders")
        assert (await query(a.credentials["dsn"], "SELECT count(*) FROM customers"))[0][0] == 4
        assert (await query(b.credentials["dsn"], "SELECT count(*) FROM customers"))[0][0] == 3
        assert (await query(b.credentials["dsn"], "SELECT count(*) FROM orders"))[0][0] == 3
        # A trial's credentials open only its own database.
        other = a.credentials["dsn"].replace(f"dbname={a.credentials['database']}",
                                             f"dbname={b.credentials['database']}")
        with pytest.raises(psycopg.OperationalError):
            await query(other, "SELECT 1")
    finally:
        await a.release()
        await b.release()


async def test_variables_work_for_psql_and_psycopg(pg):
    h = await pg.provision("t.r0")
    try:
        assert set(h.env) == {"DATABASE_URL", "PGHOST", "PGPORT", "PGUSER", "PGPASSWORD",
                              "PGDATABASE"}
        assert h.env["DATABASE_URL"] == h.url
        assert h.url.startswith(f"postgresql://{h.env['PGUSER']}:{h.env['PGPASSWORD']}@"
                                f"{h.host}:{h.port}/{h.env['PGDATABASE']}")
        out = psql(h, "-c", "SELECT count(*) FROM customers")  # PG* alone, no arguments
        assert out.returncode == 0, out.stderr
        assert out.stdout.strip() == "3"
        out = psql(h, h.env["DATABASE_URL"], "-c", "SELECT current_user",
                   env={"PATH": os.environ["PATH"]})  # the URL alone
        assert out.stdout.strip() == h.env["PGUSER"], out.stderr
        rows = await query(h.env["DATABASE_URL"], "SELECT name FROM customers ORDER BY id")
        assert [r[0] for r in rows] == ["Ada", "Grace", "Alan"]
        ctx = h.context()
        assert {ctx["host"], ctx["port"], ctx["user"], ctx["database"]} == {
            h.host, h.port, h.env["PGUSER"], h.env["PGDATABASE"]}
        assert ctx["kind"] == "postgres" and ctx["dsn"] and ctx["password"]
    finally:
        await h.release()


async def test_the_agent_owns_the_seeded_schema(pg):
    h = await pg.provision("t.r0")
    try:
        out = psql(h, "-v", "ON_ERROR_STOP=1",
                   "-c", "ALTER TABLE customers ADD COLUMN vip boolean DEFAULT false",
                   "-c", "TRUNCATE orders", "-c", "CREATE TABLE notes (t text)",
                   "-c", "DROP TABLE orders")
        assert out.returncode == 0, out.stderr
    finally:
        await h.release()


async def test_db_writes_are_exact_right_after_the_agent_finished(pg):
    h = await pg.provision("t.r0")
    try:
        out = psql(h, "-v", "ON_ERROR_STOP=1",
                   "-c", "INSERT INTO customers VALUES (4, 'a', NULL), (5, 'b', NULL)",
                   "-c", "UPDATE customers SET email = 'x' WHERE id = 1",
                   "-c", "DELETE FROM orders WHERE id IN (10, 11)")
        assert out.returncode == 0, out.stderr
        # A session the agent left open holds counters it has not published yet.
        lingering = psycopg.connect(h.credentials["dsn"], autocommit=True)
        lingering.execute("INSERT INTO orders VALUES (13, 2, 1.00)")
        writes = await h.db_writes()
        assert writes == [
            {"table": "customers", "inserts": 2, "updates": 1, "deletes": 0},
            {"table": "orders", "inserts": 1, "updates": 0, "deletes": 2},
        ]
        assert lingering.closed or lingering.broken or _dead(lingering)
    finally:
        await h.release()


def _dead(conn: psycopg.Connection) -> bool:
    try:
        conn.execute("SELECT 1")
    except psycopg.OperationalError:
        return True
    return False


async def test_a_trial_without_writes_reports_none(pg):
    h = await pg.provision("t.r0")
    try:
        assert psql(h, "-c", "SELECT count(*) FROM orders").returncode == 0
        assert await h.db_writes() == []
    finally:
        await h.release()


async def test_release_drops_the_database_and_role(pg):
    h = await pg.provision("t.r0")
    name = h.credentials["database"]
    await h.release()
    await h.release()  # idempotent
    await drain(pg)
    admin = pg.server.admin
    rows = await pg.server.call(lambda: admin().execute(
        "SELECT (SELECT count(*) FROM pg_database WHERE datname = %s),"
        "       (SELECT count(*) FROM pg_roles WHERE rolname = %s)", (name, name)).fetchone())
    assert rows == (0, 0)


@pytest.mark.parametrize("where", ["file", "inline"])
async def test_a_seed_with_an_sql_error_names_file_and_line(pg, pg_ctx, where):
    bad = ("CREATE TABLE a (id int);\n"
           "\n"
           "-- the third statement is wrong\n"
           "INSERT INTO a\n"
           "  VALUES (1, 2);\n"
           "SELECT 1;\n")
    if where == "file":
        path = pg_ctx.base_dir / "bad-seed.sql"
        path.write_text(bad)
        config = {"seed_file": str(path)}
    else:
        config = {"seed_sql": bad, "seed_origin": "spec.yaml:12:11"}
    svc = create(ServiceDef("broken", "postgres", config), pg_ctx)
    with pytest.raises(SetupError) as e:
        await svc.start()
    msg = str(e.value)
    if where == "file":
        assert f"{path}:4:" in msg, msg
    else:
        assert "line 4 of the inline seed of service 'broken' (spec.yaml:12:11)" in msg, msg
    assert "INSERT has more expressions than target columns" in msg
    assert "at line 5" in msg  # where in the statement PostgreSQL pointed
    assert "service 'broken'" in msg
    # The shared server is unharmed.
    h = await pg.provision("t.r0")
    assert (await query(h.credentials["dsn"], "SELECT count(*) FROM customers"))[0][0] == 3
    await h.release()


async def test_missing_seed_file_is_a_setup_error(pg_ctx):
    svc = create(ServiceDef("db2", "postgres", {"seed": "nope.sql"}), pg_ctx)
    with pytest.raises(SetupError, match="seed file not found"):
        await svc.start()


def test_missing_server_names_the_package(monkeypatch):
    import proctor.services.postgres as pgmod

    monkeypatch.setattr(pgmod.glob, "glob", lambda pattern: [])
    monkeypatch.setattr(pgmod.shutil, "which", lambda name: None)
    with pytest.raises(SetupError, match="Debian package `postgresql`"):
        pgmod.bin_dir()


@pytest.mark.skipif(not pg_available(), reason="PostgreSQL is not installed")
async def test_two_runs_at_once_then_a_crash_and_a_clean_teardown(tmp_path_factory):
    """Two runs side by side get separate servers; killing one fails that run's next trial
    with the cause, the one after gets a restarted server; stop() leaves nothing behind."""
    seed = "CREATE TABLE t (n int); INSERT INTO t VALUES (1);"
    ctxs = [context(tmp_path_factory, run) for run in ("runa", "runb")]
    svcs = [create(ServiceDef("db", "postgres", {"seed_sql": seed}), c) for c in ctxs]
    await asyncio.gather(*(s.start() for s in svcs))
    a, b = svcs
    try:
        assert (a.server.host, a.server.port) != (b.server.host, b.server.port)
        assert a.server.base != b.server.base
        ha, hb = await a.provision("x.r0"), await b.provision("x.r0")
        await query(ha.credentials["dsn"], "INSERT INTO t VALUES (2)")
        assert (await query(hb.credentials["dsn"], "SELECT count(*) FROM t"))[0][0] == 1

        # Crash run A's server.
        old_pid, old_base = a.server.proc.pid, a.server.base
        os.killpg(old_pid, signal.SIGKILL)
        a.server.proc.wait(10)
        with pytest.raises(ServiceError, match="killed by SIGKILL"):
            await a.provision("x.r1")
        assert await ha.db_writes() == []  # its database went with the server
        await ha.release()
        h2 = await a.provision("x.r2")  # restarted, template rebuilt
        assert a.server.proc.pid != old_pid and not old_base.exists()
        assert (await query(h2.credentials["dsn"], "SELECT count(*) FROM t"))[0][0] == 1
        await h2.release()
        # Run B never noticed.
        assert (await query(hb.credentials["dsn"], "SELECT count(*) FROM t"))[0][0] == 1
        await hb.release()
    finally:
        servers = [(s.server.proc.pid, s.server.base) for s in svcs]
        await asyncio.gather(*(s.stop() for s in svcs))
    for pid, base in servers:
        assert group_members(pid) == [], "server processes left behind"
        assert not base.exists(), f"{base} left behind"
    assert list(Path("/dev/shm").glob("proctor-runa-*")) == []


async def test_stop_always_cleans_up_even_when_start_fails(tmp_path_factory):
    if not pg_available():
        pytest.skip("PostgreSQL is not installed")
    ctx = context(tmp_path_factory, "runfail")
    svc = create(ServiceDef("db", "postgres", {"seed_sql": "CREATE TABLE;"}), ctx)
    with pytest.raises(SetupError):
        await svc.start()
    time.sleep(0.05)
    leftovers = [p for p in Path("/dev/shm").glob("proctor-runfail-*")]
    leftovers += list(Path(ctx.tmp_dir).glob("proctor-runfail-*"))
    assert leftovers == []
