"""The PostgreSQL test server itself (tests/fakes/postgres.py): a real server the store
tests can trust — it stores and reads back, each test's database is its own, a wrong
password is refused, and a stop is an outage that a start ends."""

from __future__ import annotations

import psycopg
import pytest

from tests.fakes.postgres import PostgresServer


def connect(url: str) -> psycopg.Connection:
    return psycopg.connect(url, connect_timeout=5)


def test_the_server_is_postgresql_13_or_newer(postgres_url: str) -> None:
    with connect(postgres_url) as connection:
        assert connection.info.server_version >= 130000


def test_a_table_written_is_read_back(postgres_url: str) -> None:
    with connect(postgres_url) as connection:
        connection.execute("CREATE TABLE notes (id integer PRIMARY KEY, body text NOT NULL)")
        connection.execute("INSERT INTO notes VALUES (%s, %s), (%s, %s)", (1, "喜欢猫", 2, "b"))
        connection.commit()

    with connect(postgres_url) as connection:
        rows = connection.execute("SELECT id, body FROM notes ORDER BY id").fetchall()

    assert rows == [(1, "喜欢猫"), (2, "b")]


def test_each_fresh_database_is_empty_and_separate(
    postgres_server: PostgresServer, postgres_url: str
) -> None:
    with connect(postgres_url) as connection:
        connection.execute("CREATE TABLE notes (id integer)")

    with postgres_server.fresh_database() as other_url, connect(other_url) as other:
        tables = other.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'"
        ).fetchall()

    assert other_url != postgres_url
    assert tables == []


def test_the_app_role_owns_its_database_and_is_not_a_superuser(postgres_url: str) -> None:
    with connect(postgres_url) as connection:
        superuser = connection.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user")
        owner = connection.execute(
            "SELECT pg_get_userbyid(datdba) FROM pg_database WHERE datname = current_database()"
        ).fetchone()

        assert superuser.fetchone() == (False,)
        assert owner == (connection.info.user,)


def test_a_wrong_password_is_refused(postgres_server: PostgresServer, postgres_url: str) -> None:
    database = postgres_url.rsplit("/", 1)[1]
    wrong = postgres_server.url(database, password="not-the-password")

    with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
        connect(wrong).close()


def test_a_stop_refuses_connections_and_a_start_serves_the_same_data_again(
    postgres_server: PostgresServer, postgres_url: str
) -> None:
    with connect(postgres_url) as connection:
        connection.execute("CREATE TABLE notes (body text)")
        connection.execute("INSERT INTO notes VALUES ('before the outage')")
        connection.commit()
        open_during_outage = connect(postgres_url)

    postgres_server.stop()
    try:
        with pytest.raises(psycopg.OperationalError):
            connect(postgres_url).close()
        with pytest.raises(psycopg.OperationalError):
            open_during_outage.execute("SELECT 1")
    finally:
        open_during_outage.close()
        postgres_server.start()

    with connect(postgres_url) as connection:
        assert connection.execute("SELECT body FROM notes").fetchall() == [("before the outage",)]
