"""`hivecat demo`, the main job on its embedded default, run the way `make setup` runs it."""

from __future__ import annotations

import re
import subprocess
import sys


def test_demo_lists_the_partitions_spark_wrote(tmp_path) -> None:
    result = subprocess.run([sys.executable, "-m", "hivecat", "demo", "--workdir", str(tmp_path)],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    out = result.stdout
    assert "Spark wrote demo.sales (4 rows)" in out
    warehouse = f"file:{tmp_path}/warehouse"
    assert f"database demo  {warehouse}/demo.db" in out
    assert re.search(rf"table demo\.sales  {re.escape(warehouse)}/demo\.db/sales  partitioned by \(dt\)", out)
    partitions = re.findall(r"partition dt=(\S+)  (\S+)", out)
    assert partitions == [(d, f"{warehouse}/demo.db/sales/dt={d}") for d in ("2026-11-20", "2026-11-21", "2026-11-22")]
    # The files are really there, where the metastore says.
    assert sorted(p.name for p in (tmp_path / "warehouse/demo.db/sales").glob("dt=*")) == [
        "dt=2026-11-20", "dt=2026-11-21", "dt=2026-11-22"]
