"""A metastore user with rights on the metastore database only, as production grants it.

The journal lives beside the metastore (a database on MySQL/MariaDB, a schema on PostgreSQL) that such a
user cannot create. `hivecat relocate` then says, in one line, what an administrator runs once, and
writes nothing; a dry run needs no journal and works. Once the administrator has done exactly that, the
same user relocates and undoes. Each metastore is a hand-written Hive 3 shape (support.hms_shapes)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import sqlalchemy as sa

from hivecat.catalog.journal import Journal
from hivecat.local.scratch_db import drop_database
from support.hms_shapes import CatalogLayout, create_shape, dump_all, expected_dump

HIVECAT = Path(sys.executable).parent / "hivecat"
OLD, NEW = "hdfs://nn:8020/warehouse", "hdfs://nn2:8020/warehouse"
HIVE, SPARK = (CatalogLayout("hive", 1000, f"{OLD}/hive", f"{OLD}/hive"),
               CatalogLayout("spark", 2000, f"{OLD}/spark", f"{OLD}/spark"))
MOVED = CatalogLayout("hive", 1000, f"{NEW}/hive", f"{OLD}/hive")


@dataclass
class Restricted:
    dialect: str
    admin_url: str  # the metastore database, as the test's admin user
    catalog: str    # --catalog for the restricted user
    password: str
    user: str
    journal: str
    metadata: sa.MetaData

    def relocate(self, *extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(HIVECAT), "relocate", "--catalog", self.catalog, "--journal-schema", self.journal, *extra],
            capture_output=True, text=True, timeout=120,
            env={**os.environ, "HIVECAT_CATALOG_PASSWORD": self.password})

    def dump(self) -> dict[str, list[tuple]]:
        return dump_all(self.admin_url, self.metadata)

    def expected(self, *layouts: CatalogLayout) -> dict[str, list[tuple]]:
        return expected_dump(self.metadata, 3, list(layouts))


def _admin(url: str, *statements: str) -> None:
    engine = sa.create_engine(url, isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as conn:
            for statement in statements:
                conn.execute(sa.text(statement))
    finally:
        engine.dispose()


def _superuser_psql(database: str, sql: str) -> None:
    """PostgreSQL roles are created by its superuser (the tests' role may not create roles)."""
    if os.geteuid() != 0:
        pytest.skip("creating a PostgreSQL role needs the postgres superuser, reached through root here")
    subprocess.run(["runuser", "-u", "postgres", "--", "psql", "-q", "-v", "ON_ERROR_STOP=1", "-d", database,
                    "-c", sql], check=True, capture_output=True, text=True)


@pytest.fixture(params=["mariadb", "postgresql"])
def restricted(request: pytest.FixtureRequest) -> Iterator[Restricted]:
    dialect = request.param
    admin_url = request.getfixturevalue("scratch_mariadb" if dialect == "mariadb" else "scratch_postgres")
    server = request.getfixturevalue("mariadb_server" if dialect == "mariadb" else "postgres_server")
    metadata = create_shape(admin_url, 3, [HIVE, SPARK])
    url = sa.make_url(admin_url)
    user, password, journal = f"hc_ltd_{uuid.uuid4().hex[:8]}", uuid.uuid4().hex, f"hc_jrnl_{uuid.uuid4().hex[:8]}"
    if dialect == "mariadb":
        hosts = ("localhost", "127.0.0.1")
        _admin(admin_url, *[f"CREATE USER '{user}'@'{h}' IDENTIFIED BY '{password}'" for h in hosts],
               *[f"GRANT ALL PRIVILEGES ON `{url.database}`.* TO '{user}'@'{h}'" for h in hosts])
        catalog = f"mysql://{user}@{url.host}:{url.port or 3306}/{url.database}"
    else:
        _superuser_psql(url.database, f"CREATE ROLE {user} LOGIN PASSWORD '{password}'; "
                                      f"GRANT CONNECT ON DATABASE \"{url.database}\" TO {user}; "
                                      f"GRANT USAGE ON SCHEMA public TO {user}; "
                                      f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO {user}")
        catalog = f"postgresql://{user}@{url.host}:{url.port or 5432}/{url.database}"
    yield Restricted(dialect, admin_url, catalog, password, user, journal, metadata)
    if dialect == "mariadb":
        drop_database(server, journal)
        _admin(admin_url, *[f"DROP USER IF EXISTS '{user}'@'{h}'" for h in ("localhost", "127.0.0.1")])
    else:
        drop_database(server, url.database)  # the role owns objects in it (the journal schema)
        _superuser_psql("postgres", f"DROP ROLE IF EXISTS {user}")


def one_line(done: subprocess.CompletedProcess[str]) -> str:
    assert "Traceback" not in done.stderr, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr
    return lines[0]


# A least-privilege database user and its grants: the real-schema tests connect as the owner.
def test_restricted_user_is_told_what_to_grant_then_relocates_and_undoes(restricted: Restricted) -> None:
    move = ["--from", OLD, "--to", NEW]
    before = restricted.dump()
    assert before == restricted.expected(HIVE, SPARK)

    # A dry run reads only: no journal is needed.
    dry = restricted.relocate(*move, "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert restricted.dump() == before

    # No journal database/schema, and no right to create one: one line with the statements to run.
    refused = restricted.relocate(*move)
    assert refused.returncode == 2
    line = one_line(refused)
    assert restricted.password not in line
    if restricted.dialect == "mariadb":
        assert f"CREATE DATABASE IF NOT EXISTS `{restricted.journal}` CHARACTER SET latin1 COLLATE latin1_bin" in line
        assert f"GRANT SELECT, INSERT, UPDATE, DELETE, CREATE, ALTER, INDEX ON `{restricted.journal}`.*" in line
    else:
        assert f'CREATE SCHEMA IF NOT EXISTS "{restricted.journal}" AUTHORIZATION "{restricted.user}"' in line
    assert restricted.dump() == before

    # The administrator creates it but grants reading only: still refused before anything is written.
    database = sa.make_url(restricted.admin_url).database
    if restricted.dialect == "mariadb":
        _admin(restricted.admin_url, f"CREATE DATABASE `{restricted.journal}` CHARACTER SET latin1 COLLATE latin1_bin",
               *[f"GRANT SELECT ON `{restricted.journal}`.* TO '{restricted.user}'@'{h}'"
                 for h in ("localhost", "127.0.0.1")])
        # Its tables exist (as after an earlier run by an administrator): reading works, writing must not
        # be discovered halfway through a run.
        engine = sa.create_engine(restricted.admin_url)
        try:
            Journal(engine, restricted.journal).ensure()
        finally:
            engine.dispose()
        read_only = restricted.relocate(*move)
        assert read_only.returncode == 2 and "may not create or write" in one_line(read_only)
        assert restricted.dump() == before
        # ... then as the message says.
        _admin(restricted.admin_url, *[
            f"GRANT SELECT, INSERT, UPDATE, DELETE, CREATE, ALTER, INDEX ON `{restricted.journal}`.* "
            f"TO '{restricted.user}'@'{h}'" for h in ("localhost", "127.0.0.1")])
    else:
        _superuser_psql(database, f'CREATE SCHEMA IF NOT EXISTS "{restricted.journal}" '
                                  f'AUTHORIZATION "{restricted.user}"')

    done = restricted.relocate(*move, "--output", "json")
    assert done.returncode == 0, done.stderr
    assert restricted.dump() == restricted.expected(MOVED, SPARK)
    run_id = json.loads(done.stdout)["run_id"]

    undone = restricted.relocate("--undo", run_id)
    assert undone.returncode == 0, undone.stderr
    assert restricted.dump() == before


# Journal placement refused for a restricted user: no real-schema counterpart.
def test_journal_inside_the_metastore_database_is_refused_in_one_line(restricted: Restricted) -> None:
    if restricted.dialect != "mariadb":
        pytest.skip("on PostgreSQL the journal is a schema of the metastore's database by design")
    database = sa.make_url(restricted.admin_url).database
    restricted.journal = database
    done = restricted.relocate("--from", OLD, "--to", NEW)
    assert done.returncode == 2
    assert "needs a database of its own" in one_line(done)
    assert restricted.dump() == restricted.expected(HIVE, SPARK)


# Journal names needing quoting (injection-shaped): no real-schema counterpart.
@pytest.mark.parametrize("name", ["x` CHARACTER SET utf8mb4 -- ", "a-b", "a" * 65, ""])
def test_journal_names_that_would_need_quoting_are_refused(restricted: Restricted, name: str) -> None:
    restricted.journal = name
    done = restricted.relocate("--from", OLD, "--to", NEW)
    assert done.returncode == 2
    assert "letters, digits and _" in one_line(done)
    assert restricted.dump() == restricted.expected(HIVE, SPARK)


# A user who may rewrite locations but not log the metastore's notification events (hive.metastore's own
# user may; a hand-made relocation user often is not given those tables): one line naming the grants, and
# nothing of the run committed. Before the fix this was the driver's own error.
def test_user_who_may_not_log_events_is_told_what_to_grant(restricted: Restricted) -> None:
    database = sa.make_url(restricted.admin_url).database
    event_tables = ("NOTIFICATION_LOG", "NOTIFICATION_SEQUENCE", "SEQUENCE_TABLE")
    if restricted.dialect == "mariadb":
        hosts = ("localhost", "127.0.0.1")
        _admin(restricted.admin_url,
               *[f"REVOKE ALL PRIVILEGES ON `{database}`.* FROM '{restricted.user}'@'{h}'" for h in hosts],
               *[f"GRANT {'SELECT' if name in event_tables else 'ALL PRIVILEGES'} ON `{database}`.`{name}` "
                 f"TO '{restricted.user}'@'{h}'" for name in restricted.metadata.tables for h in hosts],
               f"CREATE DATABASE `{restricted.journal}` CHARACTER SET latin1 COLLATE latin1_bin",
               *[f"GRANT ALL PRIVILEGES ON `{restricted.journal}`.* TO '{restricted.user}'@'{h}'" for h in hosts])
    else:
        _superuser_psql(database, f'CREATE SCHEMA IF NOT EXISTS "{restricted.journal}" '
                                  f'AUTHORIZATION "{restricted.user}"; ' +
                        " ".join(f'REVOKE INSERT, UPDATE, DELETE ON "{name}" FROM {restricted.user};'
                                 for name in event_tables))
    before = restricted.dump()
    refused = restricted.relocate("--from", OLD, "--to", NEW, "--notification-events")
    assert refused.returncode == 3  # refused, as every refusal of the run
    line = one_line(refused)
    assert "notification-log-not-writable" in line and "NOTIFICATION_LOG" in line, line
    assert "--no-notification-events" in line
    assert restricted.dump() == before
    # as the line says: without events the same user relocates
    done = restricted.relocate("--from", OLD, "--to", NEW, "--no-notification-events")
    assert done.returncode == 0, done.stderr
    assert restricted.dump() == restricted.expected(MOVED, SPARK)
