"""The hand-written Hive 3/4 shapes (support.hms_shapes) against the schemas Hive's own schematool makes.

Other tests stand the shapes in for a real metastore (deliberately broken or edge data, MariaDB non-strict
mode, charsets, locks, restricted users). Here each shape and the real schema of its release (Hive
standalone metastore 3.1.3 / 4.0.1, from Maven, `schematool -initSchema`) are made side by side in
scratch databases on MariaDB and PostgreSQL and read back with SQLAlchemy's inspector: every column the
shape declares must exist with the same reflected type, length, nullability and primary key, so a shape
can never again declare, say, VARCHAR(4000) where the release has MEDIUMTEXT.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
import sqlalchemy as sa

from hivecat.catalog.sql.schema import OPTIONAL, REQUIRED
from hivecat.local.metastore import MetastoreDatabase
from hivecat.local.scratch_db import create_database, drop_database
from support.hive_metastores import RELEASES, StandaloneMetastore
from support.hms_shapes import CatalogLayout, create_shape, hms_metadata
from support.services import START_SECONDS, unique_name

# Tables the location engine reads or writes (hivecat.catalog.sql.schema), plus VERSION, which it reads.
ENGINE_TABLES = sorted({*REQUIRED, *OPTIONAL, "VERSION"})


@dataclass(frozen=True)
class Column:
    type: str            # the reflected type's name: VARCHAR, MEDIUMTEXT, TEXT, BIGINT, BIT, BOOLEAN, ...
    length: int | None   # the reflected length (VARCHAR(n), CHAR(n), BIT(n)), None for unsized types
    nullable: bool
    primary_key: bool


def _unique_keys(url: str) -> dict[str, set[frozenset[str]]]:
    """Table -> the column sets of its unique constraints and unique indexes (however the script declared them)."""
    engine = sa.create_engine(url)
    try:
        if engine.dialect.name != "postgresql":
            # SQLAlchemy's MySQL reflection misses keys on some HMS tables (PARTITIONS' UNIQUEPARTITION on a
            # latin1_bin VARCHAR(767)): read them from information_schema instead.
            with engine.connect() as conn:
                rows = conn.execute(sa.text(
                    "SELECT TABLE_NAME, INDEX_NAME, COLUMN_NAME FROM information_schema.STATISTICS "
                    "WHERE TABLE_SCHEMA = DATABASE() AND NON_UNIQUE = 0 AND INDEX_NAME <> 'PRIMARY'")).all()
            keys: dict[tuple[str, str], set[str]] = {}
            for table, index, column in rows:
                keys.setdefault((table.upper(), index), set()).add(column.upper())
            mysql_out: dict[str, set[frozenset[str]]] = {}
            for (table, _), columns in keys.items():
                mysql_out.setdefault(table, set()).add(frozenset(columns))
            return mysql_out
        inspector = sa.inspect(engine)
        out: dict[str, set[frozenset[str]]] = {}
        for table in inspector.get_table_names():
            keys = [u["column_names"] for u in inspector.get_unique_constraints(table)]
            keys += [i["column_names"] for i in inspector.get_indexes(table) if i.get("unique")]
            out[table.upper()] = {frozenset(c.upper() for c in key) for key in keys if None not in key}
        return out
    finally:
        engine.dispose()


def _reflect(url: str) -> dict[str, dict[str, Column]]:
    """Every table and column of the database at `url`, names upper-cased, as the inspector reads them."""
    engine = sa.create_engine(url)
    try:
        inspector = sa.inspect(engine)
        out: dict[str, dict[str, Column]] = {}
        for table in inspector.get_table_names():
            pk = {c.upper() for c in inspector.get_pk_constraint(table)["constrained_columns"]}
            out[table.upper()] = {
                c["name"].upper(): Column(type(c["type"]).__visit_name__.upper(), getattr(c["type"], "length", None),
                                          bool(c["nullable"]), c["name"].upper() in pk)
                for c in inspector.get_columns(table)}
        return out
    finally:
        engine.dispose()


@dataclass(frozen=True)
class Pair:
    dialect: str
    version: int
    real: dict[str, dict[str, Column]]
    shape: dict[str, dict[str, Column]]
    real_unique: dict[str, set[frozenset[str]]]
    shape_unique: dict[str, set[frozenset[str]]]


@pytest.fixture(scope="module", params=[("mariadb", "hive3"), ("mariadb", "hive4"),
                                        ("postgresql", "hive3"), ("postgresql", "hive4")],
                ids=lambda p: f"{p[0]}-{p[1]}")
def pair(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pair]:
    """The real schema (schematool) and the hand-written shape of one release, on one database server."""
    dialect, key = request.param
    release = RELEASES[key]
    version = int(release.version[0])
    db_server = request.getfixturevalue("mariadb_server" if dialect == "mariadb" else "postgres_server")
    real_name, shape_name = unique_name(f"hc_real_{key}"), unique_name(f"hc_shape_{key}")
    # latin1 on MariaDB, as the real-metastore fixtures and scratch_mariadb make their databases.
    real_url = create_database(db_server, real_name, latin1=True)
    shape_url = create_database(db_server, shape_name, latin1=True)
    try:
        began = time.monotonic()
        url = sa.make_url(real_url)
        make = MetastoreDatabase.mariadb if dialect == "mariadb" else MetastoreDatabase.postgresql
        database = make(url.host, url.port or (3306 if dialect == "mariadb" else 5432), real_name, url.username,
                        url.password)
        root = tmp_path_factory.mktemp(f"schema-{key}-{dialect}")
        try:
            StandaloneMetastore(release, database, root, root / "fs").init_schema()  # workdir must exist
        except (RuntimeError, FileNotFoundError) as exc:
            pytest.fail(f"schematool could not make the {release} schema on {dialect}: {exc}")
        START_SECONDS[f"schematool-{key}-{dialect}"] = round(time.monotonic() - began, 2)
        create_shape(shape_url, version, [CatalogLayout("hive", 1000, "hdfs://nn:8020/warehouse/hive",
                                                        "hdfs://nn:8020/warehouse/hive")])
        yield Pair(dialect, version, _reflect(real_url), _reflect(shape_url), _unique_keys(real_url),
                   _unique_keys(shape_url))
    finally:
        drop_database(db_server, real_name)
        drop_database(db_server, shape_name)


def test_every_shape_column_matches_the_real_schema(pair: Pair):
    """Type family, length, nullability and primary key of every column the shape declares."""
    differences = []
    for table, columns in sorted(pair.shape.items()):
        real_table = pair.real.get(table)
        if real_table is None:
            differences.append(f"{table}: not in the real schema")
            continue
        for name, column in sorted(columns.items()):
            real = real_table.get(name)
            if real is None:
                differences.append(f"{table}.{name}: not in the real schema")
            elif real != column:
                differences.append(f"{table}.{name}: shape {column}, real {real}")
    assert not differences, "\n".join(differences)


def test_unique_keys_match_the_real_schema(pair: Pair):
    """Every unique key of a shape table is the real schema's, and the shape has each real one its columns allow."""
    differences = []
    for table, columns in sorted(pair.shape.items()):
        real = {key for key in pair.real_unique.get(table, set()) if key <= columns.keys()}
        if pair.shape_unique.get(table, set()) != real:
            differences.append(f"{table}: shape {sorted(map(sorted, pair.shape_unique.get(table, set())))}, "
                               f"real {sorted(map(sorted, real))}")
    assert not differences, "\n".join(differences)


def test_the_shape_has_every_engine_table_and_column_of_the_real_schema(pair: Pair):
    """Every table the location engine touches, with all its real columns: a shape row is a real row."""
    shape_md = hms_metadata(pair.version)
    assert {t.upper() for t in shape_md.tables} >= set(ENGINE_TABLES)
    missing = {f"{table}.{name}" for table in ENGINE_TABLES for name in pair.real[table]
               if name not in pair.shape[table]}
    assert not missing, "\n".join(sorted(missing))


def test_the_location_columns_are_what_the_release_declares(pair: Pair):
    """The capacities the length checks depend on, spelled out (so a wrong expectation above cannot hide)."""
    text = "MEDIUMTEXT" if pair.dialect == "mariadb" else "TEXT"
    for table, column in [("SDS", "LOCATION"), ("DBS", "DB_LOCATION_URI"), ("CTLGS", "LOCATION_URI"),
                          ("SKEWED_COL_VALUE_LOC_MAP", "LOCATION"), ("FUNC_RU", "RESOURCE_URI")]:
        assert (pair.shape[table][column].type, pair.shape[table][column].length) == ("VARCHAR", 4000), column
    for table in ("SERDE_PARAMS", "TABLE_PARAMS"):
        assert pair.shape[table]["PARAM_VALUE"].type == text
    expected = ("VARCHAR", 4000) if pair.version == 3 else (text, None)
    partition_param = pair.shape["PARTITION_PARAMS"]["PARAM_VALUE"]
    assert (partition_param.type, partition_param.length) == expected
