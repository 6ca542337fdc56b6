"""Hive 2.3's transaction tables, for metastores whose schema DataNucleus created (autoCreateAll).

schematool creates these; DataNucleus does not, yet HMS 2.3 always runs an ACID listener that deletes
from them on every DROP. Defined with SQLAlchemy Core so one definition renders for MySQL/MariaDB
(upper-case names, as HMS queries them) and PostgreSQL (unquoted, so folded to lower case, which is
how TxnHandler's unquoted SQL finds them there).
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy import BigInteger as Big, Integer, LargeBinary, String

from hivecat.catalog.engines import sql_engine

# (table, [(column, type, nullable)], primary key columns, counter seeded with 1)
_KEYS = (128, 767)  # identifier and partition-name lengths HMS uses
_TABLES: list[tuple[str, list[tuple[str, sa.types.TypeEngine, bool]], tuple[str, ...], bool]] = [
    ("TXNS", [("TXN_ID", Big(), False), ("TXN_STATE", String(1), False), ("TXN_STARTED", Big(), False),
              ("TXN_LAST_HEARTBEAT", Big(), False), ("TXN_USER", String(128), False),
              ("TXN_HOST", String(128), False), ("TXN_AGENT_INFO", String(128), True),
              ("TXN_META_INFO", String(128), True), ("TXN_HEARTBEAT_COUNT", Integer(), True)], ("TXN_ID",), False),
    ("TXN_COMPONENTS", [("TC_TXNID", Big(), False), ("TC_DATABASE", String(128), False),
                        ("TC_TABLE", String(128), False), ("TC_PARTITION", String(767), True),
                        ("TC_OPERATION_TYPE", String(1), False)], (), False),
    ("COMPLETED_TXN_COMPONENTS", [("CTC_TXNID", Big(), False), ("CTC_DATABASE", String(128), False),
                                  ("CTC_TABLE", String(256), True), ("CTC_PARTITION", String(767), True)], (), False),
    ("NEXT_TXN_ID", [("NTXN_NEXT", Big(), False)], (), True),
    ("HIVE_LOCKS", [("HL_LOCK_EXT_ID", Big(), False), ("HL_LOCK_INT_ID", Big(), False), ("HL_TXNID", Big(), True),
                    ("HL_DB", String(128), False), ("HL_TABLE", String(128), True),
                    ("HL_PARTITION", String(767), True), ("HL_LOCK_STATE", String(1), False),
                    ("HL_LOCK_TYPE", String(1), False), ("HL_LAST_HEARTBEAT", Big(), False),
                    ("HL_ACQUIRED_AT", Big(), True), ("HL_USER", String(128), False),
                    ("HL_HOST", String(128), False), ("HL_HEARTBEAT_COUNT", Integer(), True),
                    ("HL_AGENT_INFO", String(128), True), ("HL_BLOCKEDBY_EXT_ID", Big(), True),
                    ("HL_BLOCKEDBY_INT_ID", Big(), True)], ("HL_LOCK_EXT_ID", "HL_LOCK_INT_ID"), False),
    ("NEXT_LOCK_ID", [("NL_NEXT", Big(), False)], (), True),
    *(
        (table, [(f"{p}_ID", Big(), False), (f"{p}_DATABASE", String(128), False), (f"{p}_TABLE", String(128), False),
                 (f"{p}_PARTITION", String(767), True), (f"{p}_STATE", String(1), False),
                 (f"{p}_TYPE", String(1), False), (f"{p}_TBLPROPERTIES", String(2048), True),
                 (f"{p}_WORKER_ID", String(128), True), (f"{p}_START", Big(), True),
                 *([(f"{p}_END", Big(), True)] if p == "CC" else []),
                 (f"{p}_RUN_AS", String(128), True), (f"{p}_HIGHEST_TXN_ID", Big(), True),
                 (f"{p}_META_INFO", LargeBinary(2048), True), (f"{p}_HADOOP_JOB_ID", String(32), True)],
         (f"{p}_ID",), False)
        for table, p in (("COMPACTION_QUEUE", "CQ"), ("COMPLETED_COMPACTIONS", "CC"))
    ),
    ("NEXT_COMPACTION_QUEUE_ID", [("NCQ_NEXT", Big(), False)], (), True),
    ("AUX_TABLE", [("MT_KEY1", String(128), False), ("MT_KEY2", Big(), False), ("MT_COMMENT", String(255), True)],
     ("MT_KEY1", "MT_KEY2"), False),
    ("WRITE_SET", [("WS_DATABASE", String(128), False), ("WS_TABLE", String(128), False),
                   ("WS_PARTITION", String(767), True), ("WS_TXNID", Big(), False), ("WS_COMMIT_ID", Big(), False),
                   ("WS_OPERATION_TYPE", String(1), False)], (), False),
]


def _metadata(dialect: str) -> tuple[sa.MetaData, list[sa.Table]]:
    case = str.lower if dialect == "postgresql" else str
    metadata = sa.MetaData()
    counters = []
    for name, columns, key, counter in _TABLES:
        table = sa.Table(
            case(name), metadata,
            *(sa.Column(case(col), type_, nullable=nullable, primary_key=col in key, autoincrement=False)
              for col, type_, nullable in columns),
        )
        if counter:
            counters.append(table)
    return metadata, counters


def create_transaction_tables(url: str) -> bool:
    """Create the missing tables and seed their id counters; True when anything was created."""
    engine = sql_engine(url)
    try:
        metadata, counters = _metadata(engine.dialect.name)
        with engine.begin() as conn:
            existing = set(sa.inspect(conn).get_table_names())
            missing = [t for t in metadata.sorted_tables if t.name not in existing]
            metadata.create_all(conn, tables=missing)
            for table in counters:
                if table in missing:
                    conn.execute(table.insert().values({table.c[0].name: 1}))
        return bool(missing)
    finally:
        engine.dispose()
