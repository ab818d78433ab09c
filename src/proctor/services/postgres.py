"""PostgreSQL: one real server per run, a template database per seed, and per trial a role and
a database cloned from the template (`CREATE DATABASE ... TEMPLATE`), dropped afterwards.

Isolation: every trial gets a role named like its database, and pg_hba allows a role only into
the database of the same name (`sameuser`), so a trial cannot reach another trial's data. The
seeded objects belong to `proctor_owner`, of which every trial role is a member.
"""

from __future__ import annotations

import contextlib
import glob
import os
import re
import shutil
import signal
import time
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql

from proctor import proc
from proctor.errors import SetupError
from proctor.services import _proc
from proctor.services._dbserver import DbHandle, DbServer, DbService, TrialDb
from proctor.services.base import DbWrite
from proctor.services.seed import Seed, statement_start

ADMIN = "postgres"  # the superuser; pg_dump output says `OWNER TO postgres`
OWNER = "proctor_owner"  # owns the seeded objects; every trial role is a member
PG_CONFIG_TIMEOUT_S = 20.0

SETTINGS = {
    # Throwaway data: durability costs time and buys nothing.
    "fsync": "off",
    "synchronous_commit": "off",
    "full_page_writes": "off",
    "wal_level": "minimal",
    "max_wal_senders": "0",
    "max_connections": "300",
    "max_wal_size": "128MB",  # bounds the disk (or memory) WAL takes between checkpoints
    "min_wal_size": "32MB",
    "autovacuum": "off",  # trial databases live for minutes
    "track_counts": "on",  # db_writes() reads the per-table counters
    "log_min_messages": "warning",
    "logging_collector": "off",
    "ssl": "off",
    "dynamic_shared_memory_type": "mmap",  # in the data dir: gone with it, even after a kill
}

# Hand every seeded object to OWNER, so trial roles (members of OWNER) may do anything the
# seed's author could: ALTER, DROP, TRUNCATE. Objects that cannot change owner are skipped.
_GIVE_AWAY = """
DO $$
DECLARE r record;
BEGIN
  FOR r IN SELECT format('ALTER SCHEMA %I OWNER TO proctor_owner', nspname) AS cmd
           FROM pg_namespace
           WHERE nspname NOT IN ('pg_catalog', 'information_schema', 'public')
             AND nspname NOT LIKE 'pg\\_%'
  UNION ALL
           SELECT format('ALTER %s %I.%I OWNER TO proctor_owner',
                         CASE c.relkind WHEN 'v' THEN 'VIEW' WHEN 'm' THEN 'MATERIALIZED VIEW'
                                        WHEN 'S' THEN 'SEQUENCE' WHEN 'f' THEN 'FOREIGN TABLE'
                                        ELSE 'TABLE' END, n.nspname, c.relname)
           FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
           WHERE c.relkind IN ('r', 'p', 'v', 'm', 'S', 'f')
             AND n.nspname NOT IN ('pg_catalog', 'information_schema')
             AND n.nspname NOT LIKE 'pg\\_%'
  UNION ALL
           SELECT format('ALTER ROUTINE %s OWNER TO proctor_owner', p.oid::regprocedure)
           FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
           WHERE n.nspname NOT IN ('pg_catalog', 'information_schema')
             AND NOT EXISTS (SELECT 1 FROM pg_depend d
                             WHERE d.objid = p.oid AND d.deptype = 'e')
  UNION ALL
           SELECT format('ALTER TYPE %s OWNER TO proctor_owner', t.oid::regtype)
           FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace
           WHERE (t.typtype IN ('e', 'd', 'r') OR (t.typtype = 'c' AND EXISTS
                 (SELECT 1 FROM pg_class c WHERE c.oid = t.typrelid AND c.relkind = 'c')))
             AND n.nspname NOT IN ('pg_catalog', 'information_schema')
  LOOP
    BEGIN
      EXECUTE r.cmd;
    EXCEPTION WHEN OTHERS THEN
      NULL;  -- e.g. a sequence owned by a table column follows its table
    END;
  END LOOP;
END $$;
"""

# What the server itself records of a trial's schema changes and TRUNCATEs (row writes are
# in pg_stat_user_tables): event triggers for DDL and DROP, a statement trigger for TRUNCATE
# on every table, all writing into a schema the trial's role cannot touch. Installed by the
# superuser after _GIVE_AWAY, so the functions and triggers stay the superuser's: a trial
# role cannot drop them, and disabling a table's trigger is itself an ALTER TABLE, recorded.
_AUDIT = r"""
CREATE SCHEMA proctor_audit;
REVOKE ALL ON SCHEMA proctor_audit FROM PUBLIC;
CREATE TABLE proctor_audit.events (kind text NOT NULL, tag text NOT NULL, object text NOT NULL);
CREATE FUNCTION proctor_audit.on_ddl() RETURNS event_trigger LANGUAGE plpgsql
  SECURITY DEFINER SET search_path = pg_catalog AS $$
BEGIN
  INSERT INTO proctor_audit.events
    SELECT 'ddl', command_tag, coalesce(object_identity, '')
    FROM pg_event_trigger_ddl_commands()
    WHERE coalesce(schema_name, '') NOT LIKE 'pg\_temp%';
END $$;
CREATE FUNCTION proctor_audit.on_drop() RETURNS event_trigger LANGUAGE plpgsql
  SECURITY DEFINER SET search_path = pg_catalog AS $$
BEGIN
  INSERT INTO proctor_audit.events
    SELECT 'ddl', 'DROP ' || upper(object_type), coalesce(object_identity, '')
    FROM pg_event_trigger_dropped_objects()
    WHERE original AND NOT is_temporary;
END $$;
CREATE FUNCTION proctor_audit.on_truncate() RETURNS trigger LANGUAGE plpgsql
  SECURITY DEFINER SET search_path = pg_catalog AS $$
BEGIN
  INSERT INTO proctor_audit.events
    VALUES ('truncate', 'TRUNCATE', quote_ident(TG_TABLE_SCHEMA) || '.' || quote_ident(TG_TABLE_NAME));
  RETURN NULL;
END $$;
DO $$
DECLARE r record;
BEGIN
  FOR r IN SELECT n.nspname, c.relname FROM pg_class c
           JOIN pg_namespace n ON n.oid = c.relnamespace
           WHERE c.relkind IN ('r', 'p') AND n.nspname NOT IN ('pg_catalog',
                 'information_schema', 'proctor_audit') AND n.nspname NOT LIKE 'pg\_%'
  LOOP
    EXECUTE format('CREATE TRIGGER proctor_truncate BEFORE TRUNCATE ON %I.%I '
                   'FOR EACH STATEMENT EXECUTE FUNCTION proctor_audit.on_truncate()',
                   r.nspname, r.relname);
  END LOOP;
END $$;
CREATE EVENT TRIGGER proctor_ddl ON ddl_command_end EXECUTE FUNCTION proctor_audit.on_ddl();
CREATE EVENT TRIGGER proctor_drop ON sql_drop EXECUTE FUNCTION proctor_audit.on_drop();
"""

_PSQL_ERROR = re.compile(r"^psql:(?P<file>.*?):(?P<line>\d+): (?:ERROR|FATAL):\s+(?P<msg>.*)$",
                         re.MULTILINE)
_STMT_LINE = re.compile(r"^LINE (\d+):", re.MULTILINE)


def bin_dir() -> Path:
    """The newest installed PostgreSQL's bin directory."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/postgres"),
                   key=lambda p: int(re.sub(r"\D", "", p.split("/")[4]) or 0))
    if found:
        return Path(found[-1]).parent
    pg_config = shutil.which("pg_config")
    if pg_config:
        out = proc.run_sync([pg_config, "--bindir"], timeout=PG_CONFIG_TIMEOUT_S)
        d = Path(out.stdout.strip())
        if (d / "postgres").exists() and (d / "initdb").exists():
            return d
    postgres = shutil.which("postgres")
    if postgres and shutil.which("initdb"):
        return Path(postgres).parent
    raise SetupError("PostgreSQL server not found (no /usr/lib/postgresql/*/bin/postgres); "
                     "install the Debian package `postgresql` (apt-get install postgresql)")


class PostgresServer(DbServer):
    kind = "postgres"
    package = "postgresql"
    run_as_user = "postgres"
    usual_port = 5432

    def __init__(self, ctx: Any):
        super().__init__(ctx)
        self._admin: psycopg.Connection[Any] | None = None
        self.password = ""
        self.sock = Path()
        self.bin = Path()
        self._strategy = ""

    # -- boot / shutdown --------------------------------------------------------------------

    def boot(self) -> None:
        assert self.base is not None
        base = self.base
        self.bin = bin_dir()
        run_as = _proc.server_user(self.run_as_user)
        self.password = os.urandom(16).hex()
        pwfile = self.base / "pw"
        pwfile.write_text(self.password + "\n")
        if run_as is not None:
            os.chown(pwfile, run_as.uid, run_as.gid)
        data = self.base / "data"
        self.sock = _proc.owned_dir(self.base / "sock", run_as)
        r = _proc.run([str(self.bin / "initdb"), "-D", str(data), "-U", ADMIN,
                       f"--pwfile={pwfile}", "--auth=scram-sha-256", "-E", "UTF8",
                       "--no-locale", "--no-sync", "--no-instructions"],
                      run_as=run_as, env=self.env(), timeout=120)
        pwfile.unlink()
        if r.exit_code != 0:
            raise SetupError(f"initdb failed: {(r.stdout + r.stderr).strip()[-500:]}")
        (data / "pg_hba.conf").write_text(
            # Only the admin may use the (private) socket; a trial role only its own database.
            f"local all {ADMIN} scram-sha-256\n"
            "host sameuser all 127.0.0.0/8 scram-sha-256\n"
            "host sameuser all ::1/128 scram-sha-256\n"
        )
        def spawn() -> Any:
            conf = {**SETTINGS, "listen_addresses": f"'{self.host}'", "port": str(self.port),
                    "unix_socket_directories": f"'{self.sock}'"}
            with open(data / "postgresql.auto.conf", "w") as f:
                f.writelines(f"{k} = {v}\n" for k, v in conf.items())
            return _proc.spawn([str(self.bin / "postgres"), "-D", str(data)],
                               run_as=run_as, env=self.env(), log=base / "server.log")

        self.launch(spawn, "PostgreSQL", ("could not bind", "already in use"), timeout=30)
        admin = self.admin()
        admin.execute(f"CREATE ROLE {OWNER} NOLOGIN")
        # In memory, copying the files (plus a cheap checkpoint) beats WAL-logging every
        # page (~8 ms vs ~25 ms); on a disk the default WAL_LOG is as fast and writes less.
        self._strategy = (" STRATEGY FILE_COPY" if self.in_memory
                          and admin.info.server_version >= 150000 else "")

    def wait_ready(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return False
            if (self.sock / f".s.PGSQL.{self.port}").exists():
                try:
                    self.admin()
                    return True
                except psycopg.OperationalError:
                    pass  # still starting up
            time.sleep(0.005)
        return False

    def admin(self) -> psycopg.Connection[Any]:
        """The kept-open admin connection (over the private socket); reconnects if lost."""
        if self._admin is None or self._admin.closed or self._admin.broken:
            self._admin = self._connect("postgres")
        return self._admin

    def _connect(self, dbname: str) -> psycopg.Connection[Any]:
        return psycopg.connect(host=str(self.sock), port=self.port, user=ADMIN,
                               password=self.password, dbname=dbname, autocommit=True,
                               connect_timeout=10)

    def close_admin(self) -> None:
        if self._admin is not None:
            with contextlib.suppress(Exception):
                self._admin.close()
            self._admin = None

    def shutdown(self) -> None:
        # SIGINT = "fast" shutdown: roll back sessions, stop now. Data is thrown away anyway.
        proc.stop(self.proc, sig=signal.SIGINT, grace=5)

    def is_connection_error(self, exc: BaseException) -> bool:
        return isinstance(exc, psycopg.OperationalError | psycopg.InterfaceError)

    # -- templates ----------------------------------------------------------------------------

    def build_template(self, seed: Seed | None, name: str) -> str:
        admin = self.admin()
        ident = sql.Identifier(name)
        admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(ident))
        admin.execute(sql.SQL("CREATE DATABASE {} OWNER {}").format(ident, sql.Identifier(OWNER)))
        if seed is not None:
            self._load_seed(seed, name)
        with self._connect(name) as conn:
            conn.execute(_GIVE_AWAY)
            conn.execute(_AUDIT)
            conn.execute("VACUUM (FREEZE, ANALYZE)")
        # Nobody may connect to a template: a connection would block CREATE DATABASE.
        admin.execute(sql.SQL("ALTER DATABASE {} WITH ALLOW_CONNECTIONS false").format(ident))
        return name

    def _load_seed(self, seed: Seed, dbname: str) -> None:
        assert self.base is not None
        path = seed.path
        if path is None:  # inline SQL: psql needs a file
            path = self.base / f"seed-{seed.key}.sql"
            path.write_text(seed.sql)
        env = {**self.env(), "PGPASSWORD": self.password, "PGHOST": str(self.sock),
               "PGPORT": str(self.port), "PGUSER": ADMIN, "PGDATABASE": dbname,
               "PGOPTIONS": "-c client_min_messages=warning"}
        r = _proc.run([str(self.bin / "psql"), "-X", "-q", "-v", "ON_ERROR_STOP=1",
                       "-f", str(path)], run_as=None, env=env, timeout=600)
        if r.exit_code == 0:
            return
        out = r.stdout + r.stderr
        m = _PSQL_ERROR.search(out)
        if not m:
            raise SetupError(f"seed {seed.label} failed: {out.strip()[-800:]}")
        reported = int(m.group("line"))
        start = statement_start(seed.sql, reported)
        where = ""
        rel = _STMT_LINE.search(out, m.end())
        if rel and int(rel.group(1)) > 1:
            where = f" (at line {start + int(rel.group(1)) - 1})"
        raise SetupError(f"{seed.where(start)}: seed statement failed: "
                         f"{m.group('msg').strip()}{where}")

    # -- trials -------------------------------------------------------------------------------

    def clone(self, template: str, db: TrialDb) -> None:
        admin = self.admin()
        name = sql.Identifier(db.name)
        admin.execute(sql.SQL("CREATE ROLE {} LOGIN PASSWORD {} IN ROLE {}").format(
            name, sql.Literal(db.password), sql.Identifier(OWNER)))
        try:
            admin.execute(sql.SQL("CREATE DATABASE {} TEMPLATE {} OWNER {}" + self._strategy)
                          .format(name, sql.Identifier(template), sql.Identifier(OWNER)))
        except Exception:
            admin.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(name))
            raise

    def drop(self, db: TrialDb) -> None:
        admin = self.admin()
        name = sql.Identifier(db.name)
        admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(name))
        admin.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(name))

    def writes(self, db: TrialDb) -> list[DbWrite]:
        """Per-table row counts written in the trial's database. A backend publishes its
        counters when its transaction ends and at the latest when it exits; so sessions still
        open after the agent finished are ended first, then the counters are read."""
        others = ("SELECT pid FROM pg_stat_activity WHERE datname = %s "
                  "AND pid <> pg_backend_pid()")
        with self._connect(db.name) as conn:
            deadline = time.monotonic() + 0.5
            while conn.execute(others, (db.name,)).fetchone():
                if time.monotonic() > deadline:
                    conn.execute(f"SELECT pg_terminate_backend(pid) FROM ({others}) s",
                                 (db.name,))
                    deadline = time.monotonic() + 5
                time.sleep(0.005)
            rows = conn.execute(
                "SELECT CASE WHEN schemaname = 'public' THEN relname "
                "ELSE schemaname || '.' || relname END, n_tup_ins, n_tup_upd, n_tup_del "
                "FROM pg_stat_user_tables WHERE n_tup_ins + n_tup_upd + n_tup_del > 0 "
                "AND schemaname <> 'proctor_audit' ORDER BY 1").fetchall()
            events = conn.execute("SELECT kind, tag, object FROM proctor_audit.events").fetchall()
        out: dict[str, DbWrite] = {t: {"table": t, "inserts": i, "updates": u, "deletes": d}
                                   for t, i, u, d in rows}
        for kind, tag, obj in events:
            table = obj.removeprefix("public.")
            entry = out.setdefault(table, {"table": table, "inserts": 0, "updates": 0,
                                           "deletes": 0})
            if kind == "truncate":
                entry["truncates"] = entry.get("truncates", 0) + 1
            else:
                entry.setdefault("ddl", []).append(tag)
        return [out[t] for t in sorted(out)]

    def handle(self, service: str, db: TrialDb) -> DbHandle:
        url = f"postgresql://{db.name}:{db.password}@{self.host}:{self.port}/{db.name}"
        dsn = (f"host={self.host} port={self.port} user={db.name} password={db.password} "
               f"dbname={db.name}")
        env = {"DATABASE_URL": url, "PGHOST": self.host, "PGPORT": str(self.port),
               "PGUSER": db.name, "PGPASSWORD": db.password, "PGDATABASE": db.name}
        return DbHandle(name=service, kind="postgres", host=self.host, port=self.port, url=url,
                        env=env,
                        credentials={"user": db.name, "password": db.password,
                                     "database": db.name, "dsn": dsn},
                        server=self, db=db)


class PostgresService(DbService):
    server_cls = PostgresServer
