"""The ways to move every location from OLD_ROOT to NEW_ROOT in an HMS database, each timed on its own copy."""

from __future__ import annotations

import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import sqlalchemy as sa

from hivecat.catalog.model import EVENTS_OFF, ObjectKind, RelocationRequest, Scope
from hivecat.catalog.sql.catalog import SqlCatalog
from hivecat.local.metastore import MetastoreServer
from hivecat.local.scratch_db import drop_database
from relocate_support.hms_rows import DATABASE, NEW_ROOT, OLD_ROOT, TABLE, metastore_server

METATOOL_MAIN_CLASS = "org.apache.hadoop.hive.metastore.tools.HiveMetaTool"
EVERY_PARTITION = "dt >= '2000-01-01'"  # hms_rows numbers days from 2000-01-01


@dataclass
class HivecatRun:
    seconds: float
    rewritten: int
    statements: list[tuple[float, str]] = field(default_factory=list)  # (seconds, SQL), slowest first
    plans: dict[str, list[str]] = field(default_factory=dict)  # SQL -> its EXPLAIN, when asked for
    events: int = 0  # notification events logged
    lock_s: float = 0.0  # statements run while holding the notification listener's lock (commit not included)
    undo_s: float | None = None  # undo() of this run, when asked for


# What EXPLAIN is asked about: the statements that read or write the metastore's rows (not the journal's DDL).
_EXPLAINED = ("SELECT", "INSERT", "UPDATE", "DELETE", "WITH")


def _explain(cursor, statement: str, parameters, postgresql: bool) -> list[str]:
    """The plan the server picks for `statement` right before it runs (same transaction, same rows); not run."""
    cursor.execute(f"EXPLAIN {statement}", parameters)
    rows = cursor.fetchall()
    if postgresql:
        return [row[0] for row in rows]
    names = [column[0] for column in cursor.description]
    return [", ".join(f"{name}={value}" for name, value in zip(names, row) if value is not None) for row in rows]


def hivecat_relocate(server_url: str, name: str, journal_schema: str, old: str = OLD_ROOT,
                     new: str = NEW_ROOT, explain: bool = False, notification_events: str = EVENTS_OFF,
                     undo: bool = False) -> HivecatRun:
    """hivecat's SQL backend: one transaction, journal on. Times relocate() only, not connecting; with `undo`,
    then undo() of that run too (every location back at `old`).

    With `explain`, each statement that reads or writes rows is EXPLAINed just before it runs (outside its
    timing, but inside relocate()'s: such a run is for its plans, not its seconds)."""
    url = sa.make_url(server_url).set(database=name)
    catalog = SqlCatalog(url, journal_schema=journal_schema, notification_events=notification_events)
    statements: list[tuple[float, str]] = []
    plans: dict[str, list[str]] = {}

    if explain:  # registered first: SQLAlchemy calls listeners in order, so the timing below excludes it
        @sa.event.listens_for(catalog.engine, "before_cursor_execute")
        def _explained(conn, cursor, statement, parameters, context, executemany):
            if not executemany and statement.lstrip().upper().startswith(_EXPLAINED):
                plans[" ".join(statement.split())] = _explain(
                    cursor, statement, parameters, conn.dialect.name == "postgresql")

    @sa.event.listens_for(catalog.engine, "before_cursor_execute")
    def _began(conn, cursor, statement, parameters, context, executemany):
        conn.info["statement_began"] = time.monotonic()

    @sa.event.listens_for(catalog.engine, "after_cursor_execute")
    def _ended(conn, cursor, statement, parameters, context, executemany):
        statements.append((time.monotonic() - conn.info.pop("statement_began"), " ".join(statement.split())))

    try:
        began = time.monotonic()
        report = catalog.relocate(RelocationRequest(old, new))
        seconds = time.monotonic() - began
        undo_s = None
        if undo:
            began = time.monotonic()
            undone = catalog.undo(report.run_id)
            undo_s = time.monotonic() - began
            if (undone.rewritten, undone.conflicted) != (report.rewritten, 0):
                raise AssertionError(f"undo restored {undone.rewritten} of {report.rewritten} values "
                                     f"({undone.conflicted} conflicts)")
    finally:
        catalog.close()
        drop_database(server_url, journal_schema)
    if report.conflicted:
        raise AssertionError(f"hivecat reported {report.conflicted} conflicts on data nobody else touched")
    locked = next((n for n, (_, sql) in enumerate(statements)
                   if "NOTIFICATION_SEQUENCE" in sql and "FOR UPDATE" in sql.upper()), len(statements))
    return HivecatRun(seconds, report.rewritten, sorted(statements, reverse=True), plans, report.notification_events,
                      sum(s for s, _ in statements[locked:]), undo_s)


def anchored_like(prefix: str) -> str:
    escaped = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"{escaped}/%"


def floor_update(server_url: str, name: str, old: str = OLD_ROOT, new: str = NEW_ROOT) -> float:
    """The least any SQL rewrite can do: anchored set-based UPDATEs, no journal, no compare-and-set.

    The HMS database is latin1_bin on MariaDB, so = and LIKE compare bytes; on PostgreSQL, LIKE under "C" does:
    as exact as hivecat's match here.
    """
    engine = sa.create_engine(sa.make_url(server_url).set(database=name))
    quote, postgresql = engine.dialect.identifier_preparer.quote, engine.dialect.name == "postgresql"
    exact, new_text = (' COLLATE "C"', "CAST(:new AS TEXT)") if postgresql else ("", ":new")
    try:
        began = time.monotonic()
        with engine.begin() as conn:
            for table, column in ((quote("SDS"), quote("LOCATION")), (quote("DBS"), quote("DB_LOCATION_URI"))):
                conn.execute(sa.text(
                    f"UPDATE {table} SET {column} = CONCAT({new_text}, SUBSTRING({column}, :rest)) "
                    f"WHERE {column} = :old OR {column}{exact} LIKE :under"),
                    {"new": new, "rest": len(old) + 1, "old": old, "under": anchored_like(old)})
        return time.monotonic() - began
    finally:
        engine.dispose()


def metatool_update_location(server_url: str, name: str, workdir: Path) -> float:
    """Hive's own `metatool -updateLocation NEW OLD`, from the jars and hive-site HMS itself uses.

    Timed as an operator runs it: JVM start, DataNucleus setup and the update (its start-up is a few
    seconds of the total).
    """
    command = metastore_server(server_url, name, workdir, heap="4g", schema_exists=True).command(
        METATOOL_MAIN_CLASS, ["-updateLocation", NEW_ROOT, OLD_ROOT])
    log = workdir / "metatool.log"
    with open(log, "wb") as out:  # it prints every location it changed
        began = time.monotonic()
        result = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=workdir)
        seconds = time.monotonic() - began
    if result.returncode != 0:
        tail = "".join(log.read_text(errors="replace").splitlines(keepends=True)[-30:])
        raise RuntimeError(f"metatool exited with {result.returncode}:\n{tail}")
    return seconds


@dataclass(frozen=True)
class ThriftRun:
    partitions: int
    batch: int
    alter_seconds: float  # alter_partitions calls only
    total_seconds: float  # with the re-read of each batch before it is written


def thrift_alter_partitions(server: MetastoreServer, count: int, batch: int) -> ThriftRun:
    """Through the running HMS, the first `count` partitions moved with alter_partitions in batches,
    each batch re-read first (get_partitions_by_names), as a Thrift relocation must."""
    from hmsclient import hmsclient

    with hmsclient.HMSClient(host="127.0.0.1", port=server.port) as client:
        names = client.get_partition_names(DATABASE, TABLE, count)
        if len(names) != count:
            raise AssertionError(f"HMS lists {len(names)} partitions, expected {count}")
        altering = 0.0
        began = time.monotonic()
        for start in range(0, count, batch):
            parts = client.get_partitions_by_names(DATABASE, TABLE, names[start:start + batch])
            for part in parts:
                part.sd.location = NEW_ROOT + part.sd.location[len(OLD_ROOT):]
            call = time.monotonic()
            client.alter_partitions(DATABASE, TABLE, parts)
            altering += time.monotonic() - call
        total = time.monotonic() - began
    return ThriftRun(count, batch, altering, total)


def hivecat_thrift_relocate(server: MetastoreServer, old: str, new: str, connections: int, journal: Path,
                            partitions: int) -> float:
    """hivecat's Thrift relocation of every partition of the table, journaled in SQLite as by default,
    through `connections` metastore connections. Times relocate() only (plan, journal, writes), not
    connecting. A filter that matches every partition leaves the table out: HMS's alter_table resolves the
    new hdfs:// authority, which does not exist here (alter_partitions does not)."""
    from hivecat.catalog.thrift import ThriftCatalog

    catalog = ThriftCatalog(server.uri, journal_url=f"sqlite:///{journal}", connections=connections)
    try:
        began = time.monotonic()
        report = catalog.relocate(RelocationRequest(old, new, Scope(DATABASE, TABLE, EVERY_PARTITION)))
        seconds = time.monotonic() - began
    finally:
        catalog.close()
    moved = report.count(ObjectKind.PARTITION).rewritten
    if report.status != "done" or report.conflicted or report.failed or moved != partitions:
        raise AssertionError(f"hivecat over Thrift ({connections} connections) moved {moved} of {partitions} "
                             f"partitions: {report.status}, {report.errors[:3]}")
    return seconds
