"""A Spark session in this process (master local[N]), optionally on a Hive Metastore's catalog.

The copy engine runs its executors this way inside the operator's pod; the dev demo and the tests use
the same builder with a local metastore.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

from hivecat.jvm import JAVA_MODULE_OPTIONS

if TYPE_CHECKING:  # pyspark is imported only when a session is built: most commands never need it
    from pyspark.sql import SparkSession


def local_spark_session(metastore_uri: str, warehouse_dir: str, app_name: str = "hivecat",
                        master: str = "local[2]", extra_conf: dict[str, str] | None = None) -> "SparkSession":
    """Build (or return the running) SparkSession with Hive support pointed at `metastore_uri`.

    An empty metastore_uri leaves Hive's embedded default, which is fine for jobs (like a copy) that
    never touch the catalog.
    """
    # Driver and executors share this host: keep Spark off the pod's or laptop's external interfaces.
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
