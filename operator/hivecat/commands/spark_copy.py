"""The main application of a copy SparkApplication (workloads/spark_application.py): `hivecat distcp` with the
Spark engine, on the application's own SparkSession, so the copies run on its executors.

Runs as a file (spark-submit takes a Python application as a file: the image links this module's file to
/opt/hivecat/spark_copy.py, see workloads/spark_application.py) or as `python -m hivecat.commands.spark_copy`.
Arguments are distcp's; `--engine spark` is added when none is given. The exit code is distcp's (0 done,
1 some unit failed, 2 bad input), so the driver, and with it the SparkApplication, fails when the copy does.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

APP_NAME = "hivecat-distcp"


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not any(arg == "--engine" or arg.startswith("--engine=") for arg in args):
        args += ["--engine", "spark"]
    from pyspark.sql import SparkSession

    from hivecat.commands.distcp import main as distcp_main

    # The session spark-submit configured (master, executors); the Spark engine finds it as the active one.
    session = SparkSession.builder.appName(APP_NAME).getOrCreate()
    try:
        return distcp_main(args)
    finally:
        session.stop()  # executors go now, not when the driver's JVM notices its Python is gone


if __name__ == "__main__":
    sys.exit(main())
