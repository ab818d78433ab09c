"""The `sql` check against real PostgreSQL and MariaDB trial databases."""

from __future__ import annotations

import datetime
from decimal import Decimal

import pytest

from proctor.checks.sql import same
from proctor.services import ServiceHandle
from tests.helpers.services import run_check


@pytest.mark.parametrize(("got", "expected", "result"), [
    (0, 0, True),
    (3, "3", True),  # numeric strings are numbers
    ("007", 7, True),
    (Decimal("119.75"), 119.75, True),
    (Decimal("2.50"), "2.5", True),
    (Decimal("1E+3"), 1000, True),
    (10, 10.0, True),
    (0.1 + 0.2, 0.3, True),  # floats compare with a relative tolerance
    (3, 4, False),
    (3, "three", False),
    ("abc", "abc", True),
    ("abc", "ABC", False),  # strings compare exactly
    ("abc ", "abc", False),
    (None, None, True),  # SQL NULL equals null
    (None, "null", True),
    (None, 0, False),
    (0, None, False),
    ("", None, False),
    (True, True, True),
    (True, 1, True),  # MySQL's booleans are 1/0
    (False, "false", True),
    (datetime.date(2024, 1, 31), datetime.date(2024, 1, 31), True),
    (datetime.date(2024, 1, 31), "2024-01-31", True),
    ({"a": 1}, {"a": 1}, True),
    ("nan", "nan", True),
])
def test_comparison_rules(got, expected, result):
    assert same(got, expected) is result


QUERIES = [
    # (query, equals, passes)
    ("SELECT count(*) FROM customers", 3, True),
    ("SELECT count(*) FROM customers", "3", True),
    ("SELECT count(*) FROM customers", 4, False),
    ("SELECT sum(total) FROM orders", 119.75, True),
    ("SELECT sum(total) FROM orders", "119.75", True),
    ("SELECT sum(total) FROM orders", 119.7, False),
    ("SELECT name FROM customers WHERE id = 1", "Ada", True),
    ("SELECT name FROM customers WHERE id = 1", "ada", False),
    ("SELECT email FROM customers WHERE id = 2", None, True),
    ("SELECT email FROM customers WHERE id = 2", "x", False),
    ("SELECT email FROM customers WHERE id = 1", None, False),
    ("SELECT id, name FROM customers ORDER BY id DESC", 3, True),  # first column, first row
]


@pytest.mark.postgres
@pytest.mark.parametrize(("query", "equals", "passes"), QUERIES)
async def test_postgres_values(pg_handle, tmp_path, query, equals, passes):
    out = await run_check("sql", {"db": pg_handle}, tmp_path, service="db", query=query,
                          equals=equals)
    assert out.error is None
    assert out.passed is passes, out.message


@pytest.mark.mysql
@pytest.mark.parametrize(("query", "equals", "passes"), QUERIES)
async def test_mysql_values(my_handle, tmp_path, query, equals, passes):
    out = await run_check("sql", {"db": my_handle}, tmp_path, service="db", query=query,
                          equals=equals)
    assert out.error is None
    assert out.passed is passes, out.message


@pytest.fixture
async def pg_handle(pg):
    h = await pg.provision("check.r0")
    yield h
    await h.release()


@pytest.fixture
async def my_handle(my):
    h = await my.provision("check.r0")
    yield h
    await h.release()


@pytest.mark.postgres
async def test_postgres_messages_and_errors(pg_handle, tmp_path):
    async def check(query, equals=0):
        return await run_check("sql", {"db": pg_handle}, tmp_path, service="db", query=query,
                               equals=equals)

    out = await check("SELECT count(*) FROM customers", 5)
    assert out.message == "expected 5, got 3"
    out = await check("SELECT email FROM customers WHERE id = 2", "x")
    assert out.message == "expected 'x', got NULL"
    out = await check("SELECT id FROM customers WHERE id > 100")
    assert not out.passed and out.error is None and "no rows" in out.message
    # The agent dropped or renamed a table: that is the agent's doing, so the check fails.
    out = await check("SELECT count(*) FROM gone")
    assert not out.passed and out.error is None and 'relation "gone" does not exist' in out.message
    # A query that cannot parse says nothing about the agent: the check errors.
    out = await check("SELEKT 1")
    assert out.error and "syntax error" in out.error


@pytest.mark.mysql
async def test_mysql_messages_and_errors(my_handle, tmp_path):
    async def check(query, equals=0):
        return await run_check("sql", {"db": my_handle}, tmp_path, service="db", query=query,
                               equals=equals)

    out = await check("SELECT id FROM customers WHERE id > 100")
    assert not out.passed and out.error is None and "no rows" in out.message
    out = await check("SELECT count(*) FROM gone")
    assert not out.passed and out.error is None and "doesn't exist" in out.message
    out = await check("SELEKT 1")
    assert out.error and "syntax" in out.error


async def test_unknown_or_unsuitable_service_errors(tmp_path):
    mock = ServiceHandle(name="smtp", kind="http_mock", host="127.0.0.1", port=1, url="")
    out = await run_check("sql", {"smtp": mock}, tmp_path, service="db", query="SELECT 1",
                          equals=1)
    assert out.error == "no service named 'db' in this trial"
    out = await run_check("sql", {"smtp": mock}, tmp_path, service="smtp", query="SELECT 1",
                          equals=1)
    assert "not a postgres or mysql database" in out.error


@pytest.mark.postgres
async def test_a_database_that_is_gone_makes_the_check_error(pg, tmp_path):
    h = await pg.provision("check.r1")
    await h.release()
    await pg.server.call(lambda: None)
    out = await run_check("sql", {"db": h}, tmp_path, service="db", query="SELECT 1", equals=1)
    assert out.error and "cannot connect" in out.error
