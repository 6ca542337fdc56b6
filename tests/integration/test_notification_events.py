"""Direct (SQL) rewrites logged as the metastore's own notification events, read back by Hive's own code.

Each metastore runs Hive's DbNotificationListener as production metastores do, so its own changes (create
database, table, partitions) are logged by Hive. hivecat then relocates by SQL; an event-driven reader
(tests/java/NotificationCheck.java: get_next_notification over Thrift, Hive's JSONMessageDeserializer) must see
one event per rewritten object, decoded into objects that carry the new locations, with ids dense after the
metastore's own events. Metastores: 2.3.10 (Spark's jars) on MariaDB, 3.1.3 on MariaDB and PostgreSQL.
Hive 4.0.1 is not here: no DbNotificationListener of the 4.0 line is published (the first is 4.2.0, built for
Java 21), so a 4.0.1 metastore here logs nothing of its own to interleave with.
"""

from __future__ import annotations

import copy
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
import sqlalchemy as sa

from hivecat.catalog.model import EVENTS_OFF, RelocationRefused, RelocationRequest, Scope
from hivecat.catalog.sql.catalog import SqlCatalog
from hivecat.local.java import spark_jars_dir
from hivecat.local.metastore import MetastoreDatabase, MetastoreServer
from hivecat.local.scratch_db import create_database, drop_database
from support.hive_metastores import RELEASES, StandaloneMetastore, database_v3, release_home
from support.java_build import compiled
from support.notification_log import (
    JAVA, LISTENER_CONF, STAND_IN_CONF, STAND_IN_LISTENER, EventReader, listener_jar,
)
from support.services import unique_name

DB = "sales"
DATES = ("2026-11-01", "2026-11-02", 'odd"va\\lue')


@dataclass
class Metastore:
    version: int
    old: str  # where objects are made (hdfs://nn:8020/... served from a directory; file:// on 2.3)
    new: str
    port: int
    sql_url: str
    reader: EventReader

    def catalog(self, **options) -> SqlCatalog:
        journal = sa.make_url(self.sql_url).database + "_j"
        return SqlCatalog(self.sql_url, journal_schema=journal if "postgresql" not in self.sql_url else "hivecat",
                          **options)

    def client(self):
        from hmsclient import hmsclient

        return hmsclient.HMSClient(host="127.0.0.1", port=self.port)


@pytest.fixture(scope="module", params=[("hive2", "mariadb"), ("hive3", "mariadb"), ("hive3", "postgresql"),
                                        ("hive4", "mariadb"), ("hive4", "postgresql")],
                ids=lambda p: f"{p[0]}-{p[1]}")
def metastore(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Metastore]:
    key, dialect = request.param
    db_server = request.getfixturevalue("mariadb_server" if dialect == "mariadb" else "postgres_server")
    name = unique_name(f"hc_ev{key[-1]}")
    sql_url = create_database(db_server, name, latin1=True)
    url = sa.make_url(sql_url)
    make = MetastoreDatabase.mariadb if dialect == "mariadb" else MetastoreDatabase.postgresql
    database = make(url.host, url.port or (3306 if dialect == "mariadb" else 5432), name, url.username, url.password)
    root = tmp_path_factory.mktemp(f"events-{key}-{dialect}")
    if key == "hive2":
        jar = listener_jar("2.3.10")
        server = MetastoreServer(database, root / "hms", (root / "warehouse").as_uri(), extra_conf=LISTENER_CONF,
                                 extra_jars=[jar])
        classpath = [str(spark_jars_dir() / "*"), jar]
    else:
        classpath = [str(release_home(RELEASES[key]) / "*")]
        stand_in = key == "hive4"
        server = StandaloneMetastore(RELEASES[key], database, root / "hms", root / "fs",
                                     extra_conf=STAND_IN_CONF if stand_in else LISTENER_CONF,
                                     extra_classpath=[str(compiled(JAVA / f"{STAND_IN_LISTENER}.java", classpath))]
                                     if stand_in else [listener_jar(RELEASES[key].version)])
    try:
        server.start()
    except (RuntimeError, FileNotFoundError) as exc:
        drop_database(db_server, name)
        pytest.fail(f"the {key} metastore on {dialect} could not start: {exc}")
    try:
        old, new = ((root / "warehouse").as_uri(), (root / "moved").as_uri()) if key == "hive2" else (
            "hdfs://nn:8020/warehouse", "hdfs://nn:8020/moved")
        yield Metastore(int(key[-1]), old, new, server.port, sql_url, EventReader(classpath))
    finally:
        server.stop()
        drop_database(db_server, name)
        if dialect == "mariadb":
            drop_database(db_server, name + "_j")


def _table(name: str, location: str, keys: int = 1):
    from hmsclient.genthrift.hive_metastore.ttypes import FieldSchema, SerDeInfo, StorageDescriptor, Table

    sd = StorageDescriptor(cols=[FieldSchema("id", "int", None)], location=location,
                           inputFormat="org.apache.hadoop.mapred.TextInputFormat",
                           outputFormat="org.apache.hadoop.hive.ql.io.HiveIgnoreKeyTextOutputFormat",
                           compressed=False, numBuckets=-1, bucketCols=[], sortCols=[], parameters={},
                           serdeInfo=SerDeInfo(None, "org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe",
                                               {"path": location}))
    partition_keys = [FieldSchema("dt", "string", None), FieldSchema("h", "int", None)][:keys]
    return Table(tableName=name, dbName=DB, owner="hive", createTime=0, lastAccessTime=0, retention=0, sd=sd,
                 partitionKeys=partition_keys, parameters={"EXTERNAL": "TRUE"}, tableType="EXTERNAL_TABLE")


def _make_table(ms: Metastore, name: str) -> None:
    from hmsclient.genthrift.hive_metastore.ttypes import Partition

    OLD = ms.old
    table = _table(name, f"{OLD}/{DB}.db/{name}", keys=2)
    with ms.client() as client:
        client.create_table(table)
        parts = []
        for dt in DATES:
            sd = copy.deepcopy(table.sd)
            sd.location = f"{OLD}/{DB}.db/{name}/dt={dt}"
            parts.append(Partition(values=[dt, "7"], dbName=DB, tableName=name, createTime=0, lastAccessTime=0,
                                   sd=sd, parameters={}))
        client.add_partitions(parts)


@pytest.fixture(scope="module")
def sales(metastore: Metastore) -> Metastore:
    with metastore.client() as client:
        client.create_database(database_v3(name=DB, locationUri=f"{metastore.old}/{DB}.db", parameters={}))
    _make_table(metastore, "events")
    return metastore


def _norm(location: str | None) -> str:
    """HMS spells local locations file:/x, hivecat file:///x."""
    return (location or "").replace("file:///", "file:/")


def _same(a: str | None, b: str) -> bool:
    return a is not None and _norm(a) == _norm(b)


def _objects(events: list) -> set[tuple]:
    """The objects the run's events name."""
    return {(e["type"], e["table"], e["afterValues"]) for e in events if e["type"].startswith("ALTER_")}


def _under(a: str | None, prefix: str) -> bool:
    return a is not None and _norm(a).startswith(_norm(prefix))


def test_a_sql_rewrite_is_read_back_by_hives_own_deserializer_with_the_new_locations(sales: Metastore):
    ms = sales
    OLD, NEW = ms.old, ms.new
    before, current = ms.reader.read(ms.port)
    assert before and current == before[-1]["id"], "the metastore's own listener logs its own changes"
    catalog = ms.catalog()
    try:
        scope = Scope(database=DB, table="events")
        report = catalog.relocate(RelocationRequest(f"{OLD}/{DB}.db/events", f"{NEW}/{DB}.db/events", scope=scope))
    finally:
        catalog.close()
    events, now = ms.reader.read(ms.port, current)
    assert report.notification_events == len(events) == len(DATES) + 1, events
    assert [e["id"] for e in events] == list(range(current + 1, current + 1 + len(events))), "dense, after Hive's"
    assert now == events[-1]["id"]
    # the format the metastore itself writes: gzip JSON on Hive 4, JSON before
    assert {e["format"] for e in events} == {before[-1]["format"]} == {
        "gzip(json-2.0)" if ms.version == 4 else "json-0.2"}
    table = [e for e in events if e["type"] == "ALTER_TABLE"]
    assert len(table) == 1 and table[0]["db"] == DB and table[0]["table"] == "events"
    assert _same(table[0]["before"], f"{OLD}/{DB}.db/events") and _same(table[0]["after"], f"{NEW}/{DB}.db/events")
    assert "path=" + f"{NEW}/{DB}.db/events".replace("file:///", "file:/") in \
        table[0]["afterSerde"].replace("file:///", "file:/")
    partitions = {e["afterValues"]: e for e in events if e["type"] == "ALTER_PARTITION"}
    assert set(partitions) == {f"[{dt}, 7]" for dt in DATES}
    for dt in DATES:
        event = partitions[f"[{dt}, 7]"]
        assert _same(event["before"], f"{OLD}/{DB}.db/events/dt={dt}")
        assert _same(event["after"], f"{NEW}/{DB}.db/events/dt={dt}")
        assert event["afterTable"] == f"{DB}.events" and event["tableObj"] == "events"
        assert event["keyValues"] == f"{{dt={dt}, h=7}}"
        assert "transient_lastDdlTime=" in event["afterParams"]

    # undo logs its own events, the other way round
    catalog = ms.catalog()
    try:
        undone = catalog.undo(report.run_id)
    finally:
        catalog.close()
    back, _ = ms.reader.read(ms.port, now)
    assert undone.notification_events == len(back) == len(events)
    assert [e["id"] for e in back] == list(range(now + 1, now + 1 + len(back)))
    for event in back:
        if event["type"] == "ALTER_PARTITION":
            assert _under(event["after"], OLD) and _under(event["before"], NEW)


def test_the_metastores_own_events_interleave_with_a_runs(sales: Metastore):
    """A CREATE TABLE through the metastore while a run is under way. PostgreSQL, one transaction: it happens
    just before the run commits; the run takes the listener's lock only when it numbers its events, so the
    metastore's event commits first and the run's follow. MariaDB: between two chunks of a chunked run (a
    one-transaction run there holds its plan's shared locks, which make the metastore's inserts into the same
    tables wait for the commit: docs/notification-events.md)."""
    ms = sales
    OLD, NEW = ms.old, ms.new
    _make_table(ms, "interleaved")
    _, current = ms.reader.read(ms.port)
    made: list[float] = []

    def create_meanwhile(*_: object) -> list[str]:  # as confirm: no location changed
        if made:
            return []
        began = time.monotonic()
        with ms.client() as client:
            client.create_table(_table("created_meanwhile", f"{OLD}/{DB}.db/created_meanwhile", keys=1))
        made.append(time.monotonic() - began)
        return []

    postgres = "postgresql" in ms.sql_url
    request = RelocationRequest(f"{OLD}/{DB}.db/interleaved", f"{NEW}/{DB}.db/interleaved",
                                scope=Scope(database=DB, table="interleaved"), chunk_size=None if postgres else 1)
    catalog = ms.catalog()
    try:
        if postgres:
            report = catalog.relocate(request, confirm=create_meanwhile)
        else:
            report = catalog.relocate(request, progress=create_meanwhile)
    finally:
        catalog.close()
    events, _ = ms.reader.read(ms.port, current)
    assert made and made[0] < 30, "the metastore's CREATE TABLE did not wait for the run"
    created = [e for e in events if e["type"] == "CREATE_TABLE"]
    assert len(created) == 1 and created[0]["table"] == "created_meanwhile"
    assert created[0]["id"] > current + (0 if postgres else 1), "after the first chunk's events"
    assert [e["id"] for e in events] == list(range(current + 1, current + 1 + len(events))), "dense and ordered"
    assert report.notification_events == len(events) - 1
    # a chunk logs what it commits: an object whose location and SerDe path sit in two chunks is altered twice
    assert len(_objects(events)) == len(DATES) + 1


def test_events_are_off_when_asked_and_a_chunked_run_logs_each_chunk(sales: Metastore):
    ms = sales
    OLD, NEW = ms.old, ms.new
    _make_table(ms, "quiet")
    _, current = ms.reader.read(ms.port)
    catalog = ms.catalog(notification_events=EVENTS_OFF)
    try:
        report = catalog.relocate(RelocationRequest(f"{OLD}/{DB}.db/quiet", f"{NEW}/{DB}.db/quiet",
                                                    scope=Scope(database=DB, table="quiet")))
    finally:
        catalog.close()
    assert report.rewritten and report.notification_events == 0
    assert ms.reader.read(ms.port, current)[0] == []

    catalog = ms.catalog()
    try:
        report = catalog.relocate(RelocationRequest(f"{NEW}/{DB}.db/quiet", f"{OLD}/{DB}.db/quiet", chunk_size=1,
                                                    scope=Scope(database=DB, table="quiet")))
    finally:
        catalog.close()
    events, _ = ms.reader.read(ms.port, current)
    assert report.notification_events == len(events) and len(_objects(events)) == len(DATES) + 1
    assert all(_under(e["after"], OLD) for e in events if e["type"] == "ALTER_PARTITION")



def test_a_rolled_back_run_leaves_no_event(sales: Metastore):
    """A run refused at its last check (changed-after-check) rolls back: its events with it, ids unspent."""
    ms = sales
    OLD, NEW = ms.old, ms.new
    _make_table(ms, "refused")
    _, current = ms.reader.read(ms.port)
    catalog = ms.catalog()
    try:
        with pytest.raises(RelocationRefused):
            catalog.relocate(RelocationRequest(f"{OLD}/{DB}.db/refused", f"{NEW}/{DB}.db/refused",
                                               scope=Scope(database=DB, table="refused")),
                             confirm=lambda: [f"{OLD}/{DB}.db/refused/dt={DATES[0]}"])
    finally:
        catalog.close()
    events, now = ms.reader.read(ms.port, current)
    assert events == [] and now == current


KILLER = textwrap.dedent("""
    import os, signal, sys
    from hivecat.catalog.model import RelocationRequest, Scope
    from hivecat.catalog.sql import notifications
    from hivecat.catalog.sql.catalog import SqlCatalog
    url, journal, old, new, kill_at = sys.argv[1:]
    number, calls = notifications._number, []
    def number_then_die(*args):
        number(*args)
        calls.append(1)
        if len(calls) == int(kill_at):  # numbered and locked, not committed: the chunk must vanish whole
            os.kill(os.getpid(), signal.SIGKILL)
    notifications._number = number_then_die
    SqlCatalog(url, journal_schema=journal).relocate(
        RelocationRequest(old, new, Scope("sales", "killed"), chunk_size=1))
""")


def test_a_killed_chunked_run_logs_what_it_committed_and_nothing_else(sales: Metastore):
    """SIGKILL inside the third chunk's transaction, after its events were numbered: the log holds the
    events of the two committed chunks and none of the third; the resumed run logs the rest."""
    ms = sales
    OLD, NEW = ms.old, ms.new
    _make_table(ms, "killed")
    _, current = ms.reader.read(ms.port)
    catalog = ms.catalog()
    journal = catalog.journal.schema
    catalog.close()
    old, new = f"{OLD}/{DB}.db/killed", f"{NEW}/{DB}.db/killed"
    killed = subprocess.run([sys.executable, "-c", KILLER, ms.sql_url, journal, old, new, "3"],
                            capture_output=True, text=True, timeout=180)
    assert killed.returncode == -9, killed.stderr[-2000:]
    events, now = ms.reader.read(ms.port, current)
    assert len(events) == 2 and [e["id"] for e in events] == [current + 1, current + 2]
    assert now == current + 2, "the killed chunk spent no event id: readers would see a gap"
    with ms.client() as client:
        moved = {tuple(p.values) for p in client.get_partitions(DB, "killed", -1) if _under(p.sd.location, NEW)}
    logged = {tuple(e["afterValues"][1:-1].split(", ")) for e in events
              if e["type"] == "ALTER_PARTITION" and _under(e["after"], NEW)}
    assert logged <= moved and len(moved) == len([e for e in events if _under(e["after"], NEW)
                                                  and e["type"] == "ALTER_PARTITION"])

    catalog = ms.catalog()
    try:
        report = catalog.relocate(RelocationRequest(old, new, Scope(DB, "killed"), chunk_size=1))  # resumes
    finally:
        catalog.close()
    rest, _ = ms.reader.read(ms.port, now)
    assert report.notification_events == len(rest) > 0
    assert [e["id"] for e in rest] == list(range(now + 1, now + 1 + len(rest)))
    assert len(_objects(events + rest)) == len(DATES) + 1


def test_thrift_rewrites_are_logged_by_the_metastore_itself(sales: Metastore, tmp_path):
    """The Thrift backend writes through alter_table / alter_partitions: the metastore's listener logs them,
    hivecat adds nothing (docs/notification-events.md)."""
    from hivecat.catalog.thrift import ThriftCatalog

    if sales.version == 4:
        pytest.skip("the Thrift backend speaks Hive 2.x calls that Hive 4 removed (get_table): "
                    "test_relocate_real_hive34 covers Hive 4 by SQL only")
    ms = sales
    OLD, NEW = ms.old, ms.new
    _make_table(ms, "thrift")
    _, current = ms.reader.read(ms.port)
    catalog = ThriftCatalog(f"thrift://127.0.0.1:{ms.port}", journal_url=f"sqlite:///{tmp_path / 'j.db'}")
    try:
        report = catalog.relocate(RelocationRequest(f"{OLD}/{DB}.db/thrift", f"{NEW}/{DB}.db/thrift",
                                                    scope=Scope(database=DB, table="thrift")))
    finally:
        catalog.close()
    events, _ = ms.reader.read(ms.port, current)
    assert report.rewritten and report.notification_events == 0
    partitions = {e["afterValues"]: e for e in events if e["type"] == "ALTER_PARTITION"}
    assert set(partitions) == {f"[{dt}, 7]" for dt in DATES}
    assert all(_under(e["after"], NEW) for e in partitions.values())
    assert any(e["type"] == "ALTER_TABLE" and _under(e["after"], NEW) for e in events)
