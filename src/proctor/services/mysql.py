"""MySQL (MariaDB): one real server per run, the seed loaded once into a template database, and
per trial a database copied from it plus a user that may use only that database.

MariaDB has no `CREATE DATABASE ... TEMPLATE`, so a trial's tables are re-created from the
template's `SHOW CREATE TABLE` (foreign keys included) and filled with `INSERT ... SELECT`,
all server-side in one round trip. A seed that also creates views, triggers, routines, events
or sequences is instead replayed into every trial's database (correct, slower).

Writes are counted by performance_schema (table I/O instrument only), minus what the copy
itself wrote.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import pymysql
import pymysql.constants.CLIENT

from proctor import proc
from proctor.errors import SetupError
from proctor.proc import ExecResult
from proctor.services import _proc
from proctor.services._dbserver import DbHandle, DbServer, DbService, TrialDb
from proctor.services.base import DbWrite
from proctor.services.seed import Seed

_CLIENT_ERROR = re.compile(
    r"^ERROR (?P<code>\d+) \((?P<state>[0-9A-Z]+)\) at line (?P<line>\d+)"
    r"(?: in file: '.*?')?: (?P<msg>.*)$", re.MULTILINE)
_CONNECTION_ERRORS = {2002, 2003, 2006, 2013, 2055}

SERVER_OPTIONS = [
    # Throwaway data: durability costs time and buys nothing.
    "--skip-log-bin", "--innodb-flush-log-at-trx-commit=0", "--innodb-doublewrite=0",
    "--innodb-fast-shutdown=2", "--innodb-buffer-pool-size=64M", "--innodb-log-file-size=16M",
    # tmpfs has no O_DIRECT, and some sandboxes no native AIO.
    "--innodb-use-native-aio=0", "--innodb-flush-method=fsync",
    "--skip-name-resolve", "--skip-host-cache",
    "--max-connections=300", "--character-set-server=utf8mb4",
    "--collation-server=utf8mb4_general_ci", "--lock-wait-timeout=30",
    # Only what db_writes() needs: per-table row operation counts.
    "--performance-schema=ON", "--performance-schema-instrument=%=OFF",
    "--performance-schema-instrument=wait/io/table/sql/handler=ON",
    "--performance-schema-consumer-events-waits-current=OFF",
    "--performance-schema-consumer-events-statements-current=OFF",
    "--performance-schema-consumer-events-transactions-current=OFF",
    "--performance-schema-consumer-statements-digest=OFF",
]


def _which(*names: str, dirs: tuple[str, ...] = ()) -> str | None:
    for n in names:
        for d in dirs:
            if os.access(f"{d}/{n}", os.X_OK):
                return f"{d}/{n}"
        found = shutil.which(n)
        if found:
            return found
    return None


def binaries() -> tuple[str, str, str]:
    """(server, install-db, client)."""
    server = _which("mariadbd", "mysqld", dirs=("/usr/sbin", "/usr/libexec"))
    install = _which("mariadb-install-db", "mysql_install_db", dirs=("/usr/bin",))
    if not server or not install:
        raise SetupError("MariaDB server not found (no mariadbd / mariadb-install-db); install "
                         "the Debian package `mariadb-server` (apt-get install mariadb-server)")
    client = _which("mariadb", "mysql", dirs=("/usr/bin",))
    if not client:
        raise SetupError("MariaDB client not found (no mariadb / mysql); install the Debian "
                         "package `mariadb-client` (apt-get install mariadb-client)")
    return server, install, client


class MysqlServer(DbServer):
    kind = "mysql"
    package = "mariadb-server"
    run_as_user = "mysql"
    usual_port = 3306

    def __init__(self, ctx: Any):
        super().__init__(ctx)
        self._admin: pymysql.connections.Connection | None = None
        self.password = ""
        self.sock = Path()
        self.client = ""
        self._plans: dict[str, dict[str, Any]] = {}  # template -> how to copy it
        self.clients: Path | None = None  # per-trial client option files
        self._audit_lock = threading.Lock()
        self._audit_pos = 0
        self._audit_lines: dict[str, list[list[str]]] = {}  # user -> server_audit fields

    # -- boot / shutdown --------------------------------------------------------------------

    def boot(self) -> None:
        assert self.base is not None
        base = self.base
        server, install, self.client = binaries()
        run_as = _proc.server_user(self.run_as_user)
        data = self.base / "data"
        tmp = _proc.owned_dir(self.base / "tmp", run_as)
        self.sock = self.base / "sock"
        self._plans.clear()
        r = _proc.run([install, "--no-defaults", f"--datadir={data}", "--skip-test-db",
                       "--auth-root-authentication-method=normal", "--skip-name-resolve",
                       "--innodb-log-file-size=16M", "--innodb-buffer-pool-size=16M"],
                      run_as=run_as, env=self.env(), timeout=180)
        if r.exit_code != 0:
            raise SetupError("mariadb-install-db failed: " + (r.stdout + r.stderr).strip()[-500:])
        def spawn() -> Any:
            return _proc.spawn(
                [server, "--no-defaults", f"--datadir={data}", f"--socket={self.sock}",
                 f"--port={self.port}", f"--bind-address={self.host}", f"--tmpdir={tmp}",
                 f"--pid-file={base / 'server.pid'}",
                 f"--log-error={base / 'server.log'}", *SERVER_OPTIONS,
                 *_audit_options(base / "audit.log")],
                run_as=run_as, env=self.env(), log=base / "server.out")

        self.launch(spawn, "MariaDB", ("already in use", "Can't start server: Bind"), timeout=60)
        self._lock_down()

    def wait_ready(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return False
            if self.sock.exists():
                try:
                    self._admin = self._connect(password="")
                    return True
                except pymysql.err.OperationalError:
                    pass
            time.sleep(0.01)
        return False

    def _lock_down(self) -> None:
        """mariadb-install-db leaves password-less root@127.0.0.1 and friends: keep only
        root@localhost (the private socket), with a password."""
        admin = self.admin()
        with admin.cursor() as cur:
            cur.execute("SELECT User, Host FROM mysql.user")
            for user, host in cur.fetchall():
                if (user, host) != ("root", "localhost") and user != "mariadb.sys":
                    cur.execute("DROP USER %s@%s", (user, host))
            self.password = os.urandom(16).hex()
            cur.execute("ALTER USER root@localhost IDENTIFIED BY %s", (self.password,))
            cur.execute("FLUSH PRIVILEGES")

    def _connect(self, password: str | None = None) -> pymysql.connections.Connection:
        return pymysql.connect(
            unix_socket=str(self.sock), user="root",
            password=self.password if password is None else password, autocommit=True,
            client_flag=pymysql.constants.CLIENT.MULTI_STATEMENTS, connect_timeout=10,
            charset="utf8mb4")

    def admin(self) -> pymysql.connections.Connection:
        if self._admin is None or not self._admin.open:
            self._admin = self._connect()
        return self._admin

    def close_admin(self) -> None:
        if self._admin is not None:
            with contextlib.suppress(Exception):
                self._admin.close()
            self._admin = None

    def shutdown(self) -> None:
        proc.stop(self.proc, sig=signal.SIGTERM, grace=5)
        if self.clients is not None:
            _proc.remove_dir(self.clients)
            self.clients = None

    def is_connection_error(self, exc: BaseException) -> bool:
        if isinstance(exc, pymysql.err.InterfaceError):
            return True
        return (isinstance(exc, pymysql.err.OperationalError) and bool(exc.args)
                and exc.args[0] in _CONNECTION_ERRORS)

    def _exec(self, script: str, args: Any = None) -> list[tuple[Any, ...]]:
        """Run one or more statements; the rows of the first result."""
        with self.admin().cursor() as cur:
            cur.execute(script, args)
            rows = list(cur.fetchall())
            while cur.nextset():
                pass
        return rows

    # -- templates ----------------------------------------------------------------------------

    def build_template(self, seed: Seed | None, name: str) -> str:
        before = {r[0] for r in self._exec("SHOW DATABASES")}
        self._exec(f"DROP DATABASE IF EXISTS `{name}`; CREATE DATABASE `{name}`")
        if seed is not None:
            self._load_seed(seed, name)
        created = sorted({r[0] for r in self._exec("SHOW DATABASES")} - before - {name})
        if created:
            self._exec("; ".join(f"DROP DATABASE IF EXISTS `{d}`" for d in created))
            raise SetupError(
                f"seed {seed.label if seed else ''} creates database(s) {', '.join(created)}: "
                "every trial gets its own database, so a seed must create its tables in the "
                "current database (remove CREATE DATABASE / USE)")
        self._plans[name] = self._plan(seed, name)
        return name

    def _load_seed(self, seed: Seed, dbname: str) -> None:
        r = self._client(dbname, seed.sql.encode())
        if r.exit_code == 0:
            return
        out = r.stdout + r.stderr
        m = _CLIENT_ERROR.search(out)
        if not m:
            raise SetupError(f"seed {seed.label} failed: {out.strip()[-800:]}")
        line = int(m.group("line"))
        raise SetupError(f"{seed.where(line)}: seed statement failed: "
                         f"ERROR {m.group('code')}: {m.group('msg').strip()}")

    def _client(self, dbname: str, sql: bytes) -> ExecResult:
        env = {**self.env(), "MYSQL_PWD": self.password}
        return _proc.run([self.client, "--no-defaults", f"--socket={self.sock}", "--user=root",
                          "--batch", "--default-character-set=utf8mb4", f"--database={dbname}"],
                         run_as=None, env=env, timeout=600, stdin=sql)

    def _plan(self, seed: Seed | None, tpl: str) -> dict[str, Any]:
        """How to copy template `tpl`: table DDL + column lists, or replay the seed."""
        charset, collation = self._exec(
            "SELECT DEFAULT_CHARACTER_SET_NAME, DEFAULT_COLLATION_NAME "
            "FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = %s", (tpl,))[0]
        plan: dict[str, Any] = {"charset": charset, "collation": collation, "seed": seed}
        objects = self._exec(
            "SELECT (SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s "
            "        AND TABLE_TYPE <> 'BASE TABLE')"
            " + (SELECT COUNT(*) FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = %s)"
            " + (SELECT COUNT(*) FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA = %s)"
            " + (SELECT COUNT(*) FROM information_schema.EVENTS WHERE EVENT_SCHEMA = %s)",
            (tpl, tpl, tpl, tpl))[0][0]
        if objects:
            plan["replay"] = True
            return plan
        tables = [r[0] for r in self._exec(
            "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s "
            "ORDER BY TABLE_NAME", (tpl,))]
        script: list[tuple[str, str, str]] = []
        for t in tables:
            ddl = self._exec(f"SHOW CREATE TABLE `{tpl}`.`{_q(t)}`")[0][1]
            cols = ", ".join(f"`{_q(c[0])}`" for c in self._exec(
                "SELECT COLUMN_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = %s "
                "AND TABLE_NAME = %s AND IS_GENERATED = 'NEVER' ORDER BY ORDINAL_POSITION",
                (tpl, t)))
            # (DDL, INSERT target, INSERT source): the trial's database name goes in between.
            script.append((ddl, f"`.`{_q(t)}` ({cols}) ", f"SELECT {cols} FROM `{tpl}`.`{_q(t)}`"))
        plan["tables"] = script
        return plan

    # -- trials -------------------------------------------------------------------------------

    def clone(self, template: str, db: TrialDb) -> None:
        plan = self._plans[template]
        name = db.name
        head = (f"CREATE DATABASE `{name}` CHARACTER SET {plan['charset']} "
                f"COLLATE {plan['collation']}; "
                f"CREATE USER '{name}'@'%' IDENTIFIED BY '{db.password}'; "
                f"GRANT ALL PRIVILEGES ON `{name}`.* TO '{name}'@'%'")
        try:
            self._exec(head)
            if plan.get("replay"):
                r = self._client(name, plan["seed"].sql.encode())
                if r.exit_code != 0:
                    raise RuntimeError((r.stdout + r.stderr).strip()[-500:])
            elif plan["tables"]:
                body = [f"{ddl}; INSERT INTO `{name}{target}{source}"
                        for ddl, target, source in plan["tables"]]
                self._exec("SET SESSION FOREIGN_KEY_CHECKS = 0, SESSION UNIQUE_CHECKS = 0; "
                           f"USE `{name}`; " + "; ".join(body)
                           + "; SET SESSION FOREIGN_KEY_CHECKS = 1, SESSION UNIQUE_CHECKS = 1; "
                           "USE mysql")
            db.extra["baseline"] = self._counts(name)
        except Exception:
            try:
                self.drop(db)
            finally:
                self._exec("SET SESSION FOREIGN_KEY_CHECKS = 1, SESSION UNIQUE_CHECKS = 1")
            raise
        self._write_client_config(db)

    def _counts(self, name: str, conn: Any = None) -> dict[str, tuple[int, int, int]]:
        with (conn or self.admin()).cursor() as cur:
            cur.execute("SELECT OBJECT_NAME, COUNT_INSERT, COUNT_UPDATE, COUNT_DELETE "
                        "FROM performance_schema.table_io_waits_summary_by_table "
                        "WHERE OBJECT_SCHEMA = %s AND OBJECT_TYPE = 'TABLE'", (name,))
            rows = cur.fetchall()
        return {r[0]: (int(r[1]), int(r[2]), int(r[3])) for r in rows}

    def drop(self, db: TrialDb) -> None:
        # A session left open in a transaction would hold a lock DROP DATABASE waits for.
        for (pid,) in self._exec(
                "SELECT ID FROM information_schema.PROCESSLIST WHERE USER = %s", (db.name,)):
            with contextlib.suppress(pymysql.err.MySQLError):  # already gone
                self._exec(f"KILL CONNECTION {int(pid)}")
        self._exec(f"DROP DATABASE IF EXISTS `{db.name}`; DROP USER IF EXISTS '{db.name}'@'%'")
        cfg = db.extra.get("client_dir")
        if cfg:
            shutil.rmtree(cfg, ignore_errors=True)

    def writes(self, db: TrialDb) -> list[DbWrite]:
        """Row writes: performance_schema counts them as they happen (nothing to flush).
        Schema changes and TRUNCATE: the server_audit log, by the trial's user."""
        base = db.extra.get("baseline", {})
        out: list[DbWrite] = []
        conn = self._connect()
        try:
            counts = self._counts(db.name, conn)
        finally:
            conn.close()
        for table, (ins, upd, dele) in sorted(counts.items()):
            b = base.get(table, (0, 0, 0))
            ins, upd, dele = ins - b[0], upd - b[1], dele - b[2]
            if ins or upd or dele:
                out.append({"table": table, "inserts": ins, "updates": upd, "deletes": dele})
        by_table = {w["table"]: w for w in out}
        for table, kind in self._schema_events(db.name):
            entry = by_table.get(table)
            if entry is None:
                entry = by_table[table] = {"table": table, "inserts": 0, "updates": 0,
                                           "deletes": 0}
                out.append(entry)
            if kind == "TRUNCATE":
                entry["truncates"] = entry.get("truncates", 0) + 1
            else:
                entry.setdefault("ddl", []).append(kind)
        return sorted(out, key=lambda w: w["table"])

    def _schema_events(self, user: str) -> list[tuple[str, str]]:
        """(table, what) for every schema change and TRUNCATE the trial's user made, as the
        server_audit plugin logged them: TABLE events CREATE / ALTER / RENAME / DROP, and
        WRITE events of a statement the server classed as DDL (TRUNCATE)."""
        with self._audit_lock:
            self._read_audit()
            lines = self._audit_lines.pop(user, [])
        ddl_verbs: dict[str, str] = {}  # query id -> first word of a DDL statement
        for f in lines:
            if f[6] == "QUERY":
                ddl_verbs[f[5]] = f[8].strip("'").split(" ", 1)[0].upper()
        out = []
        for f in lines:
            op, database, obj = f[6], f[7], f[8]
            if database != user or op in ("QUERY", "READ"):
                continue
            table = obj.split("|", 1)[0]
            if op in ("CREATE", "ALTER", "RENAME", "DROP"):
                out.append((table, f"{op} TABLE"))
            elif op == "WRITE" and f[5] in ddl_verbs:
                out.append((table, ddl_verbs[f[5]]))
        return out

    def _read_audit(self) -> None:
        """New lines of the audit log, filed by user (each trial has its own)."""
        path = self.base / "audit.log" if self.base is not None else None
        if path is None or not path.exists():
            return
        with path.open("rb") as f:
            f.seek(self._audit_pos)
            data = f.read()
        end = data.rfind(b"\n") + 1  # a line still being written waits for the next read
        self._audit_pos += end
        for raw in data[:end].decode("utf-8", errors="replace").splitlines():
            fields = raw.split(",", 8)
            if len(fields) == 9 and fields[2].startswith("trial_"):
                fields[8] = fields[8].rsplit(",", 1)[0] if fields[6] == "QUERY" else \
                    fields[8].rstrip(",")
                self._audit_lines.setdefault(fields[2], []).append(fields)

    def _write_client_config(self, db: TrialDb) -> None:
        """MYSQL_HOME/my.cnf, so a bare `mysql` / `mariadb` in the sandbox lands in the trial's
        database (the client has no environment variable for user or database)."""
        if self.clients is None:
            self.ctx.tmp_dir.mkdir(parents=True, exist_ok=True)
            self.clients = _proc.track_dir(Path(tempfile.mkdtemp(
                prefix="proctor-mysql-clients-", dir=self.ctx.tmp_dir)))
            self.clients.chmod(0o755)
        d = self.clients / db.name
        d.mkdir(mode=0o755)
        (d / "my.cnf").write_text(
            f"[client]\nhost={self.host}\nport={self.port}\nuser={db.name}\n"
            f"password={db.password}\n[mysql]\ndatabase={db.name}\n")
        (d / "my.cnf").chmod(0o644)
        db.extra["client_dir"] = str(d)

    def handle(self, service: str, db: TrialDb) -> DbHandle:
        url = f"mysql://{db.name}:{db.password}@{self.host}:{self.port}/{db.name}"
        env = {"DATABASE_URL": url, "MYSQL_HOST": self.host, "MYSQL_TCP_PORT": str(self.port),
               "MYSQL_PWD": db.password, "MYSQL_USER": db.name, "MYSQL_DATABASE": db.name,
               "MYSQL_HOME": db.extra.get("client_dir", "")}
        return DbHandle(name=service, kind="mysql", host=self.host, port=self.port, url=url,
                        env=env, files=[d for d in [db.extra.get("client_dir")] if d],
                        credentials={"user": db.name, "password": db.password,
                                     "database": db.name,
                                     "dsn": f"mysql://{db.name}:{db.password}@{self.host}:"
                                            f"{self.port}/{db.name}"},
                        server=self, db=db)


def _audit_options(path: Path) -> list[str]:
    """MariaDB's server_audit plugin, writing the tables each statement touched (TABLE
    events: CREATE, ALTER, RENAME, DROP, WRITE) with the user that ran it: the server's own
    record of schema changes, which the row counters do not see."""
    return ["--plugin-load-add=server_audit", "--server-audit-logging=ON",
            "--server-audit-events=TABLE,QUERY_DDL", f"--server-audit-file-path={path}",
            "--server-audit-file-rotate-size=1000000000", "--server-audit-excl-users=root"]


def _q(ident: str) -> str:
    return ident.replace("`", "``")


class MysqlService(DbService):
    server_cls = MysqlServer
