"""A Hive 3.1-shaped metastore on PostgreSQL with one table of N partitions, for the PostgreSQL figure.

No HMS release runs its schema here in a benchmark's time, so the shape is the one tests/support/hms_shapes.py
writes (proved column by column against schematool's PostgreSQL schema by the integration tier), filled with
one catalog under OLD_ROOT; the table `sales.events` then gets N partitions by set-based INSERTs
(generate_series), each with its storage descriptor, SerDe, key value and the three parameters HMS writes
(numFiles, totalSize, transient_lastDdlTime), as hms_rows does on MariaDB.
"""

from __future__ import annotations

import sys
from pathlib import Path

import sqlalchemy as sa

from relocate_support.contenders import anchored_like
from relocate_support.hms_rows import OLD_ROOT

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))
from support.hms_shapes import CatalogLayout, create_shape  # noqa: E402  (the tests' shape, reused)

LAYOUT = CatalogLayout("hive", 1000, OLD_ROOT, "hdfs://fixed-nn:8020/warehouse")
EVENTS = LAYOUT.ids + 10  # TBL_ID of sales.events in catalog_rows
FIRST = 1_000_000         # partition ids, storage descriptor ids and SerDe ids from here on


def build(url: str, partitions: int) -> None:
    create_shape(url, 3, [LAYOUT])
    location = f"'{OLD_ROOT}/sales.db/events/n=' || n"
    statements = [
        f'INSERT INTO "SERDES" ("SERDE_ID", "NAME", "SLIB") SELECT {FIRST} + n, NULL, '
        "'org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe' FROM generate_series(1, :n) n",
        f'INSERT INTO "SERDE_PARAMS" ("SERDE_ID", "PARAM_KEY", "PARAM_VALUE") SELECT {FIRST} + n, '
        "'serialization.format', '1' FROM generate_series(1, :n) n",
        f'INSERT INTO "SDS" ("SD_ID", "CD_ID", "INPUT_FORMAT", "IS_COMPRESSED", "IS_STOREDASSUBDIRECTORIES", '
        f'"LOCATION", "NUM_BUCKETS", "OUTPUT_FORMAT", "SERDE_ID") SELECT {FIRST} + n, NULL, \'parquet-in\', false, '
        f"false, {location}, -1, 'parquet-out', {FIRST} + n FROM generate_series(1, :n) n",
        f'INSERT INTO "PARTITIONS" ("PART_ID", "CREATE_TIME", "LAST_ACCESS_TIME", "PART_NAME", "SD_ID", "TBL_ID") '
        f"SELECT {FIRST} + n, 0, 0, 'n=' || n, {FIRST} + n, {EVENTS} FROM generate_series(1, :n) n",
        f'INSERT INTO "PARTITION_KEY_VALS" ("PART_ID", "PART_KEY_VAL", "INTEGER_IDX") SELECT {FIRST} + n, '
        "n::text, 0 FROM generate_series(1, :n) n",
        f'INSERT INTO "PARTITION_PARAMS" ("PART_ID", "PARAM_KEY", "PARAM_VALUE") SELECT {FIRST} + n, k, v '
        "FROM generate_series(1, :n) n, (VALUES ('numFiles', '1'), ('totalSize', '4096'), "
        "('transient_lastDdlTime', '1795713755')) AS p(k, v)",
    ]
    engine = sa.create_engine(url)
    try:
        with engine.begin() as conn:
            for statement in statements:
                conn.execute(sa.text(statement), {"n": partitions})
        with engine.connect() as conn:
            conn.execution_options(isolation_level="AUTOCOMMIT").execute(sa.text("VACUUM ANALYZE"))
    finally:
        engine.dispose()


def count_under(url: str, root: str) -> int:
    """Storage descriptors under `root`."""
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            return conn.execute(sa.text('SELECT count(*) FROM "SDS" WHERE "LOCATION" COLLATE "C" LIKE :under'),
                                {"under": anchored_like(root)}).scalar_one()
    finally:
        engine.dispose()
