"""Running Hive's own Java classes from the jars that ship inside the pyspark wheel."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from hivecat.jvm import JAVA_MODULE_OPTIONS


def spark_jars_dir() -> Path:
    """The jars directory of SPARK_HOME, or of the installed pyspark wheel."""
    home = os.environ.get("SPARK_HOME")
    candidates = [Path(home) / "jars"] if home else []
    import pyspark  # imported late: only callers that run Java need it

    candidates.append(Path(pyspark.__file__).parent / "jars")
    for jars in candidates:
        if any(jars.glob("hive-metastore-*.jar")):
            return jars
    raise FileNotFoundError(f"no hive-metastore jar in {', '.join(map(str, candidates))}")


def java_executable() -> str:
    home = os.environ.get("JAVA_HOME")
    java = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    if not java or not Path(java).exists():
        raise FileNotFoundError("java not found: install JDK 17 (make setup does) or set JAVA_HOME")
    return java


def hive_classpath(conf_dir: Path, extra_jars: list[str]) -> str:
    """conf_dir first, so its hive-site.xml and log4j2 settings win over defaults inside the jars."""
    return os.pathsep.join([str(conf_dir), str(spark_jars_dir() / "*"), *extra_jars])


def java_command(main_class: str, args: list[str], conf_dir: Path, extra_jars: list[str],
                 heap: str = "1g", system_properties: dict[str, str] | None = None) -> list[str]:
    props = [f"-D{key}={value}" for key, value in (system_properties or {}).items()]
    return [java_executable(), f"-Xmx{heap}", *JAVA_MODULE_OPTIONS, *props,
            "-cp", hive_classpath(conf_dir, extra_jars), main_class, *args]
