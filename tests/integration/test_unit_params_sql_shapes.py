"""update_unit_params on the metastore database, on the hand-written Hive 3 and Hive 4 shapes (support.hms_shapes)
in MariaDB and PostgreSQL: schema-only databases, no metastore process. The Hive 2.3 schema a real HMS made
is covered in test_unit_params_hms_glue.py.

Beyond the cases every backend passes (support.unit_params_cases): a location change that commits while the
write waits on its row lock is seen (compare-and-set, not a stale read), the statement count does not grow
with the partitions, values the columns cannot hold are failed per unit, partition names HMS did not escape
are still found, and a write stays inside its own Hive catalog.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
import sqlalchemy as sa

from hivecat.catalog.model import UnitParams
from hivecat.catalog.sql.catalog import SqlCatalog
from support.hms_shapes import CatalogLayout, create_shape
from support.services import unique_name
from support.unit_params_cases import (
    KEYS, N, Lake, partition_values, record_everything, recorded, replica_params, table_level_and_removal,
)

OLD = "hdfs://nn:8020/warehouse"
ROOT = f"{OLD}/hive/lake.db"
BASE = 10_000  # ids of the lake's rows, above those of the shape's catalogs
SPECIAL = {0: ("a/b:c", "dt=a%2Fb%3Ac/n=0"),  # escaped as HMS does
           1: ("odd:name", "dt=odd:name/n=1")}  # a name HMS would have escaped: found by its key values


def layout(name: str) -> CatalogLayout:
    return CatalogLayout(name, {"hive": 1000, "spark": 2000}[name], f"{OLD}/{name}", f"{OLD}/{name}")


@dataclass
class Shape:
    url: str
    dialect: str
    version: int
    metadata: sa.MetaData
    engine: sa.Engine
    ids: dict[tuple[str, ...], tuple[int, int]]  # the lake's partitions: values -> (PART_ID, SD_ID)


def build_lake(engine: sa.Engine, md: sa.MetaData, version: int) -> dict[tuple[str, ...], tuple[int, int]]:
    """Database `lake` of the `hive` catalog: `events` (N partitions, keys dt and n, parameter keep=1), `dim`."""
    t = md.tables
    rows: dict[str, list[dict]] = {name: [] for name in t}
    db = {"DB_ID": BASE, "DESC": None, "DB_LOCATION_URI": ROOT, "NAME": "lake", "OWNER_NAME": "hive",
          "OWNER_TYPE": "USER", "CTLG_NAME": "hive"}
    rows["DBS"].append({**db, **({"DB_MANAGED_LOCATION_URI": None, "DATACONNECTOR_NAME": None,
                                  "REMOTE_DBNAME": None} if version == 4 else {})})

    def sd(sd_id: int, location: str) -> None:
        rows["SERDES"].append({"SERDE_ID": sd_id, "NAME": None, "SLIB": "parquet"})
        rows["SDS"].append({"SD_ID": sd_id, "CD_ID": None, "INPUT_FORMAT": "in", "IS_COMPRESSED": False,
                            "IS_STOREDASSUBDIRECTORIES": False, "LOCATION": location, "NUM_BUCKETS": -1,
                            "OUTPUT_FORMAT": "out", "SERDE_ID": sd_id})

    for tbl_id, name in ((BASE, "events"), (BASE + 1, "dim")):
        sd(tbl_id, f"{ROOT}/{name}")
        rows["TBLS"].append({"TBL_ID": tbl_id, "CREATE_TIME": 0, "DB_ID": BASE, "LAST_ACCESS_TIME": 0, "OWNER": "hive",
                             "OWNER_TYPE": "USER", "RETENTION": 0, "SD_ID": tbl_id, "TBL_NAME": name,
                             "TBL_TYPE": "EXTERNAL_TABLE", "VIEW_EXPANDED_TEXT": None, "VIEW_ORIGINAL_TEXT": None,
                             "IS_REWRITE_ENABLED": False})
        rows["TABLE_PARAMS"].append({"TBL_ID": tbl_id, "PARAM_KEY": "EXTERNAL", "PARAM_VALUE": "TRUE"})
    rows["PARTITION_KEYS"] += [{"TBL_ID": BASE, "PKEY_COMMENT": None, "PKEY_NAME": key, "PKEY_TYPE": "string",
                                "INTEGER_IDX": i} for i, key in enumerate(("dt", "n"))]
    ids = {}
    for i in range(N):
        dt, n = partition_values(i)
        dt, name = SPECIAL.get(i, (dt, f"dt={dt}/n={n}"))
        part_id = BASE + 10 + i
        sd(part_id, f"{ROOT}/events/{name}")
        rows["PARTITIONS"].append({"PART_ID": part_id, "CREATE_TIME": 0, "LAST_ACCESS_TIME": 0, "PART_NAME": name,
                                   "SD_ID": part_id, "TBL_ID": BASE})
        rows["PARTITION_KEY_VALS"] += [{"PART_ID": part_id, "PART_KEY_VAL": v, "INTEGER_IDX": k}
                                       for k, v in enumerate((dt, n))]
        rows["PARTITION_PARAMS"].append({"PART_ID": part_id, "PARAM_KEY": "keep", "PARAM_VALUE": "1"})
        ids[(dt, n)] = (part_id, part_id)
    with engine.begin() as conn:
        for name in ("DBS", "SERDES", "SDS", "TBLS", "TABLE_PARAMS", "PARTITION_KEYS", "PARTITIONS",
                     "PARTITION_KEY_VALS", "PARTITION_PARAMS"):
            conn.execute(t[name].insert(), rows[name])
    return ids


@pytest.fixture(params=[("mariadb", 3), ("mariadb", 4), ("postgresql", 3), ("postgresql", 4)],
                ids=lambda p: f"{p[0]}-hive{p[1]}")
def shape(request: pytest.FixtureRequest) -> Iterator[Shape]:
    dialect, version = request.param
    url = request.getfixturevalue("scratch_mariadb" if dialect == "mariadb" else "scratch_postgres")
    metadata = create_shape(url, version, [layout("hive"), layout("spark")])
    engine = sa.create_engine(url)
    yield Shape(url, dialect, version, metadata, engine, build_lake(engine, metadata, version))
    engine.dispose()


@pytest.fixture
def catalog(shape: Shape) -> Iterator[SqlCatalog]:
    opened = SqlCatalog(shape.url, journal_schema=unique_name("hc_journal"))  # never created: nothing journals
    yield opened
    opened.close()


def lake(shape: Shape, catalog: SqlCatalog) -> Lake:
    sds, parts = shape.metadata.tables["SDS"], shape.metadata.tables["PARTITIONS"]
    kv, pp = shape.metadata.tables["PARTITION_KEY_VALS"], shape.metadata.tables["PARTITION_PARAMS"]

    def move(values: tuple[str, ...]) -> str:
        location = f"{OLD}2/moved/{values[1]}"
        with shape.engine.begin() as conn:
            conn.execute(sds.update().where(sds.c.SD_ID == shape.ids[values][1]).values(LOCATION=location))
        return location

    def drop(values: tuple[str, ...]) -> None:
        part_id, sd_id = shape.ids[values]
        with shape.engine.begin() as conn:
            for table, column in ((kv, kv.c.PART_ID), (pp, pp.c.PART_ID), (parts, parts.c.PART_ID)):
                conn.execute(table.delete().where(column == part_id))
            conn.execute(sds.delete().where(sds.c.SD_ID == sd_id))
    return Lake(catalog, "lake", move, drop)


def test_every_case_with_a_bounded_number_of_statements(shape: Shape, catalog: SqlCatalog, record_property) -> None:
    statements: list[str] = []
    sa.event.listen(catalog.engine, "before_cursor_execute", lambda *args: statements.append(args[2]))
    the_lake = lake(shape, catalog)
    record_property("seconds_2000", round(record_everything(the_lake), 2))
    # Two chunks of 1,000 and two listings of 2,000 partitions: a few dozen statements, not thousands.
    assert len(statements) < 40, statements
    table_level_and_removal(the_lake)


def test_a_location_change_committed_while_the_write_waits_is_a_conflict(shape: Shape, catalog: SqlCatalog) -> None:
    planned = {p.values: p for p in catalog.list_partitions("lake", "events")}
    target, other = partition_values(500), partition_values(501)
    sds = shape.metadata.tables["SDS"]
    outcome: list = []
    with shape.engine.connect() as holder:
        with holder.begin():  # someone else's uncommitted location change: its row lock is held
            holder.execute(sds.update().where(sds.c.SD_ID == shape.ids[target][1]).values(LOCATION=f"{OLD}2/moved"))
            writer = threading.Thread(target=lambda: outcome.append(catalog.update_unit_params(
                "lake", "events", [recorded(planned[target]), recorded(planned[other])])))
            writer.start()
            time.sleep(1.5)
            assert writer.is_alive() and not outcome  # waiting on the lock, not reading the old location
        writer.join(60)
    assert outcome[0].written == 1
    assert outcome[0].conflicts == ((target, f"location is now '{OLD}2/moved', expected {planned[target].location!r}"),)
    after = {p.values: p for p in catalog.list_partitions("lake", "events")}
    assert replica_params(after[target].parameters) == {} and len(replica_params(after[other].parameters)) == 3


def test_values_the_columns_cannot_hold_are_failed_per_unit(shape: Shape, catalog: SqlCatalog) -> None:
    long_value, check_mark = "x" * 4001, "copied \u2713"
    units = [UnitParams(partition_values(i), None, {KEYS[0]: v}) for i, v in ((5, long_value), (6, check_mark),
                                                                              (7, "plain"))]
    outcome = catalog.update_unit_params("lake", "events", units)
    # Hive 3 keeps partition parameter values in VARCHAR(4000), Hive 4 in MEDIUMTEXT / TEXT; the MariaDB
    # shapes are latin1, PostgreSQL is UTF8.
    failed = {partition_values(5)} if shape.version == 3 else set()
    failed |= {partition_values(6)} if shape.dialect == "mariadb" else set()
    assert {values for values, _ in outcome.failed} == failed and outcome.conflicts == ()
    assert outcome.written == 3 - len(failed)
    reasons = dict(outcome.failed)
    if shape.version == 3:
        assert reasons[partition_values(5)] == (f"value of {KEYS[0]} is 4001 characters long, "
                                                "PARTITION_PARAMS.PARAM_VALUE holds 4000")
    if shape.dialect == "mariadb":
        assert "'\u2713' (U+2713), which PARTITION_PARAMS.PARAM_VALUE (latin1) cannot store" in reasons[partition_values(6)]
    after = {p.values: replica_params(p.parameters) for p in catalog.list_partitions("lake", "events")}
    assert after[partition_values(7)] == {KEYS[0]: "plain"}
    for values, value in ((partition_values(5), long_value), (partition_values(6), check_mark)):
        assert after[values] == ({} if values in failed else {KEYS[0]: value})


def test_escaped_and_unescaped_partition_names_are_found(shape: Shape, catalog: SqlCatalog) -> None:
    units = [UnitParams((dt, str(i)), f"{ROOT}/events/{name}", {KEYS[0]: "here"}) for i, (dt, name) in SPECIAL.items()]
    assert catalog.update_unit_params("lake", "events", units).written == 2
    after = {p.values: replica_params(p.parameters) for p in catalog.list_partitions("lake", "events")}
    assert after[("a/b:c", "0")] == after[("odd:name", "1")] == {KEYS[0]: "here"}


def test_writes_stay_inside_their_hive_catalog(shape: Shape, catalog: SqlCatalog) -> None:
    """Both catalogs hold sales.events with the same partition values."""
    units = [UnitParams((day,), f"{OLD}/hive/sales.db/events/dt={day}", {KEYS[0]: "c2"})
             for day in ("2026-11-01", "2026-11-02")]
    assert catalog.update_unit_params("sales", "events", units).written == 2
    spark = SqlCatalog(shape.url, journal_schema=unique_name("hc_journal"), hive_catalog="spark")
    try:
        assert all(replica_params(p.parameters) == {} for p in spark.list_partitions("sales", "events"))
        assert spark.update_unit_params("sales", "events", units).conflicts[0][1].startswith(
            f"location is now '{OLD}/spark/sales.db/events/dt=2026-11-01'")
    finally:
        spark.close()
    assert all(replica_params(p.parameters) == {KEYS[0]: "c2"} for p in catalog.list_partitions("sales", "events"))
