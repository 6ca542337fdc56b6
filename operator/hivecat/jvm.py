"""JVM options every Java process hivecat starts needs (Spark's driver and executors, Hive's tools)."""

from __future__ import annotations

from typing import Final

# The module openings Spark's launcher passes on Java 17+; Hive 2.3 and DataNucleus need the same.
JAVA_MODULE_OPTIONS: Final[tuple[str, ...]] = (
    "-XX:+IgnoreUnrecognizedVMOptions",
    *(
        f"--add-opens=java.base/{pkg}=ALL-UNNAMED"
        for pkg in (
            "java.lang", "java.lang.invoke", "java.lang.reflect", "java.io", "java.net", "java.nio",
            "java.util", "java.util.concurrent", "java.util.concurrent.atomic", "jdk.internal.ref",
            "sun.nio.ch", "sun.nio.cs", "sun.security.action", "sun.util.calendar",
        )
    ),
    "-Djdk.reflect.useDirectMethodHandle=false",
)
