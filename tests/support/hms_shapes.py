"""Minimal Hive 3 and Hive 4 metastore shapes, written here from the column facts (names, types, keys).

Every table relocation and listing touch, each with all the columns the release gives it; a few more
tables (SERDES, SKEWED_STRING_LIST[_VALUES], SEQUENCE_TABLE) with the columns their rows need. Hive 3 adds
CTLGS (NAME, LOCATION_URI) and DBS.CTLG_NAME; Hive 4 adds DBS.DB_MANAGED_LOCATION_URI, DATACONNECTOR_NAME,
REMOTE_DBNAME and TBLS/PARTITIONS.WRITE_ID. Types, lengths, nullability and keys follow what schematool
makes from the release's own scripts (3.1.0 / 4.0.0), per dialect: locations VARCHAR(4000); SERDE_PARAMS /
TABLE_PARAMS values MEDIUMTEXT on MySQL and TEXT on PostgreSQL, PARTITION_PARAMS values VARCHAR(4000) in
Hive 3 and MEDIUMTEXT / TEXT in Hive 4; flags BIT(1) on MySQL; times, counts and indexes that MySQL
declares INT are BIGINT on PostgreSQL. tests/integration/test_hms_shapes_match_real.py proves all of
it column by column against the real schemas. Upper-case names are quoted by SQLAlchemy on PostgreSQL,
as HMS's own PostgreSQL schema does.

`catalog_rows` fills a catalog with one object of every location-holding kind, each location derived
from a `root` the test chooses: the state after a relocation is the same rows generated from the new
root, so expectations never come from hivecat's own code.
"""

from __future__ import annotations

from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.dialects import mysql

ID = sa.BigInteger
LOCATION = sa.String(4000)
LONG_PARAM = sa.Text().with_variant(mysql.MEDIUMTEXT(), "mysql", "mariadb")
MESSAGE = sa.Text().with_variant(mysql.LONGTEXT(), "mysql", "mariadb")
FLAG = sa.Boolean().with_variant(mysql.BIT(1), "mysql", "mariadb")
# INT in the MySQL scripts, bigint in the PostgreSQL ones.
WIDE_INT = sa.Integer().with_variant(sa.BigInteger(), "postgresql")


def _col(name: str, type_, *, key: bool = False, null: bool = True, **kw) -> sa.Column:
    return sa.Column(name, type_, primary_key=key, nullable=null and not key, autoincrement=False, **kw)


def hms_metadata(version: int, dialect: str = "mysql") -> sa.MetaData:
    """The shape of a Hive `version` (3 or 4) metastore on `dialect` (mysql/mariadb or postgresql), as
    SQLAlchemy Core tables. Types differ by dialect through variants; the few nullability differences of
    the release's scripts need the dialect named here."""
    if version not in (3, 4):
        raise ValueError(f"no shape for Hive {version}")
    postgres = dialect == "postgresql"
    md = sa.MetaData()
    sa.Table("VERSION", md, _col("VER_ID", ID, key=True), _col("SCHEMA_VERSION", sa.String(127), null=False),
             _col("VERSION_COMMENT", sa.String(255), null=not postgres))
    ctlgs = [_col("CTLG_ID", ID, key=True), _col("NAME", sa.String(256), unique=True),
             _col("DESC", sa.String(4000)), _col("LOCATION_URI", LOCATION, null=False)]
    if version == 4:
        ctlgs.append(_col("CREATE_TIME", WIDE_INT))
    sa.Table("CTLGS", md, *ctlgs)
    dbs = [_col("DB_ID", ID, key=True), _col("DESC", sa.String(4000)), _col("DB_LOCATION_URI", LOCATION, null=False),
           _col("NAME", sa.String(128)), _col("OWNER_NAME", sa.String(128)), _col("OWNER_TYPE", sa.String(10)),
           # NOT NULL except in Hive 3's PostgreSQL script.
           _col("CTLG_NAME", sa.String(256), null=postgres and version == 3, server_default="hive")]
    if version == 4:
        dbs += [_col("CREATE_TIME", WIDE_INT), _col("DB_MANAGED_LOCATION_URI", LOCATION),
                _col("TYPE", sa.String(32), null=False, server_default="NATIVE"),
                _col("DATACONNECTOR_NAME", sa.String(128)), _col("REMOTE_DBNAME", sa.String(128))]
    sa.Table("DBS", md, *dbs, sa.UniqueConstraint("NAME", "CTLG_NAME"))
    sa.Table("SERDES", md, _col("SERDE_ID", ID, key=True), _col("NAME", sa.String(128)), _col("SLIB", sa.String(4000)))
    sa.Table("SERDE_PARAMS", md, _col("SERDE_ID", ID, key=True), _col("PARAM_KEY", sa.String(256), key=True),
             _col("PARAM_VALUE", LONG_PARAM))
    sa.Table("SDS", md, _col("SD_ID", ID, key=True), _col("CD_ID", ID), _col("INPUT_FORMAT", sa.String(4000)),
             _col("IS_COMPRESSED", FLAG, null=False), _col("IS_STOREDASSUBDIRECTORIES", FLAG, null=False),
             _col("LOCATION", LOCATION), _col("NUM_BUCKETS", WIDE_INT, null=False),
             _col("OUTPUT_FORMAT", sa.String(4000)), _col("SERDE_ID", ID))
    tbls = [_col("TBL_ID", ID, key=True), _col("CREATE_TIME", WIDE_INT, null=False), _col("DB_ID", ID),
            _col("LAST_ACCESS_TIME", WIDE_INT, null=False), _col("OWNER", sa.String(767)),
            _col("OWNER_TYPE", sa.String(10)), _col("RETENTION", WIDE_INT, null=False), _col("SD_ID", ID),
            _col("TBL_NAME", sa.String(256)), _col("TBL_TYPE", sa.String(128)),
            _col("VIEW_EXPANDED_TEXT", LONG_PARAM), _col("VIEW_ORIGINAL_TEXT", LONG_PARAM),
            _col("IS_REWRITE_ENABLED", FLAG, null=False, server_default=sa.text("false" if postgres else "0"))]
    parts = [_col("PART_ID", ID, key=True), _col("CREATE_TIME", WIDE_INT, null=False),
             _col("LAST_ACCESS_TIME", WIDE_INT, null=False), _col("PART_NAME", sa.String(767)), _col("SD_ID", ID),
             _col("TBL_ID", ID)]
    if version == 4:
        tbls.append(_col("WRITE_ID", ID, server_default=sa.text("0")))
        parts.append(_col("WRITE_ID", ID, server_default=sa.text("0")))
    sa.Table("TBLS", md, *tbls, sa.UniqueConstraint("TBL_NAME", "DB_ID"))
    sa.Table("TABLE_PARAMS", md, _col("TBL_ID", ID, key=True), _col("PARAM_KEY", sa.String(256), key=True),
             _col("PARAM_VALUE", LONG_PARAM))
    sa.Table("PARTITION_KEYS", md, _col("TBL_ID", ID, key=True), _col("PKEY_COMMENT", sa.String(4000)),
             _col("PKEY_NAME", sa.String(128), key=True), _col("PKEY_TYPE", sa.String(767), null=False),
             _col("INTEGER_IDX", WIDE_INT, null=False))
    sa.Table("PARTITIONS", md, *parts, sa.UniqueConstraint("PART_NAME", "TBL_ID"))
    sa.Table("PARTITION_KEY_VALS", md, _col("PART_ID", ID, key=True), _col("PART_KEY_VAL", sa.String(256)),
             _col("INTEGER_IDX", WIDE_INT, key=True))
    # VARCHAR(4000) in the 3.1.0 scripts, MEDIUMTEXT / TEXT in the 4.0.0 ones.
    sa.Table("PARTITION_PARAMS", md, _col("PART_ID", ID, key=True), _col("PARAM_KEY", sa.String(256), key=True),
             _col("PARAM_VALUE", sa.String(4000) if version == 3 else LONG_PARAM))
    sa.Table("SKEWED_STRING_LIST", md, _col("STRING_LIST_ID", ID, key=True))
    sa.Table("SKEWED_STRING_LIST_VALUES", md, _col("STRING_LIST_ID", ID, key=True),
             _col("STRING_LIST_VALUE", sa.String(256)), _col("INTEGER_IDX", WIDE_INT, key=True))
    sa.Table("SKEWED_COL_VALUE_LOC_MAP", md, _col("SD_ID", ID, key=True), _col("STRING_LIST_ID_KID", ID, key=True),
             _col("LOCATION", LOCATION))
    sa.Table("FUNCS", md, _col("FUNC_ID", ID, key=True), _col("CLASS_NAME", sa.String(4000)),
             _col("CREATE_TIME", sa.Integer, null=False), _col("DB_ID", ID), _col("FUNC_NAME", sa.String(128)),
             _col("FUNC_TYPE", sa.Integer, null=False), _col("OWNER_NAME", sa.String(128)),
             _col("OWNER_TYPE", sa.String(10)), sa.UniqueConstraint("FUNC_NAME", "DB_ID"))
    sa.Table("FUNC_RU", md, _col("FUNC_ID", ID, key=True), _col("RESOURCE_TYPE", sa.Integer, null=False),
             _col("RESOURCE_URI", LOCATION), _col("INTEGER_IDX", sa.Integer, key=True))
    sa.Table("SEQUENCE_TABLE", md, _col("SEQUENCE_NAME", sa.String(255), key=True), _col("NEXT_VAL", ID, null=False))
    # The notification log (notification events of direct rewrites); Hive 4 keeps EVENT_ID unique.
    sa.Table("NOTIFICATION_LOG", md, _col("NL_ID", ID, key=True), _col("EVENT_ID", ID, null=False),
             _col("EVENT_TIME", sa.Integer, null=False), _col("EVENT_TYPE", sa.String(32), null=False),
             _col("CAT_NAME", sa.String(256)), _col("DB_NAME", sa.String(128)), _col("TBL_NAME", sa.String(256)),
             _col("MESSAGE", MESSAGE), _col("MESSAGE_FORMAT", sa.String(16)),
             *([sa.UniqueConstraint("EVENT_ID", name="NOTIFICATION_LOG_EVENT_ID")] if version == 4 else []))
    sa.Table("NOTIFICATION_SEQUENCE", md, _col("NNI_ID", ID, key=True), _col("NEXT_EVENT_ID", ID, null=False))
    return md


# Never under any relocated root: anchored matching must leave these alone.
SIBLING = "hdfs://nn:8020/warehouse2/sibling"
SHARED_JAR = "hdfs://nn:8020/libs/shared.jar"


@dataclass(frozen=True)
class CatalogLayout:
    name: str    # CTLGS.NAME / DBS.CTLG_NAME
    ids: int     # every id of this catalog's rows is ids + a small offset: catalogs never share an id
    root: str    # where this catalog's locations live (CTLGS.LOCATION_URI)
    fixed: str   # the same place, for values a relocation must never touch (unnamed parameter keys)


def catalog_rows(layout: CatalogLayout, version: int) -> dict[str, list[dict]]:
    """One catalog: databases `sales` (same name in every catalog) and `{name}_only`; in sales a
    partitioned Spark-style table (`path` SerDe/partition params, avro.schema.url), a skewed table,
    a table outside the root (warehouse2), a UDF with two jars."""
    i, root, cat = layout.ids, layout.root, layout.name
    sales = f"{root}/sales.db"
    rows: dict[str, list[dict]] = {name: [] for name in hms_metadata(version).tables}
    rows["CTLGS"].append({"CTLG_ID": i, "NAME": cat, "DESC": f"{cat} catalog", "LOCATION_URI": root})
    for db_id, name in ((i + 1, "sales"), (i + 2, f"{cat}_only")):
        db = {"DB_ID": db_id, "NAME": name, "DB_LOCATION_URI": f"{root}/{name}.db", "OWNER_NAME": "hive",
              "OWNER_TYPE": "USER", "CTLG_NAME": cat}
        if version == 4:
            db.update(DB_MANAGED_LOCATION_URI=f"{root}/managed/{name}.db", DATACONNECTOR_NAME=None, REMOTE_DBNAME=None)
        rows["DBS"].append(db)

    def sd(sd_id: int, location: str, path_param: bool = True) -> None:
        rows["SERDES"].append({"SERDE_ID": sd_id, "NAME": None, "SLIB": "org.apache.hadoop.hive.ql.io.parquet."
                                                                        "serde.ParquetHiveSerDe"})
        rows["SDS"].append({"SD_ID": sd_id, "CD_ID": None, "INPUT_FORMAT": "parquet-in", "IS_COMPRESSED": False,
                            "IS_STOREDASSUBDIRECTORIES": False, "LOCATION": location, "NUM_BUCKETS": -1,
                            "OUTPUT_FORMAT": "parquet-out", "SERDE_ID": sd_id})
        rows["SERDE_PARAMS"].append({"SERDE_ID": sd_id, "PARAM_KEY": "serialization.format", "PARAM_VALUE": "1"})
        if path_param:
            rows["SERDE_PARAMS"].append({"SERDE_ID": sd_id, "PARAM_KEY": "path", "PARAM_VALUE": location})

    def table(tbl_id: int, name: str, location: str, **params: str) -> None:
        sd(tbl_id, location)
        rows["TBLS"].append({"TBL_ID": tbl_id, "CREATE_TIME": 0, "DB_ID": i + 1, "LAST_ACCESS_TIME": 0,
                             "OWNER": "hive", "OWNER_TYPE": "USER", "RETENTION": 0, "SD_ID": tbl_id,
                             "TBL_NAME": name, "TBL_TYPE": "EXTERNAL_TABLE", "VIEW_EXPANDED_TEXT": None,
                             "VIEW_ORIGINAL_TEXT": None, "IS_REWRITE_ENABLED": False,
                             **({"WRITE_ID": 0} if version == 4 else {})})
        rows["TABLE_PARAMS"] += [{"TBL_ID": tbl_id, "PARAM_KEY": k, "PARAM_VALUE": v}
                                 for k, v in {"EXTERNAL": "TRUE", **params}.items()]

    events = f"{sales}/events"
    table(i + 10, "events", events, **{"avro.schema.url": f"{events}/_schema.avsc",
                                       "backup.location": f"{layout.fixed}/sales.db/events"})
    rows["PARTITION_KEYS"].append({"TBL_ID": i + 10, "PKEY_COMMENT": None, "PKEY_NAME": "dt",
                                   "PKEY_TYPE": "string", "INTEGER_IDX": 0})
    for n, dt in enumerate(("2026-11-01", "2026-11-02")):
        part_id, location = i + 20 + n, f"{events}/dt={dt}"
        sd(part_id, location)
        rows["PARTITIONS"].append({"PART_ID": part_id, "CREATE_TIME": 0, "LAST_ACCESS_TIME": 0,
                                   "PART_NAME": f"dt={dt}", "SD_ID": part_id, "TBL_ID": i + 10,
                                   **({"WRITE_ID": 0} if version == 4 else {})})
        rows["PARTITION_KEY_VALS"].append({"PART_ID": part_id, "PART_KEY_VAL": dt, "INTEGER_IDX": 0})
        rows["PARTITION_PARAMS"] += [{"PART_ID": part_id, "PARAM_KEY": "path", "PARAM_VALUE": location},
                                     {"PART_ID": part_id, "PARAM_KEY": "numFiles", "PARAM_VALUE": "1"}]
    table(i + 11, "skewed", f"{sales}/skewed")
    rows["SKEWED_STRING_LIST"].append({"STRING_LIST_ID": i + 30})
    rows["SKEWED_STRING_LIST_VALUES"].append({"STRING_LIST_ID": i + 30, "STRING_LIST_VALUE": "hot",
                                              "INTEGER_IDX": 0})
    rows["SKEWED_COL_VALUE_LOC_MAP"].append({"SD_ID": i + 11, "STRING_LIST_ID_KID": i + 30,
                                             "LOCATION": f"{sales}/skewed/k=hot"})
    table(i + 12, "sibling", f"{SIBLING}/{cat}")
    rows["FUNCS"].append({"FUNC_ID": i + 40, "CLASS_NAME": "com.example.Udf", "CREATE_TIME": 0, "DB_ID": i + 1,
                          "FUNC_NAME": "udf", "FUNC_TYPE": 1, "OWNER_NAME": "hive", "OWNER_TYPE": "USER"})
    rows["FUNC_RU"] += [{"FUNC_ID": i + 40, "RESOURCE_TYPE": 1, "RESOURCE_URI": f"{root}/jars/udf.jar",
                         "INTEGER_IDX": 0},
                        {"FUNC_ID": i + 40, "RESOURCE_TYPE": 1, "RESOURCE_URI": SHARED_JAR, "INTEGER_IDX": 1}]
    return rows


def create_shape(url: str, version: int, layouts: list[CatalogLayout]) -> sa.MetaData:
    """Create the Hive `version` shape in the (empty) database at `url` and fill it with `layouts`."""
    engine = sa.create_engine(url)
    md = hms_metadata(version, engine.dialect.name)
    try:
        with engine.begin() as conn:
            md.create_all(conn)
            conn.execute(md.tables["VERSION"].insert(), [{"VER_ID": 1, "SCHEMA_VERSION": f"{version}.0.0",
                                                          "VERSION_COMMENT": "hand-written test shape"}])
            for layout in layouts:
                for name, rows in catalog_rows(layout, version).items():
                    if rows:
                        conn.execute(md.tables[name].insert(), rows)
            top = max(layout.ids for layout in layouts) + 100
            conn.execute(md.tables["SEQUENCE_TABLE"].insert(), [
                {"SEQUENCE_NAME": f"org.apache.hadoop.hive.metastore.model.{m}", "NEXT_VAL": top}
                for m in ("MDatabase", "MTable", "MStorageDescriptor", "MSerDeInfo", "MPartition", "MFunction")])
    finally:
        engine.dispose()
    return md


def dump_all(url: str, metadata: sa.MetaData) -> dict[str, list[tuple]]:
    """Every row of every table of the shape (location or not), sorted: two states compare exactly."""
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            return {name: sorted(tuple(row) for row in conn.execute(sa.select(table)))
                    for name, table in metadata.tables.items() if name != "SEQUENCE_TABLE"}
    finally:
        engine.dispose()


def expected_dump(metadata: sa.MetaData, version: int, layouts: list[CatalogLayout]) -> dict[str, list[tuple]]:
    """What dump_all returns for a database holding exactly `layouts` (as create_shape fills it)."""
    out: dict[str, list[tuple]] = {name: [] for name in metadata.tables if name != "SEQUENCE_TABLE"}
    out["VERSION"] = [(1, f"{version}.0.0", "hand-written test shape")]
    for layout in layouts:
        for name, rows in catalog_rows(layout, version).items():
            table = metadata.tables[name]
            if name not in out:
                continue
            out[name] += [tuple(row.get(c.name, _default(c)) for c in table.columns) for row in rows]
    return {name: sorted(rows) for name, rows in out.items()}


def _default(column: sa.Column):
    return column.server_default.arg if column.server_default is not None else None
