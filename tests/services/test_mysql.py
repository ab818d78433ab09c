"""MySQL (MariaDB) service: a real server, a database per trial, teardown, faults."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
from pathlib import Path
from urllib.parse import urlparse

import pymysql
import pytest

from proctor.errors import ServiceError, SetupError
from proctor.model import ServiceDef
from proctor.services import create
from tests.helpers.services import context, group_members, mysql_available, sandbox_env

pytestmark = pytest.mark.mysql


def connect(handle, **kw) -> pymysql.connections.Connection:
    c = handle.credentials
    return pymysql.connect(host=handle.host, port=handle.port, user=c["user"],
                           password=c["password"], database=c["database"], autocommit=True, **kw)


def one(handle, sql: str):
    with connect(handle) as conn, conn.cursor() as cur:
        cur.execute(sql)
        return cur.fetchone()[0]


def mysql(handle, sql: str, client: str = "mysql") -> subprocess.CompletedProcess:
    return subprocess.run([client, "-N", "-B", "-e", sql], capture_output=True, text=True,
                          env=sandbox_env(handle), timeout=30)


async def test_each_trial_sees_only_its_own_writes(my):
    a, b = await my.provision("t.r0"), await my.provision("t.r1")
    try:
        with connect(a) as conn, conn.cursor() as cur:
            cur.execute("INSERT INTO customers VALUES (4, 'Edsger', NULL)")
            cur.execute("DELETE FROM orders")
        assert one(a, "SELECT count(*) FROM customers") == 4
        assert one(b, "SELECT count(*) FROM customers") == 3
        assert one(b, "SELECT count(*) FROM orders") == 3
        # A trial's user may use only its own database.
        with pytest.raises(pymysql.err.OperationalError):
            pymysql.connect(host=a.host, port=a.port, user=a.credentials["user"],
                            password=a.credentials["password"],
                            database=b.credentials["database"])
    finally:
        await a.release()
        await b.release()


async def test_variables_work_for_the_mysql_clients_and_pymysql(my):
    h = await my.provision("t.r0")
    try:
        assert set(h.env) == {"DATABASE_URL", "MYSQL_HOST", "MYSQL_TCP_PORT", "MYSQL_PWD",
                              "MYSQL_USER", "MYSQL_DATABASE", "MYSQL_HOME"}
        for client in ("mysql", "mariadb"):  # bare: no -h, -u, -p or database
            out = mysql(h, "SELECT current_user(), count(*) FROM customers", client)
            assert out.returncode == 0, out.stderr
            assert out.stdout.split() == [f"{h.credentials['user']}@%", "3"]
        dump = subprocess.run(["mysqldump", "--no-tablespaces", h.env["MYSQL_DATABASE"],
                               "customers"], capture_output=True, text=True,
                              env=sandbox_env(h), timeout=30)
        assert dump.returncode == 0 and "INSERT INTO `customers`" in dump.stdout, dump.stderr
        url = urlparse(h.env["DATABASE_URL"])
        assert url.scheme == "mysql"
        conn = pymysql.connect(host=url.hostname, port=url.port, user=url.username,
                               password=url.password, database=url.path.lstrip("/"))
        with conn, conn.cursor() as cur:
            cur.execute("SELECT name FROM customers ORDER BY id")
            assert [r[0] for r in cur.fetchall()] == ["Ada", "Grace", "Alan"]
        assert h.context()["kind"] == "mysql"
    finally:
        await h.release()


async def test_the_copy_keeps_keys_defaults_and_auto_increment(my_ctx):
    seed = ("CREATE TABLE p (id int AUTO_INCREMENT PRIMARY KEY, name varchar(20) DEFAULT 'x',"
            " up varchar(20) AS (upper(name)) VIRTUAL);\n"
            "CREATE TABLE c (id int PRIMARY KEY, p_id int, FOREIGN KEY (p_id) REFERENCES p (id));\n"
            "INSERT INTO p (name) VALUES ('a'), ('b');\n"
            "INSERT INTO c VALUES (1, 2);\n")
    svc = create(ServiceDef("keys", "mysql", {"seed_sql": seed}), my_ctx)
    await svc.start()
    try:
        h = await svc.provision("t.r0")
        with connect(h) as conn, conn.cursor() as cur:
            cur.execute("INSERT INTO p (name) VALUES ('c')")
            assert cur.lastrowid == 3
            cur.execute("SELECT up FROM p WHERE id = 3")
            assert cur.fetchone()[0] == "C"
            with pytest.raises(pymysql.err.IntegrityError):
                cur.execute("INSERT INTO c VALUES (2, 99)")  # the foreign key came along
        await h.release()
    finally:
        await svc.stop()


async def test_views_and_triggers_are_replayed_into_each_trial(my_ctx):
    seed = ("CREATE TABLE n (v int);\nINSERT INTO n VALUES (1), (2);\n"
            "CREATE VIEW total AS SELECT sum(v) AS s FROM n;\n"
            "CREATE TRIGGER dbl BEFORE INSERT ON n FOR EACH ROW SET NEW.v = NEW.v * 2;\n")
    svc = create(ServiceDef("views", "mysql", {"seed_sql": seed}), my_ctx)
    await svc.start()
    try:
        a, b = await svc.provision("t.r0"), await svc.provision("t.r1")
        with connect(a) as conn, conn.cursor() as cur:
            cur.execute("INSERT INTO n VALUES (5)")
        assert one(a, "SELECT s FROM total") == 13
        assert one(b, "SELECT s FROM total") == 3
        await a.release()
        await b.release()
    finally:
        await svc.stop()


async def test_db_writes_count_the_agents_rows_only(my):
    h = await my.provision("t.r0")
    try:
        out = mysql(h, "INSERT INTO customers VALUES (4, 'a', NULL), (5, 'b', NULL); "
                       "UPDATE customers SET email = 'x' WHERE id = 1; "
                       "DELETE FROM orders WHERE id IN (10, 11)")
        assert out.returncode == 0, out.stderr
        assert await h.db_writes() == [
            {"table": "customers", "inserts": 2, "updates": 1, "deletes": 0},
            {"table": "orders", "inserts": 0, "updates": 0, "deletes": 2},
        ]
    finally:
        await h.release()


async def test_release_drops_the_database_even_with_a_session_open(my):
    h = await my.provision("t.r0")
    name = h.credentials["database"]
    held = connect(h)
    held.autocommit(False)
    with held.cursor() as cur:
        cur.execute("UPDATE customers SET name = 'z' WHERE id = 1")  # holds locks
    await h.release()
    await my.server.call(lambda: None)
    rows = await my.server.call(my.server._exec, "SHOW DATABASES LIKE %s", (name,))
    assert rows == []
    assert not Path(h.env["MYSQL_HOME"]).exists()


async def test_a_seed_with_an_sql_error_names_file_and_line(my, my_ctx):
    path = my_ctx.base_dir / "bad-seed.sql"
    path.write_text("CREATE TABLE a (id int);\n\n-- wrong:\nINSERT INTO a\n  VALUES (1, 2);\n")
    svc = create(ServiceDef("broken", "mysql", {"seed_file": str(path)}), my_ctx)
    with pytest.raises(SetupError) as e:
        await svc.start()
    msg = str(e.value)
    assert f"{path}:4:" in msg and "Column count doesn't match" in msg, msg
    h = await my.provision("t.r0")  # the shared server is unharmed
    assert one(h, "SELECT count(*) FROM customers") == 3
    await h.release()


async def test_a_seed_that_creates_its_own_database_is_refused(my_ctx):
    seed = "CREATE DATABASE shop;\nUSE shop;\nCREATE TABLE t (id int);\n"
    svc = create(ServiceDef("own", "mysql", {"seed_sql": seed}), my_ctx)
    with pytest.raises(SetupError, match="creates database"):
        await svc.start()


def test_missing_server_names_the_package(monkeypatch):
    import proctor.services.mysql as mymod

    monkeypatch.setattr(mymod, "_which", lambda *names, dirs=(): None)
    with pytest.raises(SetupError, match="Debian package `mariadb-server`"):
        mymod.binaries()


@pytest.mark.skipif(not mysql_available(), reason="MariaDB is not installed")
async def test_a_crash_fails_one_trial_then_the_server_restarts(tmp_path_factory):
    ctx = context(tmp_path_factory, "mycrash")
    svc = create(ServiceDef("db", "mysql", {"seed_sql": "CREATE TABLE t (n int);"}), ctx)
    await svc.start()
    try:
        pid, base = svc.server.proc.pid, svc.server.base
        os.killpg(pid, signal.SIGKILL)
        svc.server.proc.wait(10)
        with pytest.raises(ServiceError, match="killed by SIGKILL"):
            await svc.provision("x.r0")
        h = await svc.provision("x.r1")
        assert one(h, "SELECT count(*) FROM t") == 0
        await h.release()
        assert not base.exists()
        pid, base = svc.server.proc.pid, svc.server.base
    finally:
        await svc.stop()
    await asyncio.sleep(0)
    assert group_members(pid) == []
    assert not base.exists()
