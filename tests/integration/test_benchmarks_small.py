"""Each benchmark runs in --small mode and ends with one JSON object (its figures), as `make bench` expects.

Speed is never asserted here: only that the script works and its output has the documented shape.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = [pytest.param(p, id=p.stem) for p in sorted((Path(__file__).parents[2] / "benchmarks").glob("*.py"))]
if not BENCHMARKS:
    BENCHMARKS = [pytest.param(None, marks=pytest.mark.skip(reason="benchmarks/ holds no benchmark script yet"))]


@pytest.mark.parametrize("script", BENCHMARKS)
def test_benchmark_small_mode_prints_json_last(script: Path, mariadb_server: str, postgres_server: str) -> None:
    """The database servers some benchmarks use (HIVECAT_TEST_MYSQL_URL, ..._PG_URL by default) are running."""
    result = subprocess.run([sys.executable, str(script), "--small"], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    figures = json.loads(result.stdout.strip().splitlines()[-1])
    assert isinstance(figures, dict) and figures
    assert all(isinstance(v, (int, float, str)) for v in figures.values())
