"""Hadoop's own tools from its jars on Maven Central (dev-only: for tests and benchmarks).

`scripts/fetch-maven.sh hadoop` puts hadoop-minicluster and hadoop-distcp (3.4.1) with their runtime
dependencies into ~/.cache/hivecat/maven/hadoop-<version>/ (seconds after the first time). Shared by
tests/support/hdfs.py (a MiniDFSCluster, DistCp into it) and benchmarks/distcp.py (DistCp as a contender).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from hivecat.jvm import JAVA_MODULE_OPTIONS

REPO = Path(__file__).resolve().parents[3]
FETCH_SCRIPT = REPO / "scripts" / "fetch-maven.sh"
DISTCP_CLASS = "org.apache.hadoop.tools.DistCp"


def hadoop_jars(version: str | None = None) -> Path:
    """The directory of Hadoop jars, fetched by scripts/fetch-maven.sh if it is not there yet."""
    args = [str(FETCH_SCRIPT), "hadoop", *([version] if version else [])]
    done = subprocess.run(args, capture_output=True, text=True, timeout=1800)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed (exit {done.returncode}):\n{done.stderr[-4000:]}")
    return Path(done.stdout.strip().splitlines()[-1])


def java_executable() -> str:
    """$JAVA_HOME/bin/java when set, else `java` on PATH (JDK 17 on the reference machine).

    Hadoop 3.4.1 runs HDFS and DistCp on JDK 17 without any --add-opens (JAVA_MODULE_OPTIONS are passed
    anyway, as to every JVM hivecat starts). It does not run on JDK 23+ (e.g. the Temurin 25 here): its
    UserGroupInformation calls Subject.getSubject, which throws "UnsupportedOperationException: getSubject is
    not supported" once the Security Manager is gone.
    """
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "java").exists():
        return str(Path(home) / "bin" / "java")
    found = shutil.which("java")
    if not found:
        raise FileNotFoundError("no java on PATH and no $JAVA_HOME: install a JDK 17 (apt-get install openjdk-17-jdk)")
    return found


def distcp_command(args: list[str], jars: Path | None = None) -> list[str]:
    """The `hadoop distcp ARGS` command line: org.apache.hadoop.tools.DistCp from the fetched jars."""
    return [java_executable(), "-Xmx768m", *JAVA_MODULE_OPTIONS, "-cp", f"{jars or hadoop_jars()}/*",
            DISTCP_CLASS, *args]


def run_distcp(args: list[str], jars: Path | None = None, cwd: Path | None = None,
               timeout: float = 600.0) -> subprocess.CompletedProcess:
    """`hadoop distcp ARGS` from the fetched jars: org.apache.hadoop.tools.DistCp on MapReduce's local runner."""
    return subprocess.run(distcp_command(args, jars), capture_output=True, text=True, cwd=cwd, timeout=timeout,
                          stdin=subprocess.DEVNULL)
