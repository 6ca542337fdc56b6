"""Java sources of the tests (tests/java/) compiled once per machine, cached by digest beside the Maven cache."""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

from hivecat.local.java import java_executable
from support.hive_metastores import cache_root

CLASSES_CACHE = cache_root().parent / "java-classes"


def javac() -> str:
    found = Path(java_executable()).with_name("javac")
    return str(found) if found.exists() else "javac"


def compiled(source: Path, classpath: list[str]) -> Path:
    """A directory holding `source` compiled against `classpath`, cached by their digest, so a warm run
    compiles nothing."""
    digest = hashlib.sha256((source.read_text() + "\0".join(classpath)).encode()).hexdigest()[:16]
    classes = CLASSES_CACHE / f"{source.stem}-{digest}"
    if not (classes / f"{source.stem}.class").exists():
        partial = Path(f"{classes}.{os.getpid()}.partial")
        partial.mkdir(parents=True, exist_ok=True)
        subprocess.run([javac(), "-nowarn", "-d", str(partial), "-cp", os.pathsep.join(classpath), str(source)],
                       check=True, capture_output=True, timeout=120)
        try:
            os.rename(partial, classes)
        except OSError:  # another worker compiled it first
            pass
    return classes
