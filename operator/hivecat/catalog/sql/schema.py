"""Which HMS schema this database holds: detected from its tables and columns, never assumed.

Hive 2.3 (what the HMS in our tests creates), Hive 3 (CTLGS, DBS.CTLG_NAME) and Hive 4
(DBS.DB_MANAGED_LOCATION_URI) differ in the tables and columns that hold locations. PostgreSQL HMS
schemas use quoted upper-case identifiers, as MySQL's do; SQLAlchemy quotes them for us.
"""

from __future__ import annotations

from dataclasses import dataclass

import sqlalchemy as sa

# Tables relocation reads or writes, with the columns it needs (optional ones are detected).
REQUIRED: dict[str, tuple[str, ...]] = {
    "DBS": ("DB_ID", "NAME", "DB_LOCATION_URI"),
    "TBLS": ("TBL_ID", "DB_ID", "SD_ID", "TBL_NAME", "TBL_TYPE"),
    "SDS": ("SD_ID", "SERDE_ID", "LOCATION"),
    "PARTITIONS": ("PART_ID", "TBL_ID", "SD_ID", "PART_NAME"),
    "PARTITION_KEYS": ("TBL_ID", "PKEY_NAME", "PKEY_TYPE", "INTEGER_IDX"),
    "PARTITION_KEY_VALS": ("PART_ID", "PART_KEY_VAL", "INTEGER_IDX"),
    "SERDE_PARAMS": ("SERDE_ID", "PARAM_KEY", "PARAM_VALUE"),
    "TABLE_PARAMS": ("TBL_ID", "PARAM_KEY", "PARAM_VALUE"),
    "PARTITION_PARAMS": ("PART_ID", "PARAM_KEY", "PARAM_VALUE"),
}
OPTIONAL: dict[str, tuple[str, ...]] = {
    "SKEWED_COL_VALUE_LOC_MAP": ("SD_ID", "STRING_LIST_ID_KID", "LOCATION"),
    "FUNCS": ("FUNC_ID", "DB_ID", "FUNC_NAME"),
    "FUNC_RU": ("FUNC_ID", "RESOURCE_URI", "INTEGER_IDX"),
    "CTLGS": ("CTLG_ID", "NAME", "LOCATION_URI"),
    # The notification log, for events of direct rewrites (notifications.py)
    "NOTIFICATION_LOG": ("NL_ID", "EVENT_ID", "EVENT_TIME", "EVENT_TYPE", "DB_NAME", "TBL_NAME", "MESSAGE"),
    "NOTIFICATION_SEQUENCE": ("NNI_ID", "NEXT_EVENT_ID"),
    "SEQUENCE_TABLE": ("SEQUENCE_NAME", "NEXT_VAL"),
}


class NotAMetastore(ValueError):
    """The database lacks tables or columns every HMS schema has."""


@dataclass(frozen=True)
class HmsSchema:
    tables: dict[str, sa.Table]
    has_catalogs: bool          # Hive 3+: CTLGS and DBS.CTLG_NAME
    has_managed_location: bool  # Hive 4: DBS.DB_MANAGED_LOCATION_URI
    version: str | None         # VERSION.SCHEMA_VERSION when present

    def __getitem__(self, name: str) -> sa.Table:
        return self.tables[name]

    def has(self, name: str) -> bool:
        return name in self.tables


def detect_schema(conn: sa.Connection, schema: str | None = None) -> HmsSchema:
    inspector = sa.inspect(conn)
    existing = {name.upper(): name for name in inspector.get_table_names(schema=schema)}
    metadata = sa.MetaData(schema=schema)
    tables: dict[str, sa.Table] = {}
    missing: list[str] = []
    wanted = {**REQUIRED, **OPTIONAL, "VERSION": ("SCHEMA_VERSION",)}
    for table_name, needed in wanted.items():
        actual = existing.get(table_name)
        if actual is None:
            if table_name in REQUIRED:
                missing.append(table_name)
            continue
        columns = {c["name"].upper(): c for c in inspector.get_columns(actual, schema=schema)}
        absent = [c for c in needed if c not in columns]
        if absent:
            if table_name in REQUIRED:
                missing.append(f"{table_name}.{','.join(absent)}")
            continue
        # Only the columns we use, with their real types, so SQL renders with correct quoting.
        tables[table_name] = sa.Table(actual, metadata, *(sa.Column(c["name"], c["type"]) for c in columns.values()))
    if missing:
        raise NotAMetastore(f"not a Hive metastore schema: missing {', '.join(missing)}")
    dbs_columns = {c.name.upper() for c in tables["DBS"].columns}
    version = None
    if "VERSION" in tables:
        version = conn.execute(sa.select(tables["VERSION"].c.SCHEMA_VERSION).limit(1)).scalar()
    return HmsSchema(tables, "CTLGS" in tables and "CTLG_NAME" in dbs_columns,
                     "DB_MANAGED_LOCATION_URI" in dbs_columns, version)
