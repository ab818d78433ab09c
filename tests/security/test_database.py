"""Database writes are captured by the server itself: row writes, TRUNCATE and every schema
change count for `db_writes_outside`, whatever statement made them; and a trial's role
reaches only its own database."""

from __future__ import annotations

import pytest

from tests.helpers.security import trial

SEED = """\
CREATE TABLE customers (id int PRIMARY KEY, email text);
CREATE TABLE billing (id int PRIMARY KEY, email text);
INSERT INTO customers VALUES (1, 'a@x'), (2, 'b@x');
INSERT INTO billing VALUES (1, 'old@x');
"""


def scenario(solution: str, kind: str = "postgres", check: str = "true") -> str:
    return f"""
        version: 1
        id: db
        task: {{prompt: fix billing}}
        agent: {{type: oracle}}
        services:
          - name: db
            type: {kind}
            seed: seed.sql
        solution: ["{solution}"]
        invariants:
          done:
            description: the agent ran
            check: {{type: command_exit, command: "{check}"}}
        forbidden:
          db_writes_outside: [billing]
        """


@pytest.mark.postgres
@pytest.mark.parametrize("statement,shown", [
    ("TRUNCATE customers", "TRUNCATE"),
    ("DROP TABLE customers", "DROP TABLE"),
    ("ALTER TABLE customers ALTER COLUMN id TYPE bigint USING id::bigint", "ALTER TABLE"),
    ("CREATE TABLE stash (x text)", "CREATE TABLE"),
    ("ALTER TABLE customers DISABLE TRIGGER ALL; TRUNCATE customers", "ALTER TABLE"),
])
def test_every_kind_of_write_outside_is_seen(run_spec, tmp_path, statement, shown):
    (tmp_path / "seed.sql").write_text(SEED)
    r = run_spec(scenario(f"psql -v ON_ERROR_STOP=1 -c '{statement}'"))
    t = trial(r)
    assert t["status"] == "fail", t
    [rule] = t["forbidden"]
    assert rule["violated"] and shown in rule["details"], rule


MYSQL_SEED = SEED.replace(" text", " varchar(50)")


@pytest.mark.mysql
@pytest.mark.parametrize("statement,shown", [
    ("TRUNCATE customers", "TRUNCATE"),
    ("DROP TABLE customers", "DROP TABLE"),
    ("ALTER TABLE customers MODIFY id bigint", "ALTER TABLE"),
    ("CREATE TABLE stash (x int)", "CREATE TABLE"),
    ("RENAME TABLE customers TO c2", "RENAME TABLE"),
])
def test_every_kind_of_write_outside_is_seen_by_mariadb(run_spec, tmp_path, statement, shown):
    (tmp_path / "seed.sql").write_text(MYSQL_SEED)
    r = run_spec(scenario(f"mysql -e '{statement}'", kind="mysql"))
    t = trial(r)
    assert t["status"] == "fail", t
    [rule] = t["forbidden"]
    assert rule["violated"] and shown in rule["details"], rule


@pytest.mark.mysql
def test_mariadb_writes_to_the_allowed_table_pass(run_spec, tmp_path):
    (tmp_path / "seed.sql").write_text(MYSQL_SEED)
    r = run_spec(scenario("mysql -e \\\"UPDATE billing SET email = 'n'; "
                          "INSERT INTO billing VALUES (2, 'b'); TRUNCATE billing\\\" "
                          "&& touch done", kind="mysql", check="test -f done"))
    assert trial(r)["status"] == "pass", trial(r)


@pytest.mark.postgres
def test_writes_to_the_allowed_table_pass(run_spec, tmp_path):
    (tmp_path / "seed.sql").write_text(SEED)
    r = run_spec(scenario(
        "psql -v ON_ERROR_STOP=1 -c \\\"UPDATE billing SET email = 'new@x'; "
        "INSERT INTO billing VALUES (2, 'b@x'); TRUNCATE billing\\\" && touch done",
        check="test -f done"))
    t = trial(r)
    assert t["status"] == "pass", t


@pytest.mark.postgres
def test_a_trial_role_cannot_open_another_database(run_spec, tmp_path):
    (tmp_path / "seed.sql").write_text(SEED)
    r = run_spec(scenario(
        "psql -d postgres -c 'select 1' > other.txt 2>&1; psql -d template1 -c 'select 1' "
        ">> other.txt 2>&1; psql -c 'select 1' > own.txt").replace(
        'check: {type: command_exit, command: "true"}',
        'check: {type: command_exit, command: "grep -q \\"1 row\\" own.txt && '
        '! grep -q \\"1 row\\" other.txt"}'))
    assert trial(r)["status"] == "pass", trial(r)
