"""The stack's PostgreSQL takes a password on every connection (no `trust`), and the password shows
nowhere."""

from __future__ import annotations

import stat
from collections.abc import Iterator

import psycopg
import pytest

from ragtrack.app.devserver import HOST, PG_USER, ComponentError, Postgres


@pytest.fixture(scope="module")
def pg() -> Iterator[Postgres]:
    server = Postgres()
    try:
        server.start()
    except ComponentError as e:
        pytest.skip(str(e))
    yield server
    server.stop()


def _connect(pg: Postgres, **kw) -> None:
    with psycopg.connect(host=HOST, port=pg.port, user=PG_USER, dbname="postgres", connect_timeout=10, **kw):
        pass


def test_a_connection_without_the_password_is_refused(pg):
    with pytest.raises(psycopg.OperationalError, match="password"):
        _connect(pg, passfile="/dev/null")


def test_a_connection_through_the_local_socket_needs_it_too(pg):
    with pytest.raises(psycopg.OperationalError, match="password"):
        with psycopg.connect(
            host=str(pg.dir), port=pg.port, user=PG_USER, dbname="postgres", passfile="/dev/null"
        ):
            pass


def test_the_password_file_lets_a_client_in(pg):
    _connect(pg, passfile=str(pg.passfile))


def test_no_authentication_rule_trusts_anyone(pg):
    rules = [
        line.split()
        for line in (pg.dir / "data" / "pg_hba.conf").read_text().splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]
    assert rules and {rule[-1] for rule in rules} == {"scram-sha-256"}


def test_the_password_file_is_readable_by_its_owner_only(pg):
    assert stat.S_IMODE(pg.passfile.stat().st_mode) == 0o600


def test_the_database_uri_names_the_password_file_not_the_password(pg):
    password = pg.passfile.read_text().strip().rsplit(":", 1)[1]
    assert password not in pg.uri("m") and f"passfile={pg.passfile}" in pg.uri("m")
