"""Hive 3/4 metastore shapes (CTLGS, DBS.CTLG_NAME, DBS.DB_MANAGED_LOCATION_URI) on MariaDB and PostgreSQL.

The shapes are written by hand in support.hms_shapes and filled with two catalogs, `hive` and `spark`,
whose locations share one prefix: only catalog scoping keeps a run on its own catalog. The state after a
run is compared, table by table and row by row, with the same rows generated from the new root.

The shapes match the real 3.1.0 / 4.0.0 schemas column by column (test_hms_shapes_match_real.py);
relocation on those real schemas is tested in test_relocate_real_hive34.py. What stays here is what the
real-schema tests do not cover; each test says what.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest
import sqlalchemy as sa

from hivecat.catalog.model import ObjectKind, RelocationRefused, RelocationRequest, Scope
from hivecat.catalog.sql.catalog import SqlCatalog
from hivecat.catalog.sql.limits import Capacity, capacity
from hivecat.catalog.sql.schema import HmsSchema, detect_schema
from hivecat.local.scratch_db import drop_database
from support.hms_shapes import CatalogLayout, create_shape, dump_all, expected_dump
from support.services import unique_name

OLD = "hdfs://nn:8020/warehouse"
NEW = "hdfs://nn2:8020/warehouse"


def layout(name: str, root: str = OLD) -> CatalogLayout:
    ids = {"hive": 1000, "spark": 2000}[name]
    return CatalogLayout(name, ids, f"{root}/{name}", f"{OLD}/{name}")


@dataclass
class Shape:
    url: str
    dialect: str  # mariadb | postgresql
    version: int  # 3 | 4
    metadata: sa.MetaData
    server: str

    def dump(self) -> dict[str, list[tuple]]:
        return dump_all(self.url, self.metadata)

    def expected(self, *layouts: CatalogLayout) -> dict[str, list[tuple]]:
        return expected_dump(self.metadata, self.version, list(layouts))


@pytest.fixture(params=[("mariadb", 3), ("mariadb", 4), ("postgresql", 3), ("postgresql", 4)],
                ids=lambda p: f"{p[0]}-hive{p[1]}")
def shape(request: pytest.FixtureRequest) -> Shape:
    dialect, version = request.param
    url = request.getfixturevalue("scratch_mariadb" if dialect == "mariadb" else "scratch_postgres")
    server = request.getfixturevalue("mariadb_server" if dialect == "mariadb" else "postgres_server")
    metadata = create_shape(url, version, [layout("hive"), layout("spark")])
    return Shape(url, dialect, version, metadata, server)


def _engine(shape: Shape, strict: bool = True) -> sa.Engine:
    if shape.dialect == "mariadb" and not strict:
        # Non-strict MariaDB truncates an over-long value with a warning instead of failing.
        return sa.create_engine(shape.url, connect_args={"init_command": "SET SESSION sql_mode = ''"})
    return sa.create_engine(shape.url)


@pytest.fixture
def open_catalog(shape: Shape) -> Iterator:
    """open_catalog(hive_catalog, strict=True) -> SqlCatalog with a journal of its own (dropped after)."""
    opened: list[SqlCatalog] = []

    def open_(hive_catalog: str = "hive", strict: bool = True) -> SqlCatalog:
        catalog = SqlCatalog(shape.url, journal_schema=unique_name("hc_journal"), hive_catalog=hive_catalog,
                             engine=_engine(shape, strict))
        opened.append(catalog)
        return catalog

    yield open_
    for catalog in opened:
        catalog.close()
        if shape.dialect == "mariadb":  # on PostgreSQL the journal schema goes with the scratch database
            drop_database(shape.server, catalog.journal.schema)


# --- detection and listing -----------------------------------------------------------------------

def _detect(url: str) -> tuple[HmsSchema, str]:
    """The detected schema and the dialect name of the database at `url`."""
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            return detect_schema(conn), engine.dialect.name
    finally:
        engine.dispose()


# Not shape-based: Hive 2.3 (no catalogs, DataNucleus-made lengths); the real-schema tests cover 3.1 and 4.0 only.
def test_detect_schema_on_the_real_hms_2_3_schema(hive_metastore):
    detected, _ = _detect(hive_metastore.sql_url)
    assert (detected.has_catalogs, detected.has_managed_location) == (False, False)
    assert not detected.has("CTLGS")
    # DataNucleus made these, not the schema scripts: lengths must be read, never assumed.
    assert capacity(detected["SDS"].c.LOCATION, "mysql") == Capacity(4000, "characters")
    assert capacity(detected["TABLE_PARAMS"].c.PARAM_VALUE, "mysql") == Capacity(32672, "characters")
    with pytest.raises(ValueError, match="no catalogs"):
        SqlCatalog(hive_metastore.sql_url, hive_catalog="spark")


# Listing (databases, tables, filtered partitions) per catalog: the real-schema tests never list.
@pytest.mark.parametrize("name", ["hive", "spark"])
def test_listing_stays_inside_the_catalog(shape, open_catalog, name):
    catalog = open_catalog(name)
    root = f"{OLD}/{name}"
    databases = {d.name: d for d in catalog.list_databases()}
    assert sorted(databases) == sorted(["sales", f"{name}_only"])
    assert databases["sales"].location == f"{root}/sales.db"
    assert databases["sales"].managed_location == (f"{root}/managed/sales.db" if shape.version == 4 else None)
    tables = {t.name: t for t in catalog.list_tables("sales")}
    assert sorted(tables) == ["events", "sibling", "skewed"]
    assert tables["events"].location == f"{root}/sales.db/events"
    assert tables["events"].serde_parameters["path"] == f"{root}/sales.db/events"
    assert [(p.values, p.location) for p in catalog.list_partitions("sales", "events", "dt > '2026-11-01'")] == [
        (("2026-11-02",), f"{root}/sales.db/events/dt=2026-11-02")]


# --- relocation ------------------------------------------------------------------------------------

# Both catalogs hold every location kind (partitions, skew maps, UDF jars, unnamed param keys) and every row
# of every table is compared: the real tests' second catalog holds one table and only locations are compared.
@pytest.mark.parametrize("moved,kept", [("hive", "spark"), ("spark", "hive")])
def test_whole_catalog_run_rewrites_its_catalog_only_and_undo_restores(shape, open_catalog, moved, kept):
    before = shape.dump()
    assert before == shape.expected(layout("hive"), layout("spark"))
    catalog = open_catalog(moved)

    dry = catalog.relocate(RelocationRequest(OLD, NEW, dry_run=True))
    assert shape.dump() == before

    report = catalog.relocate(RelocationRequest(OLD, NEW))
    after_layouts = sorted([layout(kept), layout(moved, NEW)], key=lambda lay: lay.ids)
    # Every location column and named parameter of `moved` now under NEW; every row of `kept`, and the
    # unnamed key, the warehouse2 sibling and the jar outside the prefix, exactly as they were.
    assert shape.dump() == shape.expected(*after_layouts)
    expected_counts = {
        ObjectKind.CATALOG: 1, ObjectKind.DATABASE: 2, ObjectKind.TABLE: 2, ObjectKind.PARTITION: 2,
        ObjectKind.SERDE_PARAM: 4, ObjectKind.TABLE_PARAM: 1, ObjectKind.PARTITION_PARAM: 2,
        ObjectKind.SKEWED_LOCATION: 1, ObjectKind.FUNCTION_RESOURCE: 1,
    }
    if shape.version == 4:
        expected_counts[ObjectKind.DATABASE_MANAGED] = 2
    assert {k: c.rewritten for k, c in report.counts.items() if c.rewritten} == expected_counts
    assert {k: c.rewritten for k, c in dry.counts.items() if c.rewritten} == expected_counts
    assert report.count(ObjectKind.TABLE_PARAM).skipped == 1  # backup.location: not a named key
    assert report.tables_touched == ["sales.events", "sales.skewed"]

    catalog.undo(report.run_id)
    assert shape.dump() == before


# A database scope whose name exists in both catalogs: the real-schema tests scope whole catalogs or one table.
def test_database_scope_picks_the_database_of_its_own_catalog(shape, open_catalog):
    before = shape.dump()
    catalog = open_catalog("spark")
    report = catalog.relocate(RelocationRequest(OLD, NEW, Scope("sales")))
    assert ObjectKind.CATALOG not in report.counts  # a database scope never moves the catalog root
    after = shape.dump()
    assert after["CTLGS"] == before["CTLGS"]
    assert {d.name: d.location for d in catalog.list_databases()} == {
        "sales": f"{NEW}/spark/sales.db", "spark_only": f"{OLD}/spark/spark_only.db"}
    hive = open_catalog("hive")
    assert {d.name: d.location for d in hive.list_databases()} == {
        "sales": f"{OLD}/hive/sales.db", "hive_only": f"{OLD}/hive/hive_only.db"}
    assert {t.location for t in hive.list_tables("sales")} >= {f"{OLD}/hive/sales.db/events"}
    assert all(p.location.startswith(f"{OLD}/hive/") for p in hive.list_partitions("sales", "events"))
    catalog.undo(report.run_id)
    assert shape.dump() == before


# --- values that would no longer fit ---------------------------------------------------------------

LONG_PARTITION = "dt=2026-11-02"
LONGER = "hdfs://nn2:8020/warehouse-moved-to-a-longer-home"


def _lengthen_a_partition(shape: Shape, length: int) -> str:
    """Make the hive catalog's second partition location exactly `length` characters; returns it."""
    sds, parts = shape.metadata.tables["SDS"], shape.metadata.tables["PARTITIONS"]
    base = f"{OLD}/hive/sales.db/events/{LONG_PARTITION}/"
    location = base + "d" * (length - len(base))
    engine = sa.create_engine(shape.url)
    try:
        with engine.begin() as conn:
            sd_id = conn.execute(sa.select(parts.c.SD_ID).where(parts.c.PART_ID == 1021)).scalar_one()
            conn.execute(sds.update().where(sds.c.SD_ID == sd_id).values(LOCATION=location))
    finally:
        engine.dispose()
    return location


# Edge data: a 3990-character location, and MariaDB in non-strict mode; no real-schema test goes near 4000.
@pytest.mark.parametrize("options", [{}, {"skip_refused": True}, {"dry_run": True}, {"chunk_size": 2}],
                         ids=["plain", "skip-refused", "dry-run", "chunked"])
def test_a_rewrite_that_would_not_fit_is_refused_with_zero_writes(shape, open_catalog, options):
    _lengthen_a_partition(shape, 3990)  # fits now, but not once its prefix is LONGER
    new_length = 3990 - len(OLD) + len(LONGER)
    before = shape.dump()
    catalog = open_catalog("hive", strict=False)  # MariaDB in non-strict mode would truncate silently
    with pytest.raises(RelocationRefused) as refused:
        catalog.relocate(RelocationRequest(OLD, LONGER, **options))
    [refusal] = refused.value.refusals
    assert refusal.reason == "too-long" and refusal.table == "sales.events"
    assert "SDS.LOCATION" in refusal.message and f"{new_length} characters" in refusal.message
    assert "4000" in refusal.message and new_length > 4000
    assert shape.dump() == before
    assert catalog.history() == []  # not even a journal run


# MariaDB non-strict truncation itself (why the length check exists): a session mode no real HMS test uses.
def test_non_strict_mariadb_really_truncates(shape):
    """Why the check above matters: what the database does on its own with such a value."""
    if shape.dialect != "mariadb":
        pytest.skip("PostgreSQL rejects over-long values itself; only MariaDB's non-strict mode truncates")
    engine = _engine(shape, strict=False)
    sds = shape.metadata.tables["SDS"]
    try:
        with engine.connect() as conn, conn.begin() as transaction:
            conn.execute(sds.update().where(sds.c.SD_ID == 1010).values(LOCATION="x" * 4010))
            assert len(conn.execute(sa.select(sds.c.LOCATION).where(sds.c.SD_ID == 1010)).scalar_one()) == 4000
            transaction.rollback()
    finally:
        engine.dispose()


# A length check that misses (monkeypatched) on edge data in non-strict mode: write-time protection only.
@pytest.mark.parametrize("chunk_size", [None, 2], ids=["one-transaction", "chunked"])
def test_a_value_that_grew_after_the_check_is_left_alone_not_truncated(shape, open_catalog, monkeypatch, chunk_size):
    """Should the length check miss a value, the write itself never overflows: the compare-and-set paths
    leave the row behind as conflicted; MariaDB's one-transaction fast path rolls the whole run back."""
    location = _lengthen_a_partition(shape, 3990)
    catalog = open_catalog("hive", strict=False)
    monkeypatch.setattr(SqlCatalog, "_too_long", lambda self, *args, **kwargs: [])  # the check missed it
    request = RelocationRequest(OLD, LONGER, chunk_size=chunk_size)
    if shape.dialect == "mariadb" and chunk_size is None:
        before = shape.dump()
        with pytest.raises(RelocationRefused) as refused:
            catalog.relocate(request)
        assert [r.reason for r in refused.value.refusals] == ["changed-during-run"]
        assert shape.dump() == before
        assert catalog.history() == []
        return
    report = catalog.relocate(request)
    assert report.count(ObjectKind.PARTITION).conflicted == 1
    assert report.count(ObjectKind.PARTITION).rewritten == 1
    kept = {p.values: p.location for p in catalog.list_partitions("sales", "events")}
    assert kept[("2026-11-02",)] == location
    assert kept[("2026-11-01",)] == f"{LONGER}/hive/sales.db/events/dt=2026-11-01"


# --- refusals: each one changes nothing --------------------------------------------------------------

def _set_table_params(shape: Shape, tbl_id: int, params: dict[str, str]) -> None:
    tp = shape.metadata.tables["TABLE_PARAMS"]
    engine = sa.create_engine(shape.url)
    try:
        with engine.begin() as conn:
            conn.execute(tp.insert(), [{"TBL_ID": tbl_id, "PARAM_KEY": k, "PARAM_VALUE": v} for k, v in params.items()])
    finally:
        engine.dispose()


# Iceberg / half-Iceberg / ACID parameters put straight into TABLE_PARAMS (HMS would validate or refuse them).
@pytest.mark.parametrize("params,reason", [
    ({"table_type": "ICEBERG", "metadata_location": f"{OLD}/hive/sales.db/events/metadata/v1.json"}, "iceberg"),
    ({"metadata_location": f"{OLD}/hive/sales.db/events/metadata/v1.json"}, "iceberg"),
    ({"transactional": "true"}, "acid"),
])
def test_unsafe_tables_are_refused_with_zero_writes(shape, open_catalog, params, reason):
    _set_table_params(shape, 1010, params)  # hive's sales.events
    _set_table_params(shape, 2010, params)  # spark's: must not be reported to a hive run
    before = shape.dump()
    catalog = open_catalog("hive")
    for request in (RelocationRequest(OLD, NEW), RelocationRequest(OLD, NEW, Scope("sales")),
                    RelocationRequest(OLD, NEW, Scope("sales", "events")),
                    RelocationRequest(OLD, NEW, Scope("sales", "events"), dry_run=True)):
        with pytest.raises(RelocationRefused) as refused:
            catalog.relocate(request)
        assert [(r.reason, r.table) for r in refused.value.refusals] == [(reason, "sales.events")]
        assert shape.dump() == before
    forced = RelocationRequest(OLD, NEW, Scope("sales", "events"), force_acid=True)
    if reason == "acid":  # --force-acid moves it
        report = catalog.relocate(forced)
        assert report.tables_touched == ["sales.events"]
        catalog.undo(report.run_id)
        assert shape.dump() == before
    else:  # Iceberg stays refused whatever the flags
        with pytest.raises(RelocationRefused, match="Iceberg"):
            catalog.relocate(forced)
        assert shape.dump() == before


# Bad requests (overlap, invalid URIs, scheme change, unknown scope or catalog, bad filter): no real-schema test.
@pytest.mark.parametrize("old,new,scope,catalog_name,reason", [
    (OLD, f"{OLD}/nested", Scope(), "hive", "overlap"),
    (f"{OLD}/hive", OLD, Scope(), "hive", "overlap"),
    (OLD, OLD + "/", Scope(), "hive", "overlap"),
    ("", NEW, Scope(), "hive", "invalid"),
    (OLD, "", Scope(), "hive", "invalid"),
    (OLD, "warehouse/relative", Scope(), "hive", "invalid"),
    ("/warehouse", NEW, Scope(), "hive", "invalid"),
    (OLD, "s3a://bucket/warehouse", Scope(), "hive", "scheme-change"),
    (OLD, NEW, Scope("no_such_db"), "hive", "not-found"),
    (OLD, NEW, Scope("spark_only"), "hive", "not-found"),  # exists, but in the other catalog
    (OLD, NEW, Scope("sales", "no_such_table"), "hive", "not-found"),
    (OLD, NEW, Scope(), "no_such_catalog", "not-found"),
    (OLD, NEW, Scope("sales", "events", "nokey = 1"), "hive", "invalid-filter"),
])
def test_bad_requests_are_refused_with_zero_writes(shape, open_catalog, old, new, scope, catalog_name, reason):
    before = shape.dump()
    catalog = open_catalog(catalog_name)
    with pytest.raises(RelocationRefused) as refused:
        catalog.relocate(RelocationRequest(old, new, scope))
    assert any(reason in r.reason for r in refused.value.refusals), refused.value.refusals
    assert shape.dump() == before


# Charsets: a CJK prefix on a latin1 MariaDB metastore, a latin1 one, UTF-8 PostgreSQL; no real-schema test.
def test_a_prefix_the_metastore_charset_cannot_store_is_refused_with_zero_writes(shape, open_catalog):
    """MariaDB HMS databases are latin1: a CJK prefix would fail mid-run (strict) or become '?' (non-strict)."""
    before = shape.dump()
    catalog = open_catalog("hive", strict=False)
    new = "hdfs://nn2:8020/数据/warehouse"
    if shape.dialect == "postgresql":  # UTF8: storable
        catalog.relocate(RelocationRequest(OLD, new))
        assert shape.dump() == shape.expected(layout("hive", new), layout("spark"))
        return
    for dry_run in (False, True):
        with pytest.raises(RelocationRefused) as refused:
            catalog.relocate(RelocationRequest(OLD, new, dry_run=dry_run))
        assert refused.value.refusals[0].reason == "unstorable" and "U+6570" in refused.value.refusals[0].message
    assert shape.dump() == before and catalog.history() == []
    latin1 = "hdfs://nn2:8020/müller/warehouse"  # in latin1: goes through
    catalog.relocate(RelocationRequest(OLD, latin1))
    assert shape.dump() == shape.expected(layout("hive", latin1), layout("spark"))


# allow_scheme_change (hdfs -> s3a) and its undo: the real-schema tests only move within hdfs://nn:8020.
def test_scheme_change_goes_through_only_when_allowed(shape, open_catalog):
    before = shape.dump()
    catalog = open_catalog("hive")
    report = catalog.relocate(RelocationRequest(OLD, "s3a://bucket/warehouse", allow_scheme_change=True))
    assert shape.dump() == shape.expected(layout("hive", "s3a://bucket/warehouse"), layout("spark"))
    catalog.undo(report.run_id)
    assert shape.dump() == before
