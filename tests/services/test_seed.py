"""Seeds: where the SQL comes from, and which line a failing statement starts on."""

from __future__ import annotations

import pytest

from proctor.errors import SetupError
from proctor.services.seed import load_seed, statement_start, statements

SQL = """\
-- header; with a semicolon
CREATE TABLE a (id int, note text);
INSERT INTO a VALUES (1, 'semi;colon'), (2, 'it''s; fine');
/* a block comment;
   over lines */ INSERT INTO a
  VALUES (3, E'back\\\\slash\\'; quote');
CREATE FUNCTION f() RETURNS int AS $body$
  SELECT 1; -- inside the body
$body$ LANGUAGE sql;
COPY a (id, note) FROM stdin;
4\tdata; with semicolons
\\.
\\echo meta; command
SELECT 1; SELECT
  2;
"""


def test_statements_skip_quotes_comments_bodies_and_copy_data():
    got = [(s.start_line, s.end_line) for s in statements(SQL)]
    assert got == [(2, 2), (3, 3), (5, 6), (7, 9), (10, 10), (13, 13), (14, 14), (14, 15)]


def test_the_reported_line_maps_to_the_statement_start():
    assert statement_start(SQL, 6) == 5
    assert statement_start(SQL, 9) == 7
    assert statement_start(SQL, 15) == 14
    assert statement_start(SQL, 99) == 99  # unknown: the line as reported


def test_where_a_seed_comes_from(tmp_path):
    (tmp_path / "s.sql").write_text("SELECT 1;")
    assert load_seed("db", {}, tmp_path) is None
    f = load_seed("db", {"seed": "s.sql"}, tmp_path)
    assert f.path == tmp_path / "s.sql" and f.where(3) == f"{tmp_path / 's.sql'}:3"
    assert load_seed("db", {"seed_file": str(tmp_path / "s.sql")}, tmp_path).sql == "SELECT 1;"
    inline = load_seed("db", {"seed_sql": "SELECT 2;", "seed_origin": "x.yaml:4:9"}, tmp_path)
    assert inline.path is None
    assert inline.where(2) == "line 2 of the inline seed of service 'db' (x.yaml:4:9)"
    assert load_seed("db", {"seed": "SELECT 3;"}, tmp_path).sql == "SELECT 3;"
    assert f.key != inline.key
    with pytest.raises(SetupError, match="seed file not found"):
        load_seed("db", {"seed": "missing.sql"}, tmp_path)
