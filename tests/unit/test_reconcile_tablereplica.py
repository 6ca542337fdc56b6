"""A TableReplica's sync pass on local directories as clusters, with the real copy engine in-process as the
launcher and an in-memory catalog that writes parameters compare-and-set: copies, bookkeeping, status, the
no-change sync, only new units copied, a launcher that lies, targets hivecat does not own, units that move
during a sync."""

from __future__ import annotations

import os

import pytest

from hivecat.catalog.model import PartitionInfo
from hivecat.copy.manifest import MANIFEST_NAME
from hivecat.reconcile.replica_status import format_duration
from hivecat.reconcile.tablereplica import copy_targets, resolve_clusters
from hivecat.replication.bookkeeping import replica_key
from hivecat.replication.launch import FAILED, RUNNING, WAITING, LaunchResult
from hivecat.specs.errors import SpecInvalid
from support.replica_lake import (NOW, InProcess, Liar, MemoryCatalog, lake, locations, replica, run,  # noqa: F401
                                  write_partition)


def test_both_secondaries_get_verified_copies_and_the_catalog_records_them(lake) -> None:
    roots, clusters, catalog, table_dir = lake
    launcher = InProcess()
    out = run(replica(), catalog, clusters, launcher)
    assert not out.failed
    for name in ("dr1", "dr2"):
        for day in ("2026-11-01", "2026-11-02", "2026-11-03"):
            copy = roots[name] / "sales.db" / "events" / f"dt={day}"
            assert (copy / MANIFEST_NAME).exists()
            assert (copy / "part-1.parquet").read_bytes() == (table_dir / f"dt={day}" / "part-1.parquet").read_bytes()
            params = catalog.params(day)
            assert params[replica_key(name, "location")] == f"file://{copy}"
            assert params[replica_key(name, "checksum")].startswith("sha256:")
            assert params[replica_key(name, "syncedAt")] == "2026-11-25T12:00:00Z"
    status = out.status
    assert status["inSync"] == "2/2" and status["phase"] == "InSync" and status["lag"] == "0s"
    secondaries = [r for r in status["replicas"] if r["role"] == "Secondary"]
    assert [(r["cluster"], r["units"], r["unitsTotal"], r["state"], r["lastOutcome"]) for r in secondaries] == [
        ("dr1", 3, 3, "InSync", "Succeeded"), ("dr2", 3, 3, "InSync", "Succeeded")]
    size = sum(f.stat().st_size for f in table_dir.rglob("*.parquet"))
    assert size == 6 * 1200 and all(r["bytes"] == size and r["bytesCopied"] == size for r in secondaries)
    assert status["replicas"][0] == {"cluster": "main", "role": "Active", "location": f"file://{table_dir}"}
    assert {c.type: c.status for c in out.conditions} == {"Ready": "True", "InSync": "True", "Degraded": "False"}
    assert out.events == [("Normal", "Synced", "sync r1: dr1: 3/3 units in sync, 3 recorded, 6 files (7200 bytes) "
                                               "copied; dr2: 3/3 units in sync, 3 recorded, 6 files (7200 bytes) copied")]


def test_a_sync_without_changes_launches_nothing_and_writes_nothing(lake) -> None:
    _, clusters, catalog, _ = lake
    run(replica(), catalog, clusters, InProcess())
    writes = len(catalog.writes)
    launcher = InProcess()
    out = run(replica(), catalog, clusters, launcher, "r2")
    assert launcher.plans == [] and len(catalog.writes) == writes
    assert [r.get("lastOutcome") for r in out.status["replicas"]] == [None, "NoChange", "NoChange"]
    assert out.status["inSync"] == "2/2"


def test_a_new_partition_is_the_only_unit_copied(lake) -> None:
    _, clusters, catalog, table_dir = lake
    run(replica(), catalog, clusters, InProcess())
    write_partition(table_dir, "2026-11-04")
    catalog.partitions[("2026-11-04",)] = PartitionInfo("sales", "events", ("2026-11-04",),
                                                        f"file://{table_dir}/dt=2026-11-04")
    launcher = InProcess()
    out = run(replica(), catalog, clusters, launcher, "r2")
    assert [[u.id for u in plan.units] for plan in launcher.plans] == [["sales.events/dt=2026-11-04"]] * 2
    assert out.status["inSync"] == "2/2"
    assert replica_key("dr1", "location") in catalog.params("2026-11-04")


def test_a_launcher_that_reports_success_without_copies_records_nothing(lake) -> None:
    _, clusters, catalog, _ = lake
    out = run(replica(), catalog, clusters, Liar())
    assert catalog.writes == []
    assert out.status["inSync"] == "0/2" and out.status["phase"] == "Syncing"
    degraded = next(c for c in out.conditions if c.type == "Degraded")
    assert degraded.status == "True" and "3 units are not verified on the secondary" in degraded.message
    assert [r.get("lastOutcome") for r in out.status["replicas"]][1:] == ["Unverified", "Unverified"]


def test_a_changed_source_file_makes_the_unit_stale_and_unrouted_if_not_recopied(lake) -> None:
    _, clusters, catalog, table_dir = lake
    run(replica(), catalog, clusters, InProcess())
    verified = dict(catalog.params("2026-11-02"))
    changed = table_dir / "dt=2026-11-02" / "part-0.parquet"
    changed.write_bytes(b"new content, another size")
    os.utime(changed, ns=(1_700_000_000_000_000_000, 1_700_000_000_000_000_000))
    out = run(replica(), catalog, clusters, Liar(), "r2")
    assert replica_key("dr1", "location") not in catalog.params("2026-11-02")
    assert replica_key("dr1", "location") in catalog.params("2026-11-01")
    for field in ("checksum", "syncedAt"):  # the last verified copy, for an unplanned failover
        assert catalog.params("2026-11-02")[replica_key("dr1", field)] == verified[replica_key("dr1", field)]
    assert out.status["replicas"][1]["units"] == 2
    assert out.status["lag"] == format_duration(NOW.timestamp() - 1_700_000_000)


def test_a_target_with_data_hivecat_did_not_write_is_left_alone(lake) -> None:
    roots, clusters, catalog, _ = lake
    theirs = roots["dr1"] / "sales.db" / "events" / "dt=2026-11-01"
    theirs.mkdir(parents=True)
    (theirs / "mine.csv").write_text("somebody's data")
    out = run(replica(secondaries=["dr1"]), catalog, clusters, InProcess())
    assert sorted(p.name for p in theirs.iterdir()) == ["mine.csv"]
    assert replica_key("dr1", "location") not in catalog.params("2026-11-01")
    degraded = next(c for c in out.conditions if c.type == "Degraded")
    assert "1 units cannot be copied: sales.events/dt=2026-11-01" in degraded.message
    assert "without hivecat's manifest" in degraded.message
    assert out.status["replicas"][1]["lastOutcome"] == "Succeeded" and out.status["replicas"][1]["units"] == 2


def test_a_unit_that_moves_during_the_sync_is_not_recorded(lake) -> None:
    _, clusters, catalog, _ = lake

    class Mover(InProcess):
        def start(self, plan, copy):
            result = super().start(plan, copy)
            moved = catalog.partitions[("2026-11-03",)]
            catalog.partitions[("2026-11-03",)] = PartitionInfo("sales", "events", moved.values, "file:///elsewhere")
            return result

    out = run(replica(secondaries=["dr1"]), catalog, clusters, Mover())
    assert replica_key("dr1", "location") not in catalog.params("2026-11-03")
    assert replica_key("dr1", "location") in catalog.params("2026-11-01")
    degraded = next(c for c in out.conditions if c.type == "Degraded")
    assert "sales.events/dt=2026-11-03: location is now 'file:///elsewhere'" in degraded.message
    assert out.status["replicas"][1]["state"] == "Stale"


def test_a_failed_copy_is_retried_with_backoff(lake) -> None:
    _, clusters, catalog, _ = lake

    class Failing(InProcess):
        def start(self, plan, copy):
            return LaunchResult(FAILED, "1 unit(s) failed: disk full")

    out = run(replica(secondaries=["dr1"]), catalog, clusters, Failing())
    assert out.failed and out.status["phase"] == "Degraded"
    assert out.events[0][:2] == ("Warning", "SyncFailed")
    assert "dr1: copy failed: 1 unit(s) failed: disk full" in next(c for c in out.conditions
                                                                   if c.type == "Degraded").message


def test_clusters_resolve_against_the_registry(lake) -> None:
    _, clusters, catalog, table_dir = lake
    resolved = resolve_clusters(replica(primary=None), clusters, f"file://{table_dir}")
    assert resolved.primary.name == "main" and [c.name for c in resolved.named] == ["main", "dr1", "dr2"]
    assert [c.name for c in copy_targets(resolved, clusters["main"])] == ["dr1", "dr2"]
    assert [c.name for c in copy_targets(resolved, clusters["dr1"])] == ["dr2"]  # never the originals
    moved = resolve_clusters(replica(primary=None, active="dr1"), clusters, f"file://{roots_of(clusters)}/x",
                             known_primary="main")
    assert moved.primary.name == "main" and moved.active.name == "dr1"
    with pytest.raises(SpecInvalid) as missing:
        resolve_clusters(replica(secondaries=["dr9"]), clusters, f"file://{table_dir}")
    assert missing.value.reason == "ClusterNotRegistered"
    with pytest.raises(SpecInvalid) as unknown:
        resolve_clusters(replica(primary=None), clusters, "s3://elsewhere/t")
    assert unknown.value.reason == "PrimaryUnknown"
    out = run(replica(table="nope"), catalog, clusters, InProcess())
    assert [(c.type, c.status, c.reason) for c in out.conditions][0] == ("Ready", "False", "TableNotFound")
    # a table not created yet (a GitOps repo applies the replica with the catalog): retried, not parked
    assert (out.failed, out.status["phase"]) == (True, "Pending")


@pytest.mark.parametrize("seconds, shown", [(0, "0s"), (59.6, "1m"), (61, "1m"), (3725, "1h2m"), (90061, "1d1h1m")])
def test_lag_is_shown_as_a_short_duration(seconds: float, shown: str) -> None:
    assert format_duration(seconds) == shown


def test_forgetting_removes_every_cluster_key_in_one_update_per_unit() -> None:
    from hivecat.replication.bookkeeping import forget, replica_keys

    units = [(("2026-11-01",), {replica_key("dr1", "location"): "x", replica_key("dr2", "checksum"): "y", "o": "1"}),
             (("2026-11-02",), {"other": "kept"})]
    updates = forget(["dr1", "dr2"], units)
    assert len(updates) == 1 and updates[0].partition_values == ("2026-11-01",)
    assert updates[0].expected_location is None
    assert set(updates[0].remove) == {replica_key("dr1", "location"), replica_key("dr2", "checksum")}
    assert set(updates[0].remove) <= set(replica_keys("dr1") + replica_keys("dr2"))


def roots_of(clusters) -> str:
    return clusters["dr1"].filesystem.removeprefix("file://")


def test_failover_moves_every_location_to_verified_copies_and_failback_moves_them_back(lake) -> None:
    roots, clusters, catalog, table_dir = lake
    run(replica(), catalog, clusters, InProcess())
    out = run(replica(active="dr1"), catalog, clusters, InProcess(), "r2")
    copy_dir = roots["dr1"] / "sales.db" / "events"
    assert locations(catalog) == [f"file://{copy_dir}", *(f"file://{copy_dir}/dt={d}" for d in
                                                          ("2026-11-01", "2026-11-02", "2026-11-03"))]
    assert [(e[0], e[1]) for e in out.events][0] == ("Normal", "FailedOver")
    assert "3 units verified, 4 locations rewritten in run(s) run-2" in out.events[0][2]  # run-1: the dry run
    assert out.status["active"] == "dr1" and out.status["primary"] == "main" and "lastFailoverTime" in out.status
    assert [(r["cluster"], r["role"]) for r in out.status["replicas"]] == [
        ("dr1", "Active"), ("main", "Primary"), ("dr2", "Secondary")]
    assert out.status["inSync"] == "1/1"  # dr2 now copied from dr1, verified against it
    assert catalog.table.parameters == {replica_key("main", "readOnly"): "true"}  # for cooperating writers
    # Back: the originals on main are what the copies were made from, so failback needs no copy.
    back = run(replica(active="main"), catalog, clusters, InProcess(), "r3")
    assert locations(catalog)[0] == f"file://{table_dir}" and back.status["active"] == "main"
    assert back.events[0][1] == "FailedBack"
    assert catalog.table.parameters == {replica_key("dr1", "readOnly"): "true"}


def test_failover_with_one_unit_not_in_sync_is_refused_and_nothing_moves(lake) -> None:
    roots, clusters, catalog, table_dir = lake
    run(replica(), catalog, clusters, InProcess())
    write_partition(table_dir, "2026-11-02", files=3)  # rewritten, and a third file: not copied yet
    before = locations(catalog)
    out = run(replica(active="dr1", secondaries=["dr1"]), catalog, clusters, Liar(), "r2")
    assert locations(catalog) == before and catalog.relocations == []
    ready = next(c for c in out.conditions if c.type == "Ready")
    assert (ready.status, ready.reason) == ("False", "FailoverRefused")
    assert "1 of 3 units not whole and current on dr1: sales.events/dt=2026-11-02: 3 files new or changed" \
        in ready.message
    assert out.status["active"] == "main" and out.status["phase"] == "Degraded"


def test_failback_copies_units_changed_while_failed_over_to_new_directories_and_never_writes_the_originals(
        lake) -> None:
    roots, clusters, catalog, table_dir = lake
    run(replica(), catalog, clusters, InProcess())
    run(replica(active="dr1"), catalog, clusters, InProcess(), "r2")
    on_dr1 = roots["dr1"] / "sales.db" / "events"
    write_partition(on_dr1, "2026-11-04")  # added while failed over: no original on main
    catalog.partitions[("2026-11-04",)] = PartitionInfo("sales", "events", ("2026-11-04",),
                                                        f"file://{on_dr1}/dt=2026-11-04")
    (on_dr1 / "dt=2026-11-02" / "part-9.parquet").write_bytes(b"written on dr1")  # an insert while failed over
    originals = {p: p.read_bytes() for p in table_dir.rglob("*") if p.is_file()}
    launcher = InProcess()
    out = run(replica(active="main"), catalog, clusters, launcher, "r3")
    assert out.status["active"] == "main" and out.events[0][1] == "FailedBack", out.conditions
    home = roots["main"] / ".hivecat" / "failback" / "ns" / "events" / "g1" / "sales.db" / "events"
    assert locations(catalog) == [f"file://{table_dir}", f"file://{table_dir}/dt=2026-11-01",
                                  f"file://{home}/dt=2026-11-02", f"file://{table_dir}/dt=2026-11-03",
                                  f"file://{home}/dt=2026-11-04"]
    assert (home / "dt=2026-11-02" / "part-9.parquet").read_bytes() == b"written on dr1"
    assert sorted(p.name for p in (home / "dt=2026-11-04").iterdir()) == [MANIFEST_NAME, "part-0.parquet",
                                                                         "part-1.parquet"]
    assert {p: p.read_bytes() for p in table_dir.rglob("*") if p.is_file()} == originals  # never written
    assert [u.id for u in launcher.plans[0].units] == ["sales.events/dt=2026-11-02", "sales.events/dt=2026-11-04"]
    assert "2 units changed while failed over were copied to new directories" in out.events[0][2]
    # the sync after the failback copies the moved units to dr1 and dr2 below the same new path
    assert out.status["inSync"] == "2/2"
    assert catalog.params("2026-11-02")[replica_key("dr1", "location")].endswith(
        "/dr1/.hivecat/failback/ns/events/g1/sales.db/events/dt=2026-11-02")
    # A second round trip: the unit that lives below g1 goes to g2 on the next failback, never back into g1.
    run(replica(active="dr1"), catalog, clusters, InProcess(), "r4")
    again = roots["dr1"] / ".hivecat" / "failback" / "ns" / "events" / "g1" / "sales.db" / "events"
    (again / "dt=2026-11-02" / "part-8.parquet").write_bytes(b"second round")
    out = run(replica(active="main"), catalog, clusters, InProcess(), "r5")
    assert out.status["active"] == "main"
    assert catalog.partitions[("2026-11-02",)].location.endswith("/.hivecat/failback/ns/events/g2/sales.db/events/"
                                                                 "dt=2026-11-02")
    assert catalog.partitions[("2026-11-04",)].location == f"file://{home}/dt=2026-11-04"  # unchanged: back to g1


def test_failback_whose_copy_does_not_verify_is_refused_and_nothing_moves(lake) -> None:
    roots, clusters, catalog, table_dir = lake
    run(replica(), catalog, clusters, InProcess())
    run(replica(active="dr1"), catalog, clusters, InProcess(), "r2")
    on_dr1 = roots["dr1"] / "sales.db" / "events"
    write_partition(on_dr1, "2026-11-04")
    catalog.partitions[("2026-11-04",)] = PartitionInfo("sales", "events", ("2026-11-04",),
                                                        f"file://{on_dr1}/dt=2026-11-04")
    before = locations(catalog)
    out = run(replica(active="main"), catalog, clusters, Liar(), "r3")
    assert locations(catalog) == before and out.status["active"] == "dr1"
    ready = next(c for c in out.conditions if c.type == "Ready")
    assert ready.reason == "FailbackRefused" and "1 of 1 units changed while failed over" in ready.message
    assert "sales.events/dt=2026-11-04: not copied yet" in ready.message
    assert not (table_dir / "dt=2026-11-04").exists()  # originals never written


def test_failover_refused_when_partitions_outside_the_scope_would_move(lake) -> None:
    _, clusters, catalog, _ = lake
    run(replica(partitions={"mostRecent": 2}), catalog, clusters, InProcess())
    out = run(replica(partitions={"mostRecent": 2}, active="dr1"), catalog, clusters, InProcess(), "r2")
    ready = next(c for c in out.conditions if c.type == "Ready")
    assert ready.reason == "FailoverRefused" and "outside spec.partitions" in ready.message
    assert "sales.events/dt=2026-11-01" in ready.message and catalog.relocations == []


def test_a_partition_added_on_the_old_primary_after_a_failover_is_reported(lake) -> None:
    _, clusters, catalog, table_dir = lake
    run(replica(), catalog, clusters, InProcess())
    run(replica(active="dr1"), catalog, clusters, InProcess(), "r2")
    write_partition(table_dir, "2026-11-09")  # a writer that did not follow the failover
    catalog.partitions[("2026-11-09",)] = PartitionInfo("sales", "events", ("2026-11-09",),
                                                        f"file://{table_dir}/dt=2026-11-09")
    out = run(replica(active="dr1"), catalog, clusters, InProcess(), "r3")
    assert out.status["unitsOutside"] == 1 and out.status["active"] == "dr1"
    degraded = next(c for c in out.conditions if c.type == "Degraded")
    assert degraded.status == "True" and "1 units in scope are not on dr1" in degraded.message
    assert f"sales.events/dt=2026-11-09 at file://{table_dir}/dt=2026-11-09" in degraded.message


def test_a_bad_filter_and_a_failing_catalog_are_conditions_not_tracebacks(lake) -> None:
    from hivecat.locations.partition_filter import FilterError

    _, clusters, catalog, _ = lake

    class Strict(MemoryCatalog):
        def list_partitions(self, database, table, partition_filter=None):
            raise FilterError("unknown partition key 'day'")

    class Dropped(MemoryCatalog):
        def update_unit_params(self, database, table, updates):
            raise LookupError("table sales.events does not exist")

    strict = Strict(catalog.table.location, ["2026-11-01"])
    out = run(replica(partitions={"filter": "day = 1"}), strict, clusters, InProcess())
    ready = next(c for c in out.conditions if c.type == "Ready")
    assert (ready.status, ready.reason) == ("False", "InvalidFilter") and "unknown partition key" in ready.message
    assert not out.failed and out.status["phase"] == "Invalid"
    dropped = Dropped(catalog.table.location, ["2026-11-01", "2026-11-02", "2026-11-03"])
    out = run(replica(), dropped, clusters, InProcess())
    ready = next(c for c in out.conditions if c.type == "Ready")
    assert ready.reason == "SyncError" and "LookupError: table sales.events does not exist" in ready.message
    assert out.failed and out.status["phase"] == "Degraded"


def test_a_switch_whose_journal_cannot_be_written_is_a_condition_and_nothing_moves(lake) -> None:
    from hivecat.catalog.journal import JournalUnavailable

    _, clusters, catalog, _ = lake
    run(replica(), catalog, clusters, InProcess())

    class NoJournal(MemoryCatalog):
        def relocate(self, request, progress=None, confirm=None):
            if not request.dry_run:
                raise JournalUnavailable("hive may not create or write the relocation journal: grant it")
            return super().relocate(request)

    locked = NoJournal(catalog.table.location, ["2026-11-01", "2026-11-02", "2026-11-03"])
    locked.partitions = catalog.partitions
    before = locations(locked)
    out = run(replica(active="dr1"), locked, clusters, InProcess(), "r2")
    assert locations(locked) == before and out.failed and out.status["phase"] == "Degraded"
    ready = next(c for c in out.conditions if c.type == "Ready")
    assert (ready.status, ready.reason) == ("False", "JournalUnavailable") and "grant it" in ready.message


def test_a_pass_starts_a_copy_and_ends_and_a_later_pass_reads_verifies_and_records_it(lake) -> None:
    """No pass waits for a copy: the first starts it (Copying, nothing recorded, no Event), the copy ends
    meanwhile, and the next reads its end, checks the units and records them."""
    _, clusters, catalog, _ = lake

    class Deferred(InProcess):
        def __init__(self) -> None:
            super().__init__()
            self.started: list = []
            self.ended: LaunchResult | None = None

        def observe(self):
            ended, self.ended = self.ended, None
            if ended is not None:
                return ended
            return LaunchResult(RUNNING, "Job runs", "run-7") if self.started else None

        def start(self, plan, copy):
            self.started.append((plan, copy))
            return LaunchResult(RUNNING, "Job started", "run-7", units=tuple(u.id for u in plan.units))

        def finish(self) -> None:
            plan, copy = self.started.pop()
            result = super().start(plan, copy)
            self.ended = LaunchResult(result.outcome, "", "run-7", result.files_copied, result.bytes_copied,
                                      units=tuple(u.id for u in plan.units))

    launcher = Deferred()
    first = run(replica(secondaries=["dr1"]), catalog, clusters, launcher)
    assert first.in_flight and not first.waiting and not first.failed and first.events == []
    dr1 = first.status["replicas"][1]
    assert dr1["state"] == "Copying" and dr1["copyRunId"] == "run-7" and "lastOutcome" not in dr1
    assert replica_key("dr1", "location") not in catalog.params("2026-11-01")
    assert "copying (run run-7)" in next(c for c in first.conditions if c.type == "InSync").message

    again = run(replica(secondaries=["dr1"]), catalog, clusters, launcher, "r2")  # still running: nothing new
    assert again.in_flight and len(launcher.started) == 1 and launcher.plans == []

    launcher.finish()
    last = run(replica(secondaries=["dr1"]), catalog, clusters, launcher, "r3")
    assert not last.in_flight and last.status["phase"] == "InSync"
    assert last.status["replicas"][1]["lastOutcome"] == "Succeeded" and "copyRunId" not in last.status["replicas"][1]
    assert replica_key("dr1", "location") in catalog.params("2026-11-01")
    assert last.events[0][:2] == ("Normal", "Synced")


def test_a_copy_that_cannot_start_yet_waits_and_says_why(lake) -> None:
    _, clusters, catalog, _ = lake

    class Full(InProcess):
        def start(self, plan, copy):
            return LaunchResult(WAITING, "2 Local copies run already")

    out = run(replica(secondaries=["dr1"]), catalog, clusters, Full())
    assert out.in_flight and out.waiting and not out.failed and out.status["replicas"][1]["state"] == "Copying"
    assert "the copy waits: 2 Local copies run already" in next(c for c in out.conditions
                                                                if c.type == "InSync").message


def test_a_sync_whose_copies_end_in_different_passes_reports_each_copy_once_under_its_own_id(lake) -> None:
    """dr1's copy ends before dr2's: the pass that reads dr2's end continues the sync (its id, its start) and
    still says dr1's copy succeeded, with the units recorded earlier; one Synced Event, at the end."""
    from hivecat.act.tablereplica import sync_pass
    from support.replica_lake import Ports
    from hivecat.reconcile.clusterstorage import Backend
    _, clusters, catalog, _ = lake

    class Deferred(InProcess):
        def __init__(self) -> None:
            super().__init__()
            self.pending = None
            self.ended: LaunchResult | None = None

        def observe(self):
            ended, self.ended = self.ended, None
            return ended or (LaunchResult(RUNNING, "runs", "j") if self.pending else None)

        def start(self, plan, copy):
            self.pending = (plan, copy)
            return LaunchResult(RUNNING, "started", "j")

        def finish(self) -> None:
            plan, copy = self.pending
            self.pending, done = None, super().start(plan, copy)
            self.ended = LaunchResult(done.outcome, "", "j", done.files_copied, done.bytes_copied,
                                      units=tuple(u.id for u in plan.units))

    launchers = {"dr1": Deferred(), "dr2": Deferred()}

    class Both(Ports):
        def launcher(self, secondary):
            return launchers[secondary.name]

    def sync(run_id, outcome=None):
        return sync_pass(replica(), [Backend("Database", None)], clusters, Both(catalog, None), run_id,
                         clock=lambda: NOW, ended=outcome.ended if outcome else None,
                         started=outcome.started if outcome else None)

    first = sync("s1")
    launchers["dr1"].finish()
    second = sync("s1", first)
    assert second.in_flight and second.events == []
    assert second.status["replicas"][1]["lastOutcome"] == "Succeeded" and second.status["replicas"][2]["state"] == "Copying"
    launchers["dr2"].finish()
    third = sync("s1", second)
    assert not third.in_flight and [r.get("lastOutcome") for r in third.status["replicas"][1:]] == ["Succeeded"] * 2
    assert third.events == [("Normal", "Synced", "sync s1: dr1: 3/3 units in sync, 3 recorded, 6 files (7200 bytes) "
                                                 "copied; dr2: 3/3 units in sync, 3 recorded, 6 files (7200 bytes) "
                                                 "copied")]


def test_a_copy_that_ends_unverified_is_reported_and_not_started_again_in_the_same_sync(lake) -> None:
    """A Job kwok completes without copying: the pass that reads its end reports Unverified and ends the sync;
    it does not start the same copy again (which would loop as fast as the Job completes)."""
    _, clusters, catalog, _ = lake

    class Hollow(InProcess):
        def __init__(self) -> None:
            super().__init__()
            self.starts, self.ended = 0, None

        def observe(self):
            ended, self.ended = self.ended, None
            return ended

        def start(self, plan, copy):
            self.starts += 1
            self.ended = LaunchResult("Succeeded", "", "j", units=tuple(u.id for u in plan.units))
            return LaunchResult(RUNNING, "started", "j")

    launcher = Hollow()
    first = run(replica(secondaries=["dr1"]), catalog, clusters, launcher)
    assert first.in_flight and launcher.starts == 1
    second = sync_pass_continuing(first, catalog, clusters, launcher)
    assert not second.in_flight and launcher.starts == 1
    dr1 = second.status["replicas"][1]
    assert (dr1["state"], dr1["lastOutcome"]) == ("Stale", "Unverified")


def sync_pass_continuing(previous, catalog, clusters, launcher):
    from hivecat.reconcile.clusterstorage import Backend
    from hivecat.act.tablereplica import sync_pass
    from support.replica_lake import Ports
    return sync_pass(replica(secondaries=["dr1"]), [Backend("Database", None)], clusters, Ports(catalog, launcher),
                     "r1", clock=lambda: NOW, ended=previous.ended, started=previous.started)
