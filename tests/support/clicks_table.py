"""The `sales.clicks` table of the operator's replica tests: one Parquet file of two random-hex rows per day
partition, and the Spark SQL that reads every row back (its expected line)."""

from __future__ import annotations

import os
import textwrap
from collections.abc import Sequence
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from hivecat.catalog.targets import ThriftSasl
from hivecat.catalog.thrift.transport import metastore_client

READ = textwrap.dedent("""
    from pyspark.sql import SparkSession
    spark = SparkSession.builder.master("local[1]").enableHiveSupport().getOrCreate()
    rows = spark.sql("SELECT dt, count(*) AS n, sum(length(v)) AS chars FROM sales.clicks GROUP BY dt ORDER BY dt")
    print("ROWS", [(r.dt, r.n, r.chars) for r in rows.collect()])
    spark.stop()
""")


def write_table(table_dir: Path, days: Sequence[str], row_chars: int) -> None:
    """Hex of random bytes: Parquet barely compresses it, so a partition is about 2 * row_chars bytes on disk."""
    for day in days:
        part = table_dir / f"dt={day}"
        part.mkdir(parents=True)
        values = [os.urandom(row_chars // 2).hex() for _ in range(2)]
        pq.write_table(pa.table({"v": pa.array(values, pa.string())}), part / "part-00000.parquet")


def register(port: int, database_dir: Path, table_dir: Path, days: Sequence[str], sasl: ThriftSasl | None = None
             ) -> None:
    """Database `sales` and table `clicks` (one partition per day) in the metastore at 127.0.0.1:`port` (kerberized,
    `sasl`: localhost:`port`), over Thrift, as a loader would add them."""
    from hmsclient.genthrift.hive_metastore.ttypes import Database, FieldSchema, Partition
    from support.hms_tables import hive_table, storage_descriptor

    with metastore_client("localhost" if sasl else "127.0.0.1", port, sasl) as client:
        client.create_database(Database("sales", "", f"file://{database_dir}", {}))
        client.create_table(hive_table("sales", "clicks", f"file://{table_dir}", keys=[FieldSchema("dt", "string", "")]))
        client.add_partitions([Partition(values=[day], dbName="sales", tableName="clicks", parameters={},
                                         sd=storage_descriptor(f"file://{table_dir}/dt={day}")) for day in days])


def expected(days: Sequence[str], row_chars: int) -> str:
    """The line READ prints when every row of every day is read."""
    return "ROWS " + str([(day, 2, 2 * row_chars) for day in days])
