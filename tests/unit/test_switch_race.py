"""The check/switch race of a failover: between the check that verifies every unit's copy and the write that
moves the locations, a writer adds a partition and appends a file to another on the primary. The switch moves
exactly what it verified and is still current: the added partition (its location was never verified) and the
appended one (listed again before the switch commits) stay on the primary, status and the Event name them, and
the next pass copies them and finishes the switch. Before expected locations and the second listing, both
moved to the secondary: one to a copy that did not exist, one to a copy without the appended rows."""

from __future__ import annotations

from hivecat.catalog.model import PartitionInfo
from support.replica_lake import (InProcess, MemoryCatalog, lake, locations, replica, run,  # noqa: F401
                                  write_partition)

DAYS = ("2026-11-01", "2026-11-02", "2026-11-03")


class Raced(MemoryCatalog):
    """Runs `writer` once, right after the switch's check (when the switch first asks the location engine)."""

    def __init__(self, base: MemoryCatalog, writer) -> None:
        super().__init__(base.table.location, [])
        self.table, self.partitions, self.writer = base.table, base.partitions, writer

    def relocate(self, request, progress=None, confirm=None):
        if self.writer is not None:
            writer, self.writer = self.writer, None
            writer()
        return super().relocate(request, progress, confirm)


def test_a_partition_added_and_a_file_appended_after_the_check_stay_and_the_next_pass_moves_them(lake) -> None:
    roots, clusters, catalog, table_dir = lake
    run(replica(), catalog, clusters, InProcess())

    def writer() -> None:
        (table_dir / "dt=2026-11-02" / "part-7.parquet").write_bytes(b"appended after the check")
        write_partition(table_dir, "2026-11-04")
        catalog.partitions[("2026-11-04",)] = PartitionInfo("sales", "events", ("2026-11-04",),
                                                            f"file://{table_dir}/dt=2026-11-04")
    raced = Raced(catalog, writer)
    out = run(replica(active="dr1"), raced, clusters, InProcess(), "r2")

    on_dr1 = roots["dr1"] / "sales.db" / "events"
    assert locations(raced) == [f"file://{on_dr1}", f"file://{on_dr1}/dt=2026-11-01",
                                f"file://{table_dir}/dt=2026-11-02", f"file://{on_dr1}/dt=2026-11-03",
                                f"file://{table_dir}/dt=2026-11-04"]
    left = ["sales.events/dt=2026-11-02", "sales.events/dt=2026-11-04"]
    assert out.status["leftBehind"] == {"cluster": "main", "units": 2, "first": left}
    failed_over = next(e for e in out.events if e[1] == "FailedOver")
    assert "2 units changed or added after the check stay on main" in failed_over[2]
    assert all(uid in failed_over[2] for uid in left)
    degraded = next(c for c in out.conditions if c.type == "Degraded")
    assert degraded.status == "True" and "2 units in scope are not on dr1" in degraded.message
    # the table reads every row meanwhile: the two units point at their originals, which hold them
    assert (table_dir / "dt=2026-11-02" / "part-7.parquet").read_bytes() == b"appended after the check"

    originals = {p: p.read_bytes() for p in table_dir.rglob("*") if p.is_file()}
    again = run(replica(active="dr1"), raced, clusters, InProcess(), "r3", status=out.status)
    assert locations(raced) == [f"file://{on_dr1}", *(f"file://{on_dr1}/dt={d}" for d in (*DAYS, "2026-11-04"))]
    assert again.status["leftBehind"] is None
    assert (on_dr1 / "dt=2026-11-02" / "part-7.parquet").read_bytes() == b"appended after the check"
    assert {p: p.read_bytes() for p in table_dir.rglob("*") if p.is_file()} == originals  # never written
    assert {c.type: c.status for c in again.conditions}["Ready"] == "True"


def test_a_unit_changed_again_during_the_second_listing_is_left_out_and_the_rest_moves(lake) -> None:
    """The second listing names the unit; the engine puts everything back; the switch is written again
    without it."""
    roots, clusters, catalog, table_dir = lake
    run(replica(), catalog, clusters, InProcess())

    class Confirming(MemoryCatalog):
        def relocate(self, request, progress=None, confirm=None):
            if confirm is not None and not request.dry_run and self.first:
                self.first = False
                (table_dir / "dt=2026-11-03" / "part-0.parquet").write_bytes(b"rewritten while switching")
            return super().relocate(request, progress, confirm)
    raced = Confirming(catalog.table.location, [])
    raced.partitions, raced.first = catalog.partitions, True
    out = run(replica(active="dr1"), raced, clusters, InProcess(), "r2")
    on_dr1 = roots["dr1"] / "sales.db" / "events"
    assert locations(raced) == [f"file://{on_dr1}", f"file://{on_dr1}/dt=2026-11-01",
                                f"file://{on_dr1}/dt=2026-11-02", f"file://{table_dir}/dt=2026-11-03"]
    assert out.status["leftBehind"]["first"] == ["sales.events/dt=2026-11-03"]
    assert len([r for r in raced.relocations if not r.dry_run]) == 2  # refused with it, then written without
