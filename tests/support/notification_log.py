"""The metastore's notification log, read as an event-driven engine reads it.

`LISTENER_CONF` makes a test metastore run Hive's DbNotificationListener as a production metastore does
(`hive.metastore.transactional.event.listeners`; the jar: hive-hcatalog-server-extensions of the same release,
fetched by scripts/fetch-hive-metastores.sh). `EventReader` runs tests/java/NotificationCheck.java, compiled
here against the metastore's own jars: it polls get_next_notification over Thrift and decodes every message
with Hive's own deserializer, so what the tests assert is what Hive's code reads, not what ours wrote.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from hivecat.local.java import java_executable
from support.hive_metastores import FETCH_SCRIPT, cache_root
from support.java_build import CLASSES_CACHE, compiled, javac

LISTENER = "org.apache.hive.hcatalog.listener.DbNotificationListener"
LISTENER_CONF = {"hive.metastore.transactional.event.listeners": LISTENER,
                 "metastore.transactional.event.listeners": LISTENER}
JAVA = Path(__file__).resolve().parents[1] / "java"
CHECK_SOURCE = JAVA / "NotificationCheck.java"
# Hive 4.0.x publishes no DbNotificationListener: the tests' 4.0.1 metastore runs this one (see its source)
STAND_IN_LISTENER = "StandInNotificationListener"
STAND_IN_CONF = {"hive.metastore.transactional.event.listeners": STAND_IN_LISTENER,
                 "metastore.transactional.event.listeners": STAND_IN_LISTENER}


@functools.cache
def listener_jar(version: str) -> str:
    """DbNotificationListener of Hive `version` (2.3.10: for the metastore of Spark's jars; 3.1.3)."""
    result = subprocess.run(["bash", str(FETCH_SCRIPT), "listeners"], capture_output=True, text=True)
    jar = cache_root() / f"hive-listener-{version}" / f"hive-hcatalog-server-extensions-{version}.jar"
    if result.returncode != 0 or not jar.exists():
        raise FileNotFoundError(f"{jar} could not be fetched:\n{(result.stdout + result.stderr)[-2000:]}")
    return str(jar)


@dataclass(frozen=True)
class Event:
    """One event as Hive's deserializer decoded it (see NotificationCheck.describe)."""

    fields: dict

    def __getitem__(self, name: str):
        return self.fields.get(name)


def stand_in_listener_jar(classpath: list[str]) -> Path:
    """StandInNotificationListener under Hive's own name (org.apache.hive.hcatalog.listener.DbNotificationListener)
    in a jar: what the stand-in of a 4.0.x image (tests/support/hive_image.py) keeps where Apache Hive's
    distribution keeps hive-hcatalog-server-extensions, so the provisioned metastore's configuration runs
    unchanged. Cached like `support.java_build.compiled`."""
    source = (JAVA / f"{STAND_IN_LISTENER}.java").read_text()
    renamed = "package org.apache.hive.hcatalog.listener;\n" + source.replace(STAND_IN_LISTENER, "DbNotificationListener")
    digest = hashlib.sha256((renamed + "\0".join(classpath)).encode()).hexdigest()[:16]
    jar = CLASSES_CACHE / f"stand-in-listener-{digest}.jar"
    if jar.exists():
        return jar
    work = Path(f"{jar}.{os.getpid()}.partial")
    target = work / "src" / "org" / "apache" / "hive" / "hcatalog" / "listener" / "DbNotificationListener.java"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(renamed)
    subprocess.run([javac(), "-nowarn", "-d", str(work / "classes"), "-cp", os.pathsep.join(classpath), str(target)],
                   check=True, capture_output=True, timeout=120)
    subprocess.run([str(Path(javac()).with_name("jar")), "cf", f"{jar}.{os.getpid()}", "-C", str(work / "classes"), "."],
                   check=True, capture_output=True, timeout=120)
    os.replace(f"{jar}.{os.getpid()}", jar)
    return jar


class EventReader:
    """NotificationCheck, compiled against the metastore's own jars."""

    def __init__(self, classpath: list[str]) -> None:
        self.classpath = classpath
        self.classes = compiled(CHECK_SOURCE, classpath)

    def read(self, port: int, after: int = 0) -> tuple[list[Event], int]:
        """The events after id `after`, decoded, and the metastore's current event id."""
        result = subprocess.run([java_executable(), "-Xmx256m", "-cp",
                                 os.pathsep.join([str(self.classes), *self.classpath]),
                                 "NotificationCheck", "127.0.0.1", str(port), str(after)],
                                capture_output=True, text=True, timeout=120)
        if result.returncode != 0:
            raise RuntimeError(f"NotificationCheck failed ({result.returncode}):\n{result.stderr[-3000:]}")
        lines = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
        return [Event(line) for line in lines[:-1]], int(lines[-1]["current"])
