"""The operator's collector settings (hivecat/collector.py), applied in a process of their own: freezing and the
thresholds would change the test process's collector for every later test."""

from __future__ import annotations

import json
import subprocess
import sys

PROBE = """
import gc, json
from hivecat import collector
before = gc.get_freeze_count()
collector.settle_after_start()
print(json.dumps({"before": before, "frozen": gc.get_freeze_count(), "threshold": gc.get_threshold(),
                  "young": [collector.YOUNG, collector.MIDDLE, collector.OLD]}))
"""


def test_what_starting_loaded_is_frozen_and_collections_are_rarer() -> None:
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, check=True, timeout=60)
    found = json.loads(done.stdout)
    assert found["before"] == 0 and found["frozen"] > 1000  # modules, classes, functions: out of reach
    assert found["threshold"] == found["young"] and found["young"][0] > 700  # CPython's default young threshold
