"""A pytest plugin (pyproject's addopts load it in every tier): the JVMs the tests start run on HotSpot's
client compiler only, with the serial collector, and without verifying the bytecode of the jars they load.

Every JVM here lives seconds to minutes on a few rows (HMS, MiniDFS, Spark, schematool, DistCp): most of its CPU
went to C2 compiling code that then hardly ran. `-XX:TieredStopAtLevel=1` halved an HMS start's CPU (6.8 -> 3.3
CPU-s) and cut a Spark session's by 40% (20.7 -> 12.4); on this 2-CPU machine `make test` is CPU-bound, so that
is wall time. The serial collector (G1 keeps threads and barriers busy for heaps these JVMs never grow) and no
verification of classes from jars (Maven Central's and pyspark's, all javac's; the JDK's own are never verified)
took a Spark session that creates, fills and counts a table from 14.3 to 11.9 CPU-s (five runs of each,
interleaved). What the JVMs do is unchanged; the product's own JVM settings (charts, images) are not touched.
Each JVM notes the variable on stderr ("Picked up JAVA_TOOL_OPTIONS"). A value already in the environment
wins (set JAVA_TOOL_OPTIONS= to run the tests with the default compilers).
"""

from __future__ import annotations

import os

JAVA_TOOL_OPTIONS = ("-XX:TieredStopAtLevel=1 -XX:+UseSerialGC "
                     "-XX:+UnlockDiagnosticVMOptions -XX:-BytecodeVerificationRemote")


def pytest_configure(config) -> None:
    os.environ.setdefault("JAVA_TOOL_OPTIONS", JAVA_TOOL_OPTIONS)


def passed_on() -> dict[str, str]:
    """The setting, for a process the tests start with an environment of its own (a container's, played here)."""
    value = os.environ.get("JAVA_TOOL_OPTIONS")
    return {"JAVA_TOOL_OPTIONS": value} if value else {}
