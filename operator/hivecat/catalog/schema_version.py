"""Reading which metastore schema a database holds, before and after the schema Job: whether it holds any
table, and what VERSION.SCHEMA_VERSION says. hivecat.workloads.schema decides from it; SchemaReady comes from
this reading, never from the Job's exit code alone.

MySQL/MariaDB and PostgreSQL schemas both use upper-case table names (PostgreSQL quotes them: "VERSION");
the lookup is case-insensitive so a lower-case copy is recognised too."""

from __future__ import annotations

from dataclasses import dataclass

import sqlalchemy as sa

from hivecat import reasons
from hivecat.catalog.connect import CatalogUnavailable, first_line, sql_failure
from hivecat.catalog.engines import INSECURE_AUTHENTICATION, sql_engine
from hivecat.catalog.targets import SqlTarget

CONNECT_TIMEOUT_SECONDS = 10  # an unreachable host must not hold a reconcile for minutes


class SchemaStateUnavailable(CatalogUnavailable):
    """The schema could not be read. reason: DatabaseUnreachable (no connection), InsecureAuthentication (the
    server wanted the password in clear text) or SchemaUnreadable (connected, but the tables or VERSION could
    not be read). The message never holds the password."""


@dataclass(frozen=True)
class SchemaState:
    has_tables: bool       # any table at all in the database (PostgreSQL: the user's current schema)
    version: str | None    # VERSION.SCHEMA_VERSION when exactly one row holds it, else None
    version_rows: int      # rows in VERSION (0 when the table is missing)


def read_schema_state(target: SqlTarget, password: str) -> SchemaState:
    engine = sql_engine(target.url(password), poolclass=sa.pool.NullPool,
                        connect_args={"connect_timeout": CONNECT_TIMEOUT_SECONDS})
    try:
        try:
            conn = engine.connect()
        except sa.exc.DBAPIError as exc:
            reason, detail = sql_failure(exc.orig)
            # The refusal keeps its own reason (the fix is the server's authentication, not the network).
            raise SchemaStateUnavailable(
                reason if reason == INSECURE_AUTHENTICATION else reasons.DATABASE_UNREACHABLE,
                _without(password, f"cannot connect to the metastore database {target.name} as "
                                   f"{target.user or '(no user)'}: {detail}"),
                password_given=bool(password)) from None
        with conn:
            try:
                return _read(conn)
            except sa.exc.DBAPIError as exc:
                raise SchemaStateUnavailable(
                    reasons.SCHEMA_UNREADABLE, _without(password, f"cannot read the schema version of {target.name}: "
                                                           f"{first_line(exc.orig)}")) from None
    finally:
        engine.dispose()


def _read(conn: sa.Connection) -> SchemaState:
    tables = {name.upper(): name for name in sa.inspect(conn).get_table_names()}
    actual = tables.get("VERSION")
    if actual is None:
        return SchemaState(bool(tables), None, 0)
    version = sa.table(actual, sa.column("SCHEMA_VERSION"))  # quoted as needed by the dialect
    values = [row[0] for row in conn.execute(sa.select(version.c.SCHEMA_VERSION)).all()]
    single = values[0] if len(values) == 1 and values[0] is not None else None
    return SchemaState(True, single.strip() if single is not None else None, len(values))


def _without(password: str, message: str) -> str:
    """Belt and braces: drivers don't echo passwords, but a message must never carry one."""
    return message.replace(password, "***") if password else message
