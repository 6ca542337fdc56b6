"""Scratch databases on a MariaDB/MySQL or PostgreSQL server, for a local HMS or for tests."""

from __future__ import annotations

import re
import time

import sqlalchemy as sa

from hivecat.catalog.engines import sql_engine

_NAME = re.compile(r"^[a-z][a-z0-9_]{0,62}$")


def _checked(name: str) -> str:
    # Names are interpolated into DDL (no bind parameters there), so they are whitelisted.
    if not _NAME.match(name):
        raise ValueError(f"invalid scratch database name {name!r}")
    return name


def server_engine(server_url: str) -> sa.Engine:
    """An engine on the server's maintenance database (none on MySQL, `postgres` on PostgreSQL)."""
    url = sa.make_url(server_url)
    if url.get_backend_name() == "postgresql":
        return sql_engine(url.set(database="postgres"), isolation_level="AUTOCOMMIT")
    return sql_engine(url.set(database=None), isolation_level="AUTOCOMMIT")


def _drop_postgres(conn: sa.Connection, name: str) -> None:
    """Drop a PostgreSQL database our role's sessions may still hold.

    Not `WITH (FORCE)`: a non-superuser's FORCE fails with "must be a member of the role whose process is
    being terminated" when an autovacuum worker happens to be in the database. A plain DROP cancels
    autovacuum itself; our own leftover sessions are terminated first, and a session that is just closing
    gets a few retries.
    """
    conn.execute(sa.text("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = :name "
                         "AND pid <> pg_backend_pid() AND usename = current_user"), {"name": name})
    for attempt in range(50):
        try:
            conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}"'))
            return
        except sa.exc.OperationalError as error:  # ObjectInUse: a terminated session not gone yet
            if "is being accessed by other users" not in str(error) or attempt == 49:
                raise
            time.sleep(0.1)


def create_database(server_url: str, name: str, *, latin1: bool = True) -> str:
    """Create `name` (dropping a leftover of the same name) and return a URL that points at it.

    HMS on MySQL/MariaDB needs latin1: its index keys overflow InnoDB's limit under utf8mb4.
    """
    name = _checked(name)
    engine = server_engine(server_url)
    with engine.connect() as conn:
        backend = engine.dialect.name
        if backend == "postgresql":
            _drop_postgres(conn, name)
            conn.execute(sa.text(f'CREATE DATABASE "{name}" ENCODING \'UTF8\' TEMPLATE template0'))
        else:
            charset = "CHARACTER SET latin1 COLLATE latin1_bin" if latin1 else "CHARACTER SET utf8mb4"
            conn.execute(sa.text(f"DROP DATABASE IF EXISTS `{name}`"))
            conn.execute(sa.text(f"CREATE DATABASE `{name}` {charset}"))
    engine.dispose()
    return sa.make_url(server_url).set(database=name).render_as_string(hide_password=False)


def drop_database(server_url: str, name: str) -> None:
    name = _checked(name)
    engine = server_engine(server_url)
    with engine.connect() as conn:
        if engine.dialect.name == "postgresql":
            _drop_postgres(conn, name)
        else:
            conn.execute(sa.text(f"DROP DATABASE IF EXISTS `{name}`"))
    engine.dispose()
