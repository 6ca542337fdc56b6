"""A local Spark session whose catalog is a (real, remote) Hive Metastore."""

from __future__ import annotations

import os
import sys

from hivecat.local.java import JAVA_MODULE_OPTIONS


def local_spark_session(metastore_uri: str, warehouse_dir: str, app_name: str = "hivecat",
                        master: str = "local[2]", extra_conf: dict[str, str] | None = None):
    """Build (or return the running) SparkSession with Hive support pointed at `metastore_uri`."""
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    # Executors must run the same interpreter as the driver (the venv's), not whatever is on PATH.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    java_opts = " ".join(JAVA_MODULE_OPTIONS)
    builder = (
        SparkSession.builder.master(master)
        .appName(app_name)
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.warehouse.dir", warehouse_dir)
        .config("spark.sql.catalogImplementation", "hive")
        .config("spark.hadoop.hive.metastore.uris", metastore_uri)
        .config("spark.driver.extraJavaOptions", java_opts)
        .config("spark.executor.extraJavaOptions", java_opts)
    )
    for key, value in (extra_conf or {}).items():
        builder = builder.config(key, value)
    return builder.enableHiveSupport().getOrCreate()
