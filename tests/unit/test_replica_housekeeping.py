"""Housekeeping of copies whose unit is gone from the table, through the sync pass on local directories: a
dropped partition's copies are marked, kept for spec.housekeeping.delay, then removed; copies somebody wrote
into, copies of units still in the table (in scope or not), other tables' copies and directories without
hivecat's manifest are never removed."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from hivecat.copy.manifest import MANIFEST_NAME
from hivecat.replication.housekeeping import MARK_NAME
from hivecat.specs.errors import SpecInvalid
from support.replica_lake import NOW, InProcess, add_partition, lake, replica, run  # noqa: F401

DAY = "2026-11-02"


def copies(roots, day: str = DAY):
    return [roots[name] / "sales.db" / "events" / f"dt={day}" for name in ("dr1", "dr2")]


def secondaries(out) -> list[dict]:
    return [r for r in out.status["replicas"] if r["role"] == "Secondary"]


def test_a_dropped_partitions_copies_are_marked_kept_for_the_delay_then_removed(lake) -> None:
    roots, clusters, catalog, table_dir = lake
    run(replica(), catalog, clusters, InProcess())
    del catalog.partitions[(DAY,)]  # DROP PARTITION on main (an external table: its directory stays there)
    out = run(replica(), catalog, clusters, InProcess(), "r2")
    for copy in copies(roots):
        mark = json.loads((copy / MARK_NAME).read_text())
        assert mark["since"] == "2026-11-25T12:00:00Z" and mark["unit"] == f"sales.events/dt={DAY}"
        assert (copy / "part-0.parquet").exists() and (copy / MANIFEST_NAME).exists()
    assert [(r["unitsDropped"], r["unitsRemoved"]) for r in secondaries(out)] == [(1, 0), (1, 0)]
    assert "1 copies of gone units marked for removal" in out.events[0][2]
    assert {c.type: c.status for c in out.conditions}["Degraded"] == "False"

    out = run(replica(), catalog, clusters, InProcess(), "r3", now=NOW + timedelta(hours=71))
    assert all(copy.exists() for copy in copies(roots))
    assert [(r["unitsDropped"], r["unitsRemoved"]) for r in secondaries(out)] == [(1, 0), (1, 0)]

    out = run(replica(), catalog, clusters, InProcess(), "r4", now=NOW + timedelta(hours=72))
    assert not any(copy.exists() for copy in copies(roots))
    assert [(r["unitsDropped"], r["unitsRemoved"]) for r in secondaries(out)] == [(0, 1), (0, 1)]
    assert "1 removed after the delay" in out.events[0][2]
    assert (table_dir / f"dt={DAY}" / "part-0.parquet").exists()  # the primary's data is never touched
    for name in ("dr1", "dr2"):  # the units still in the table keep their copies
        left = sorted(p.name for p in (roots[name] / "sales.db" / "events").iterdir())
        assert left == ["dt=2026-11-01", "dt=2026-11-03"]


def test_the_delay_is_the_specs(lake) -> None:
    roots, clusters, catalog, _ = lake
    run(replica(), catalog, clusters, InProcess())
    del catalog.partitions[(DAY,)]
    spec = replica(housekeeping={"delay": "90s"})
    run(spec, catalog, clusters, InProcess(), "r2")
    run(spec, catalog, clusters, InProcess(), "r3", now=NOW + timedelta(seconds=89))
    assert all(copy.exists() for copy in copies(roots))
    run(spec, catalog, clusters, InProcess(), "r4", now=NOW + timedelta(seconds=90))
    assert not any(copy.exists() for copy in copies(roots))


def test_a_copy_written_to_after_hivecat_made_it_is_kept_and_named(lake) -> None:
    roots, clusters, catalog, _ = lake
    run(replica(), catalog, clusters, InProcess())
    del catalog.partitions[(DAY,)]
    (copies(roots)[0] / "theirs.csv").write_text("written on dr1 by somebody")
    out = run(replica(), catalog, clusters, InProcess(), "r2", now=NOW + timedelta(days=30))
    out = run(replica(), catalog, clusters, InProcess(), "r3", now=NOW + timedelta(days=60))
    dr1, dr2 = copies(roots)
    assert (dr1 / "theirs.csv").exists() and (dr1 / "part-0.parquet").exists() and not (dr1 / MARK_NAME).exists()
    assert not dr2.exists()  # the untouched copy on dr2 went after the delay
    degraded = next(c for c in out.conditions if c.type == "Degraded")
    assert degraded.status == "True"
    assert f"dr1: 1 copies of units gone from the table are kept: file://{dr1}: the copy of sales.events/dt={DAY}" \
        in degraded.message and "was written to after hivecat copied it" in degraded.message


def test_copies_of_units_out_of_scope_other_tables_and_foreign_directories_stay(lake) -> None:
    roots, clusters, catalog, _ = lake
    run(replica(), catalog, clusters, InProcess())
    # another table's copy below this table's directory on dr1, and somebody's directory without a manifest
    other = roots["dr1"] / "sales.db" / "events" / "archive"
    other.mkdir()
    (other / "x.parquet").write_text("x")
    (other / MANIFEST_NAME).write_text(json.dumps({"version": 1, "unit_id": "sales.other/dt=1", "source": "file:///a",
                                                   "run_id": "r0", "committed_at": "2026-11-01T00:00:00Z",
                                                   "files": []}))
    foreign = roots["dr1"] / "sales.db" / "events" / "dt=2026-10-01"
    foreign.mkdir()
    (foreign / "f.csv").write_text("not hivecat's")
    narrowed = replica(partitions={"mostRecent": 1})  # 11-01 and 11-02 leave the scope but stay in the table
    later = NOW + timedelta(days=10)
    for run_id in ("r2", "r3"):
        out = run(narrowed, catalog, clusters, InProcess(), run_id, now=later)
    for day in ("2026-11-01", DAY):
        assert all(copy.exists() and not (copy / MARK_NAME).exists() for copy in copies(roots, day))
    assert (other / "x.parquet").exists() and (foreign / "f.csv").exists() and not (other / MARK_NAME).exists()
    assert [r["unitsDropped"] for r in secondaries(out)] == [0, 0]


def test_a_unit_that_comes_back_before_the_removal_is_copied_again_and_loses_its_mark(lake) -> None:
    roots, clusters, catalog, table_dir = lake
    run(replica(), catalog, clusters, InProcess())
    dropped = catalog.partitions.pop((DAY,))
    run(replica(), catalog, clusters, InProcess(), "r2")
    assert all((copy / MARK_NAME).exists() for copy in copies(roots))
    add_partition(catalog, table_dir, DAY)  # MSCK REPAIR / ADD PARTITION at the same place
    assert catalog.partitions[(DAY,)].location == dropped.location
    out = run(replica(), catalog, clusters, InProcess(), "r3", now=NOW + timedelta(days=30))
    assert all(copy.exists() and not (copy / MARK_NAME).exists() for copy in copies(roots))
    assert out.status["inSync"] == "2/2"


def test_a_removal_cut_short_is_finished_by_the_next_pass(lake) -> None:
    roots, clusters, catalog, _ = lake
    run(replica(), catalog, clusters, InProcess())
    del catalog.partitions[(DAY,)]
    run(replica(), catalog, clusters, InProcess(), "r2")
    for copy in copies(roots):  # the data went, then the removal stopped: the manifest is still hivecat's claim
        (copy / "part-0.parquet").unlink()
        manifest = json.loads((copy / MANIFEST_NAME).read_text())
        manifest["files"] = [f for f in manifest["files"] if f["path"] != "part-0.parquet"]
        (copy / MANIFEST_NAME).write_text(json.dumps(manifest))
    run(replica(), catalog, clusters, InProcess(), "r3", now=NOW + timedelta(days=4))
    assert not any(copy.exists() for copy in copies(roots))


@pytest.mark.parametrize("value, seconds", [(None, 72 * 3600.0), ("1s", 1.0), ("36h", 36 * 3600.0)])
def test_the_housekeeping_delay_parses(value, seconds) -> None:
    spec = replica(**({"housekeeping": {"delay": value}} if value else {}))
    assert spec.housekeeping_delay == seconds


@pytest.mark.parametrize("value", ["soon", "0s", "800h", 5])
def test_a_bad_housekeeping_delay_is_refused(value) -> None:
    with pytest.raises(SpecInvalid) as refused:
        replica(housekeeping={"delay": value})
    assert refused.value.reason == "InvalidField" and "spec.housekeeping.delay" in refused.value.message
