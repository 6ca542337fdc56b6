"""The Spark client script the operator and e2e tests run through a catalog's client config: `sales.orders`
(id, v, partitioned by dt), four rows over three days, created under the directory the test passes as its
second argument, then read back and printed as `ROWS [(id, v, dt), ...]`."""

from __future__ import annotations

import textwrap

ROWS = "ROWS [(1, 'a', '2026-11-01'), (2, 'b', '2026-11-01'), (3, 'c', '2026-11-02'), (4, 'd', '2026-11-03')]"


def spark_script(create: str, database_dir: str, *, branches: str = "", before_read: str = "") -> str:
    """The script: `create` (its first argument) makes the table with its database at
    `<second argument><database_dir>`; `branches` are further `elif sys.argv[1] == ...:` cases and
    `before_read` runs before the read, both written at the script's top level."""
    return "\n".join(line for line in [
        "import sys",
        "from pyspark.sql import SparkSession",
        'spark = SparkSession.builder.master("local[1]").enableHiveSupport().getOrCreate()',
        f'if sys.argv[1] == "{create}":',
        f"""    spark.sql(f"CREATE DATABASE sales LOCATION '{{sys.argv[2]}}{database_dir}'")""",
        '    spark.sql("CREATE TABLE sales.orders (id INT, v STRING) PARTITIONED BY (dt STRING) STORED AS PARQUET")',
        """    spark.sql("INSERT INTO sales.orders PARTITION (dt) VALUES (1, 'a', '2026-11-01'), (2, 'b', '2026-11-01'),"""
        """ (3, 'c', '2026-11-02'), (4, 'd', '2026-11-03')")""",
        textwrap.dedent(branches).strip("\n"),
        textwrap.dedent(before_read).strip("\n"),
        'rows = spark.sql("SELECT id, v, dt FROM sales.orders ORDER BY id").collect()',
        'print("ROWS", [(r.id, r.v, r.dt) for r in rows])',
        "spark.stop()",
    ] if line) + "\n"
