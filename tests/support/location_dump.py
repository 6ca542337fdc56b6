"""A full dump of every location column and parameter of an HMS database, to compare states exactly.

Written independently of hivecat's own schema code, so a bug there cannot hide in the comparison. Every
parameter but transient_lastDdlTime: a rewrite bumps it on what it changed, as an alter through the metastore
does (and its undo bumps it again), so it says when, not where.
"""

from __future__ import annotations

import sqlalchemy as sa

# table -> columns that identify a row and hold values (all of them are compared)
DUMPED = {
    "DBS": None, "SDS": ("SD_ID", "LOCATION"), "SERDE_PARAMS": None, "TABLE_PARAMS": None,
    "PARTITION_PARAMS": None, "SKEWED_COL_VALUE_LOC_MAP": None, "FUNC_RU": None, "CTLGS": None,
    "DATABASE_PARAMS": None,
}


def dump_locations(url: str, schema: str | None = None) -> dict[str, list[tuple]]:
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            existing = {n.upper(): n for n in sa.inspect(conn).get_table_names(schema=schema)}
            metadata = sa.MetaData(schema=schema)
            dump = {}
            for name, columns in DUMPED.items():
                if name not in existing:
                    continue
                table = sa.Table(existing[name], metadata, autoload_with=conn)
                cols = [table.c[c] for c in columns] if columns else list(table.c)
                select = sa.select(*cols)
                if "PARAM_KEY" in table.c:
                    select = select.where(table.c.PARAM_KEY != "transient_lastDdlTime")
                rows = conn.execute(select).all()
                dump[name] = sorted((tuple("" if v is None else str(v) for v in r) for r in rows))
            return dump
    finally:
        engine.dispose()
