"""The spark engine (executors copy with pyarrow streams) gives the same results and manifests as the
local engine: identical but for the run id and timestamps."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from support.copy_trees import read_manifest, read_tree, uri, without_run_fields, write_tree

from hivecat.copy import Copier, CopyOptions, LocalEngine, SparkEngine
from hivecat.copy.plan import plan_from_document

TABLE = {f"dt={d}/part-{i}.parquet": os.urandom(1000 * (i + 1)) for d in ("2026-01-01", "2026-01-02")
         for i in range(5)}


def units_tree(target: Path) -> dict[str, bytes]:
    """The data files of every unit below target, without the units' manifests."""
    return {f"{unit.name}/{path}": data for unit in target.iterdir() for path, data in read_tree(unit).items()}


def plan(source: Path, target: Path):
    return plan_from_document({"version": 1, "units": [
        {"id": f"db.t/{p.name}", "source": uri(p), "target": uri(target / p.name)}
        for p in sorted(source.iterdir())]})


@pytest.mark.parametrize("verify", ["size", "checksum"])
def test_spark_and_local_engines_give_identical_copies_and_manifests(spark, tmp_path: Path, verify: str) -> None:
    source = write_tree(tmp_path / "src", TABLE)
    options = CopyOptions(verify=verify, parallelism=2)
    by_engine = {}
    for engine in (LocalEngine(2), SparkEngine(spark, parallelism=2)):
        target = tmp_path / engine.name
        summary = Copier(plan(source, target), options, engine=engine).run().to_dict()
        assert summary["engine"] == engine.name and summary["status"] == "succeeded"
        assert units_tree(target) == TABLE
        by_engine[engine.name] = (
            {k: v for k, v in summary["totals"].items()},
            {unit.name: without_run_fields(read_manifest(unit)) for unit in sorted(target.iterdir())})
    assert by_engine["spark"] == by_engine["local"]
    assert by_engine["spark"][0]["files_copied"] == 10


def test_spark_rerun_copies_only_the_changed_file(spark, tmp_path: Path) -> None:
    source = write_tree(tmp_path / "src", TABLE)
    engine = SparkEngine(spark, parallelism=2)
    Copier(plan(source, tmp_path / "dst"), engine=engine).run()
    (source / "dt=2026-01-02" / "part-0.parquet").write_bytes(b"changed")
    summary = Copier(plan(source, tmp_path / "dst"), engine=engine).run().to_dict()
    assert [u["status"] for u in summary["units"]] == ["skipped", "done"]
    assert summary["totals"]["files_copied"] == 1 and summary["totals"]["files_skipped"] == 9
    assert units_tree(tmp_path / "dst") == {**TABLE, "dt=2026-01-02/part-0.parquet": b"changed"}
