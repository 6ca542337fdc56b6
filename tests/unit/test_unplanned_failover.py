"""A failover on the day the primary is gone, on local directories as clusters (the primary's directory made
unreachable: every read of it raises, as a stopped namenode's does) with the real copy engine in-process.

Before the outage a sync measured the readiness of each secondary: its recovery point (the oldest change on the
primary not yet copied) and the units without a copy. A planned failover is then refused, saying the primary does
not answer; an unplanned one is refused until the author accepts that recovery point, refused again while a unit
has no whole recorded copy (unless the spec leaves it behind), and then switches every unit to its last verified
copy without a single read of the primary. Before these units, a failover with the primary gone was refused
whatever the spec said (the gate read each original)."""

from __future__ import annotations

import os
from datetime import datetime, timezone
from pathlib import Path

import pytest

from hivecat.catalog.model import PartitionInfo
from hivecat.copy.storage import Location, Storage
from hivecat.replication.bookkeeping import replica_key
from support.replica_lake import (NOW, InProcess, Liar, Ports, lake, locations, replica,  # noqa: F401
                                  write_partition)
from hivecat.act.readiness import readiness_pass
from hivecat.act.tablereplica import sync_pass
from hivecat.reconcile.clusterstorage import Backend
from hivecat.reconcile.failover_readiness import remembered

LATER = datetime(2026, 11, 25, 13, 0, tzinfo=timezone.utc)


class Outage(Storage):
    """Storage where every read below `down` raises as an unreachable namenode does, and is counted."""

    def __init__(self, down: Path) -> None:
        super().__init__()
        self.down, self.reads = f"file://{down}", 0

    def filesystem(self, location: Location):
        if location.uri.startswith(self.down):
            self.reads += 1
            raise ConnectionRefusedError(111, "Connection refused (the namenode is stopped)")
        return super().filesystem(location)


class OutagePorts(Ports):
    def __init__(self, catalog, launcher, storage: Storage) -> None:
        super().__init__(catalog, launcher)
        self.storage_ = storage

    def storage(self) -> Storage:
        return self.storage_


def run(spec, catalog, clusters, ports, status=None, run_id="r", now=LATER):
    return sync_pass(spec, [Backend("Database", None)], clusters, ports, run_id, clock=lambda: now,
                     memory=remembered(status))


def ready(out):
    return next(c for c in out.conditions if c.type == "Ready")


@pytest.fixture
def behind(lake):
    """Synced; then an append to dt=2026-11-02 and a new dt=2026-11-04 on the primary, which a sync that copies
    nothing (syncs suspended, say) measures; then the primary stops answering."""
    roots, clusters, catalog, table_dir = lake
    first = run(replica(), catalog, clusters, OutagePorts(catalog, InProcess(), Storage()), run_id="r1", now=NOW)
    appended = table_dir / "dt=2026-11-02" / "part-5.parquet"
    appended.write_bytes(b"appended before the outage")
    os.utime(appended, (1764075600, 1764075600))  # 2025-11-25T13:00:00Z: the oldest change not copied
    write_partition(table_dir, "2026-11-04")
    for f in (table_dir / "dt=2026-11-04").iterdir():
        os.utime(f, (1764079200, 1764079200))     # an hour later
    catalog.partitions[("2026-11-04",)] = PartitionInfo("sales", "events", ("2026-11-04",),
                                                        f"file://{table_dir}/dt=2026-11-04")
    measured = run(replica(), catalog, clusters, OutagePorts(catalog, Liar(), Storage()),
                   {**first.status}, run_id="r2")
    return roots, clusters, catalog, table_dir, measured.status


def test_the_readiness_before_the_outage_names_the_recovery_point_and_the_units_behind(behind) -> None:
    *_, status = behind
    dr1 = next(r for r in status["readiness"] if r["cluster"] == "dr1")
    assert dr1["recoveryPoint"] == "2025-11-25T13:00:00Z"
    assert dr1["failoverReady"] is False and dr1["unitsWithoutCopy"] == 1
    assert dr1["withoutCopy"] == ["sales.events/dt=2026-11-04"]
    assert dr1["unitsBehind"] == 2 and dr1["behind"] == ["sales.events/dt=2026-11-02", "sales.events/dt=2026-11-04"]
    assert dr1["measuredAt"] == "2026-11-25T13:00:00Z" and dr1["units"] == 4


def test_with_the_primary_gone_a_planned_failover_is_refused_and_an_unplanned_one_switches(behind) -> None:
    roots, clusters, catalog, table_dir, status = behind
    outage = Outage(roots["main"])
    ports = OutagePorts(catalog, InProcess(), outage)
    before = locations(catalog)

    # a sync while the primary is down measures nothing: status keeps the last readiness and its time
    down = run(replica(), catalog, clusters, ports, status, run_id="r3")
    assert down.status["readiness"] == status["readiness"]

    planned = run(replica(active="dr1"), catalog, clusters, ports, status, run_id="r4")
    assert ready(planned).reason == "FailoverRefused" and "primary main does not answer" in ready(planned).message
    assert planned.failed  # retried with backoff: nothing announces the primary's return
    assert locations(catalog) == before

    point = next(r for r in status["readiness"] if r["cluster"] == "dr1")["recoveryPoint"]
    later = {"kind": "Unplanned", "acceptRecoveryPoint": "2025-11-25T14:00:00Z"}
    refused = run(replica(active="dr1", failover=later), catalog, clusters, ports, status, run_id="r5")
    assert ready(refused).reason == "FailoverRefused" and "more would be lost than was accepted" in ready(refused).message

    accepted = {"kind": "Unplanned", "acceptRecoveryPoint": point}
    refused = run(replica(active="dr1", failover=accepted), catalog, clusters, ports, status, run_id="r6")
    assert "1 of 4 units have no whole recorded copy there: sales.events/dt=2026-11-04" in ready(refused).message
    assert locations(catalog) == before

    reads = outage.reads  # (a pass whose switch is refused goes on to sync from the primary, and fails to read it)

    out = run(replica(active="dr1", failover={**accepted, "leaveBehind": True}), catalog, clusters, ports, status,
              run_id="r7")
    assert outage.reads == reads  # not one read of the primary
    on_dr1 = roots["dr1"] / "sales.db" / "events"
    assert locations(catalog) == [f"file://{on_dr1}", *(f"file://{on_dr1}/dt={d}" for d in
                                                          ("2026-11-01", "2026-11-02", "2026-11-03")),
                                  f"file://{table_dir}/dt=2026-11-04"]
    assert not (on_dr1 / "dt=2026-11-02" / "part-5.parquet").exists()  # lost, as accepted
    event = next(e for e in out.events if e[1] == "FailedOver")
    assert "unplanned, recovery point 2025-11-25T13:00:00Z accepted" in event[2]
    assert "1 units without a whole recorded copy stay on main" in event[2]
    assert out.status["leftBehind"] == {"cluster": "main", "units": 1, "first": ["sales.events/dt=2026-11-04"]}
    assert out.status["active"] == "dr1"

    # the value stays in the spec: after the switch it is older than the last one and never applies again
    assert remembered(out.status).last_switch == LATER
    back = run(replica(active="main"), catalog, clusters, ports, {**status, **out.status}, run_id="r8")
    assert ready(back).reason == "FailbackRefused" and "does not answer" in ready(back).message


def test_an_accepted_point_left_from_an_earlier_failover_never_applies(behind) -> None:
    roots, clusters, catalog, _, status = behind
    ports = OutagePorts(catalog, InProcess(), Outage(roots["main"]))
    point = next(r for r in status["readiness"] if r["cluster"] == "dr1")["recoveryPoint"]
    earlier = {**status, "lastFailoverTime": "2025-12-01T00:00:00Z"}
    before = locations(catalog)
    out = run(replica(active="dr1", failover={"kind": "Unplanned", "acceptRecoveryPoint": point,
                                              "leaveBehind": True}), catalog, clusters, ports, earlier)
    assert "older than the last switch" in ready(out).message and locations(catalog) == before


def test_a_damaged_copy_is_named_and_never_switched_to(behind) -> None:
    roots, clusters, catalog, table_dir, status = behind
    ports = OutagePorts(catalog, InProcess(), Outage(roots["main"]))
    copy = roots["dr1"] / "sales.db" / "events" / "dt=2026-11-01" / "part-1.parquet"
    copy.write_bytes(copy.read_bytes()[:10])  # truncated
    (roots["dr1"] / "sales.db" / "events" / "dt=2026-11-03" / "part-0.parquet").unlink()  # removed
    point = next(r for r in status["readiness"] if r["cluster"] == "dr1")["recoveryPoint"]
    spec = {"kind": "Unplanned", "acceptRecoveryPoint": point}
    before = locations(catalog)
    out = run(replica(active="dr1", failover=spec), catalog, clusters, ports, status)
    message = ready(out).message
    assert "3 of 4 units have no whole recorded copy" in message and locations(catalog) == before
    assert "dt=2026-11-01" in message and "part-1.parquet" in message and "dt=2026-11-03" in message
    out = run(replica(active="dr1", failover={**spec, "leaveBehind": True}), catalog, clusters, ports, status)
    on_dr1 = roots["dr1"] / "sales.db" / "events"
    assert locations(catalog)[1:] == [f"file://{table_dir}/dt=2026-11-01", f"file://{on_dr1}/dt=2026-11-02",
                                      f"file://{table_dir}/dt=2026-11-03", f"file://{table_dir}/dt=2026-11-04"]
    assert out.status["leftBehind"]["units"] == 3
    assert catalog.params("2026-11-02")[replica_key("dr1", "checksum")].startswith("sha256:")


def test_the_readiness_check_measures_without_copying_or_recording_and_keeps_the_last_while_down(lake) -> None:
    roots, clusters, catalog, table_dir = lake
    first = run(replica(), catalog, clusters, OutagePorts(catalog, InProcess(), Storage()), run_id="r1", now=NOW)
    write_partition(table_dir, "2026-11-04")
    catalog.partitions[("2026-11-04",)] = PartitionInfo("sales", "events", ("2026-11-04",),
                                                        f"file://{table_dir}/dt=2026-11-04")
    writes, launcher = len(catalog.writes), Liar()
    spec = replica(suspend=True)
    out = readiness_pass(spec, [Backend("Database", None)], clusters, OutagePorts(catalog, launcher, Storage()),
                         memory=remembered(first.status), clock=lambda: LATER)
    assert out.error is None and launcher.runs == 0 and len(catalog.writes) == writes
    assert [(r["cluster"], r["failoverReady"], r["withoutCopy"]) for r in out.status] == [
        ("dr1", False, ["sales.events/dt=2026-11-04"]), ("dr2", False, ["sales.events/dt=2026-11-04"])]
    down = readiness_pass(spec, [Backend("Database", None)], clusters,
                          OutagePorts(catalog, launcher, Outage(roots["main"])),
                          memory=remembered({**first.status, "readiness": out.status}), clock=lambda: LATER)
    assert down.measured == [] and down.status == out.status


def test_a_copy_location_written_into_the_bookkeeping_is_never_read_or_switched_to(behind) -> None:
    """The catalog's parameters are writable by whoever owns the table: an unplanned failover takes only the
    fingerprint from them, and looks for the copy where the registry places it on the target, through the
    storage the namespace's policy routes (never a path a parameter names)."""
    roots, clusters, catalog, table_dir, status = behind
    elsewhere = roots["dr2"] / "team-b"
    elsewhere.mkdir()
    for day in ("2026-11-01", "2026-11-02", "2026-11-03"):
        unit = catalog.partitions[(day,)]
        catalog.partitions[(day,)] = PartitionInfo(unit.database, unit.table, unit.values, unit.location,
                                                   {**unit.parameters, replica_key("dr1", "location"):
                                                    f"file://{elsewhere}/dt={day}"})
    guard = Outage(roots["main"])
    seen: list[str] = []
    filesystem = guard.filesystem

    def watched(location):
        seen.append(location.uri)
        return filesystem(location)
    guard.filesystem = watched
    point = next(r for r in status["readiness"] if r["cluster"] == "dr1")["recoveryPoint"]
    out = run(replica(active="dr1", secondaries=["dr1"], failover={"kind": "Unplanned", "acceptRecoveryPoint": point,
                                                                   "leaveBehind": True}),
              catalog, clusters, OutagePorts(catalog, InProcess(), guard), status)
    assert out.status["active"] == "dr1"
    assert not any(uri.startswith(f"file://{elsewhere}") for uri in seen)
    on_dr1 = roots["dr1"] / "sales.db" / "events"
    assert locations(catalog)[1:4] == [f"file://{on_dr1}/dt={d}" for d in ("2026-11-01", "2026-11-02", "2026-11-03")]


@pytest.mark.parametrize("winner", ["Primary", "Secondary"])
def test_when_the_primary_returns_diverged_units_are_held_and_kept_until_the_spec_says_which_wins(
        behind, winner) -> None:
    roots, clusters, catalog, table_dir, status = behind
    point = next(r for r in status["readiness"] if r["cluster"] == "dr1")["recoveryPoint"]
    unplanned = {"kind": "Unplanned", "acceptRecoveryPoint": point, "leaveBehind": True}
    out = run(replica(active="dr1", failover=unplanned), catalog, clusters,
              OutagePorts(catalog, InProcess(), Outage(roots["main"])), status, run_id="r3")
    status = {**status, **out.status}
    on_dr1 = roots["dr1"] / "sales.db" / "events"
    (on_dr1 / "dt=2026-11-01" / "part-8.parquet").write_bytes(b"written on dr1 while failed over")
    originals = {p: p.read_bytes() for p in table_dir.rglob("*") if p.is_file()}

    # The primary answers again. dt=2026-11-02 was appended on it before the outage, after its last copy: both
    # versions are kept and the table keeps pointing at dr1's until the spec says which wins.
    ports = OutagePorts(catalog, InProcess(), Storage())
    back = run(replica(active="main", failover=unplanned), catalog, clusters, ports, status, run_id="r4")
    home = roots["main"] / ".hivecat" / "failback" / "ns" / "events" / "g1" / "sales.db" / "events"
    assert locations(catalog) == [f"file://{table_dir}", f"file://{home}/dt=2026-11-01",
                                  f"file://{on_dr1}/dt=2026-11-02", f"file://{table_dir}/dt=2026-11-03",
                                  f"file://{table_dir}/dt=2026-11-04"]
    assert ready(back).reason == "Diverged" and "sales.events/dt=2026-11-02" in ready(back).message
    assert "part-5.parquet" in ready(back).message  # what the primary holds that the copy lacks
    assert back.status["diverged"] == {"cluster": "dr1", "units": 1, "first": ["sales.events/dt=2026-11-02"]}
    assert ("Warning", "Diverged") in [(e[0], e[1]) for e in back.events]
    status = {**status, **back.status}
    again = run(replica(active="main"), catalog, clusters, ports, status, run_id="r5")  # held, every pass
    assert ready(again).reason == "Diverged" and locations(catalog)[2] == f"file://{on_dr1}/dt=2026-11-02"
    assert not [e for e in again.events if e[1] in ("FailedBack", "Diverged")]  # said once

    chosen = run(replica(active="main", failback={"divergedWinner": winner}), catalog, clusters, ports,
                 {**status, **again.status}, run_id="r6")
    assert ready(chosen).status == "True" and chosen.status["diverged"] is None
    assert chosen.status["leftBehind"] is None
    if winner == "Primary":
        assert locations(catalog)[2] == f"file://{table_dir}/dt=2026-11-02"
    else:
        assert locations(catalog)[2] == f"file://{home}/dt=2026-11-02"
        assert not (home / "dt=2026-11-02" / "part-5.parquet").exists()
    # whichever wins, the other version stays where it was, and the originals were never written
    assert (on_dr1 / "dt=2026-11-02" / "part-0.parquet").exists()
    assert {p: p.read_bytes() for p in table_dir.rglob("*") if p.is_file()} == originals


def test_a_secondary_promoted_to_primary_for_good_syncs_onward_and_never_writes_the_old_primary(behind) -> None:
    """The old primary never returns: spec.primary names the cluster the table points at, the old primary is
    dropped (or kept as a secondary, whose originals the copy engine refuses to overwrite)."""
    roots, clusters, catalog, table_dir, status = behind
    point = next(r for r in status["readiness"] if r["cluster"] == "dr1")["recoveryPoint"]
    out = run(replica(active="dr1", failover={"kind": "Unplanned", "acceptRecoveryPoint": point,
                                              "leaveBehind": True}),
              catalog, clusters, OutagePorts(catalog, InProcess(), Outage(roots["main"])), status)
    status = {**status, **out.status}
    promoted = run(replica(primary="dr1", secondaries=["dr2"]), catalog, clusters,
                   OutagePorts(catalog, InProcess(), Outage(roots["main"])), status, run_id="r4")
    assert (promoted.status["primary"], promoted.status["active"]) == ("dr1", "dr1")
    assert promoted.status["inSync"] == "1/1" and ready(promoted).status == "True"
    assert [r["cluster"] for r in promoted.status["readiness"]] == ["dr2"]
