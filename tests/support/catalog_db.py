"""A HiveCatalog's metastore database as the operator and e2e tiers use it: a scratch MariaDB database reached as
a user of its own, and a journal database on the same server that user may write."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
import sqlalchemy as sa

from hivecat.local.scratch_db import drop_database
from support.services import unique_name

HOSTS = ("localhost", "127.0.0.1", "%")


@pytest.fixture
def metastore_db(scratch_mariadb: str) -> Iterator[str]:
    """A scratch MariaDB database reached as a user of its own, whose password is like no other string in the
    test (so finding it in an object, a status or a log means a leak). The URL carries user and password."""
    url = sa.make_url(scratch_mariadb)
    user, password = unique_name("hc_op"), f"pw-{uuid.uuid4().hex}"
    admin = sa.create_engine(scratch_mariadb)
    with admin.begin() as conn:
        for host in HOSTS:
            conn.execute(sa.text(f"CREATE USER '{user}'@'{host}' IDENTIFIED BY '{password}'"))
            conn.execute(sa.text(f"GRANT ALL PRIVILEGES ON `{url.database}`.* TO '{user}'@'{host}'"))
    yield url.set(username=user, password=password).render_as_string(hide_password=False)
    with admin.begin() as conn:
        for host in HOSTS:
            conn.execute(sa.text(f"DROP USER IF EXISTS '{user}'@'{host}'"))
    admin.dispose()


@pytest.fixture
def journal(mariadb_server: str, metastore_db: str) -> Iterator[str]:
    """A database on the metastore's server for the relocation journal, which the catalog's user may write; the
    operator is given it as HIVECAT_JOURNAL_SCHEMA (failovers and repairs on a SQL catalog are journaled there)."""
    name, user = unique_name("hc_tr_journal"), sa.make_url(metastore_db).username
    admin = sa.create_engine(mariadb_server)
    with admin.begin() as conn:
        for host in HOSTS:
            conn.execute(sa.text(f"GRANT ALL PRIVILEGES ON `{name}`.* TO '{user}'@'{host}'"))
    admin.dispose()
    yield name
    drop_database(mariadb_server, name)
