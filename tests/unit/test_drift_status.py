"""The pure half of drift (hivecat.reconcile.drift): which sources a ClusterStorage scans, when its next scan
is due, and how a scan (hivecat.catalog.drift.DriftScan, built here by hand from engine reports) reads in
status.drift and in the Drifted condition for each repair mode. Also what repair_drift asks of the engine,
against a fake one (the real backends: tests/integration/test_drift_scan_repair.py)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from hivecat.catalog.drift import DriftScan, RepairDeferred, SourceScan, repair_drift, scan_drift
from hivecat.catalog.model import (
    ObjectKind, Refusal, RelocationRefused, RelocationReport, Scope, unsafe_table_refusal,
)
from hivecat.reconcile.conditions import FALSE, TRUE, UNKNOWN
from hivecat.reconcile.drift import (
    MAX_REFUSALS, MAX_SAMPLE, MAX_SOURCES, drift_sources, drift_status, drifted_condition, next_scan_due,
)
from hivecat.specs.clusterstorage import parse_cluster_storage

NEW = "hdfs://nn-b:8020"
OLD = "hdfs://nn-a:8020"
ALIAS = "hdfs://nn-a.example.com:8020"
SCANNED = datetime(2026, 3, 1, 12, 30, 15, 123456, tzinfo=timezone.utc)
STATUS_KEYS = {"lastScanTime", "driftedLocations", "counts", "refused", "refusals"}


def spec(filesystem: str = NEW, aliases: list[str] | None = None, repair: str = "DryRun"):
    body = {"metadata": {"name": "nn", "namespace": "data"},
            "spec": {"catalogRef": {"name": "sales"}, "filesystem": filesystem, "aliases": aliases or [],
                     "repair": repair}}
    return parse_cluster_storage(body, default_scan_interval=1800.0)


def report(source: str, rewritten: dict[ObjectKind, int] | None = None, refused: dict[ObjectKind, int] | None = None,
           refusals: list[Refusal] | None = None, sample: int = 0) -> RelocationReport:
    out = RelocationReport("dry-run", "mysql://db:3306/hms", source, NEW, True, status="dry-run",
                           refusals=list(refusals or []))
    for kind, n in (rewritten or {}).items():
        out.count(kind).rewritten = n
    for kind, n in (refused or {}).items():
        out.count(kind).refused = n
    for i in range(sample):
        out.add_sample(f"{source}/w/t{i}", f"{NEW}/w/t{i}")
    return out


def drift_scan(*scans: SourceScan) -> DriftScan:
    seen: dict = {}
    for s in scans:
        for r in (*s.report.refusals, *s.blocked):
            seen.setdefault((r.reason, r.table, r.message), r)
    return DriftScan(tuple(scans), tuple(seen.values()))


DRIFTED = drift_scan(
    SourceScan(OLD, NEW, report(OLD, {ObjectKind.TABLE: 2, ObjectKind.PARTITION: 40, ObjectKind.SERDE_PARAM: 1},
                                {ObjectKind.TABLE: 1, ObjectKind.PARTITION: 3},
                                [unsafe_table_refusal("sales.orders", "acid")], sample=8)),
    SourceScan(ALIAS, NEW, report(ALIAS, {ObjectKind.PARTITION: 5, ObjectKind.DATABASE: 1}, sample=5)),
)
CLEAN = drift_scan(SourceScan(OLD, NEW, report(OLD)), SourceScan(ALIAS, NEW, report(ALIAS)))


# --- sources ---------------------------------------------------------------------------------------------

def test_sources_are_aliases_then_previous_filesystems_each_once() -> None:
    cluster = spec(aliases=[ALIAS, "hdfs://nn-c:8020"])
    previous = ["hdfs://NN-A:8020/", OLD, "hdfs://nn-c:8020", "hdfs://nn-d:8020"]
    assert drift_sources(cluster, previous) == (ALIAS, "hdfs://nn-c:8020", "hdfs://NN-A:8020/", "hdfs://nn-d:8020")


def test_sources_leave_out_other_families_the_filesystem_itself_and_junk() -> None:
    cluster = spec(aliases=["viewfs://cluster"])  # viewfs is of the hdfs family
    previous = ["s3://bucket/warehouse", "file:///data", NEW, "hdfs://nn-b:8020/", "not a uri", OLD]
    assert drift_sources(cluster, previous) == ("viewfs://cluster", OLD)


def test_no_aliases_and_no_history_means_no_sources() -> None:
    assert drift_sources(spec(), ()) == ()


# --- when the next scan is due ----------------------------------------------------------------------------

def test_never_scanned_is_due_now() -> None:
    assert next_scan_due(None, 1800.0, "data/nn", now=1_000_000.0) == 1_000_000.0


def test_jitter_stays_within_ten_percent_and_spreads_keys() -> None:
    dues = [next_scan_due(0.0, 1800.0, f"ns/cluster-{i}", now=5.0) for i in range(500)]
    assert all(1620.0 <= due <= 1980.0 for due in dues)
    assert min(dues) < 1650.0 and max(dues) > 1950.0  # the whole band is used
    assert len(set(dues)) > 490


def test_jitter_is_deterministic_per_key_and_scales_with_the_interval() -> None:
    first = next_scan_due(100.0, 3600.0, "data/nn", now=0.0)
    assert first == next_scan_due(100.0, 3600.0, "data/nn", now=99999.0)  # `now` does not move it
    assert next_scan_due(200.0, 3600.0, "data/nn", now=0.0) == pytest.approx(first + 100.0)
    offset = first - 100.0 - 3600.0
    assert next_scan_due(100.0, 7200.0, "data/nn", now=0.0) == pytest.approx(100.0 + 7200.0 + 2 * offset)
    assert next_scan_due(100.0, 3600.0, "data/other", now=0.0) != first


# --- status.drift -----------------------------------------------------------------------------------------

def test_off_reports_counts_only() -> None:
    status = drift_status(DRIFTED, repair="Off", scanned_at=SCANNED)
    assert set(status) == STATUS_KEYS
    assert status["lastScanTime"] == "2026-03-01T12:30:15Z"
    assert status["driftedLocations"] == 49
    assert status["counts"] == {"database": 1, "partition": 45, "serde_param": 1, "table": 2}
    assert status["refused"] == 4
    assert status["refusals"] == [{"reason": "acid", "table": "sales.orders",
                                   "message": unsafe_table_refusal("sales.orders", "acid").message}]


@pytest.mark.parametrize("repair", ["DryRun", "Auto"])
def test_dry_run_and_auto_report_the_plan(repair: str) -> None:
    status = drift_status(DRIFTED, repair=repair, scanned_at=SCANNED)
    assert set(status) == STATUS_KEYS | {"sources", "sample"}
    assert status["sources"] == [
        {"from": OLD, "to": NEW, "locations": 43, "counts": {"partition": 40, "serde_param": 1, "table": 2}},
        {"from": ALIAS, "to": NEW, "locations": 6, "counts": {"database": 1, "partition": 5}},
    ]
    assert len(status["sample"]) == MAX_SAMPLE
    assert status["sample"][0] == f"{OLD}/w/t0 -> {NEW}/w/t0"
    assert status["sample"][-1] == f"{ALIAS}/w/t1 -> {NEW}/w/t1"


def test_a_clean_scan_shows_zero_and_every_scanned_source() -> None:
    status = drift_status(CLEAN, repair="Auto", scanned_at=SCANNED)
    assert (status["driftedLocations"], status["counts"], status["refused"], status["refusals"]) == (0, {}, 0, [])
    assert [s["from"] for s in status["sources"]] == [OLD, ALIAS]
    assert all(s["locations"] == 0 and s["counts"] == {} for s in status["sources"]) and status["sample"] == []


def test_scan_time_is_utc_whole_seconds_with_z() -> None:
    naive = datetime(2026, 3, 1, 12, 30, 15, 999999)
    assert drift_status(CLEAN, repair="Off", scanned_at=naive)["lastScanTime"] == "2026-03-01T12:30:15Z"
    plus_two = datetime(2026, 3, 1, 14, 30, 15, tzinfo=timezone(timedelta(hours=2)))
    assert drift_status(CLEAN, repair="Off", scanned_at=plus_two)["lastScanTime"] == "2026-03-01T12:30:15Z"


def test_lists_are_capped_to_the_crd_limits_and_a_refusal_without_table_has_no_table_key() -> None:
    sources = [f"hdfs://old-{i}:8020" for i in range(40)]
    refusals = [unsafe_table_refusal(f"db.t{i}", "iceberg") for i in range(15)]
    scans = [SourceScan(s, NEW, report(s, {ObjectKind.TABLE: 1}, sample=1)) for s in sources]
    scans.append(SourceScan("hdfs://x:1", NEW, report("hdfs://x:1", {ObjectKind.TABLE: 0}, {ObjectKind.TABLE: 15},
                                                       refusals)))
    blocked = Refusal("unstorable", "drift source hdfs://y:1: the new prefix holds a character ...")
    scans.insert(0, SourceScan("hdfs://y:1", NEW, report("hdfs://y:1"), (blocked,)))
    status = drift_status(drift_scan(*scans), repair="DryRun", scanned_at=SCANNED)
    assert len(status["sources"]) == MAX_SOURCES and len(status["sample"]) == MAX_SAMPLE
    assert len(status["refusals"]) == MAX_REFUSALS
    assert status["refusals"][0] == {"reason": "unstorable", "message": blocked.message}
    assert status["driftedLocations"] == 40 and status["refused"] == 15


# --- the Drifted condition --------------------------------------------------------------------------------

def test_drift_is_drifted_true_with_counts_in_words() -> None:
    condition = drifted_condition(DRIFTED)
    assert (condition.type, condition.status, condition.reason) == ("Drifted", TRUE, "Drifted")
    assert "49 locations" in condition.message and "45 partition" in condition.message
    assert "4 more are left alone" in condition.message and OLD in condition.message
    assert "--" not in condition.message


def test_no_drift_is_false() -> None:
    condition = drifted_condition(CLEAN)
    assert (condition.status, condition.reason) == (FALSE, "NoDrift") and OLD in condition.message
    nothing = drifted_condition(DriftScan((), ()))
    assert (nothing.status, nothing.reason) == (FALSE, "NoDrift") and "no aliases" in nothing.message


@pytest.mark.parametrize("reason,expected", [("acid", "Acid"), ("iceberg", "Iceberg")])
def test_only_refused_locations_left_keeps_drifted_true_with_the_refusal_reason(reason: str, expected: str) -> None:
    refusal = unsafe_table_refusal("sales.t", reason)
    scan = drift_scan(SourceScan(OLD, NEW, report(OLD, refused={ObjectKind.TABLE: 1, ObjectKind.PARTITION: 2},
                                                  refusals=[refusal])))
    condition = drifted_condition(scan)
    assert (condition.status, condition.reason) == (TRUE, expected)
    assert "3 locations" in condition.message and "sales.t" in condition.message


def test_too_long_values_count_as_refused_locations() -> None:
    too_long = Refusal("too-long", f"drift source {OLD}: table db.t (table): SDS.LOCATION would become 4100 "
                                   "characters long, more than the 4000 the column holds", "db.t")
    scan = drift_scan(SourceScan(OLD, NEW, report(OLD), (too_long,)))
    assert scan.refused == 1
    condition = drifted_condition(scan)
    assert (condition.status, condition.reason) == (TRUE, "TooLong")


@pytest.mark.parametrize("reason,expected", [("unstorable", "Charset"), ("overlap", "Overlap"),
                                             ("scheme-change", "SchemeChange"), ("odd-new-reason", "OddNewReason")])
def test_a_source_that_cannot_be_scanned_makes_drifted_unknown(reason: str, expected: str) -> None:
    blocked = Refusal(reason, f"drift source {OLD}: why in words")
    scan = drift_scan(SourceScan(OLD, NEW, report(OLD), (blocked,)), SourceScan(ALIAS, NEW, report(ALIAS)))
    condition = drifted_condition(scan)
    assert (condition.status, condition.reason) == (UNKNOWN, expected) and "why in words" in condition.message
    with_drift = drift_scan(SourceScan(OLD, NEW, report(OLD), (blocked,)),
                            SourceScan(ALIAS, NEW, report(ALIAS, {ObjectKind.TABLE: 1})))
    condition = drifted_condition(with_drift)
    assert condition.status == TRUE and "could not be scanned" in condition.message


# --- repair_drift's decisions, against a fake engine (no I/O) ------------------------------------------

class FakeEngine:
    """Answers relocate() as the engine would: dry runs from `drift`, real runs numbered; `refuse` maps a
    source to the refusal its (dry or real) runs meet."""

    name = "mysql://db:3306/hms"

    def __init__(self, drift: dict[str, int], refuse: dict[str, Refusal] | None = None, refuse_real: bool = False):
        self.drift, self.refuse, self.refuse_real = drift, refuse or {}, refuse_real
        self.requests: list = []

    def relocate(self, request):
        self.requests.append(request)
        refusal = self.refuse.get(request.old_prefix)
        if refusal is not None and (request.dry_run or self.refuse_real):
            raise RelocationRefused([refusal])
        out = report(request.old_prefix, {ObjectKind.TABLE: self.drift.get(request.old_prefix, 0)})
        if not request.dry_run:
            out.run_id, out.dry_run, out.status = f"run-{len(self.requests)}", False, "done"
        return out


def test_repair_runs_only_sources_with_drift_whole_catalog_never_forcing() -> None:
    engine = FakeEngine({OLD: 3, ALIAS: 0}, {"hdfs://z:1": Refusal("unstorable", "cannot store")})
    repair = repair_drift(engine, [OLD, ALIAS, "hdfs://z:1", OLD], NEW)
    real = [r for r in engine.requests if not r.dry_run]
    assert [r.old_prefix for r in real] == [OLD] and repair.rewritten == 3 and repair.run_ids == ("run-2",)
    assert all(r.scope == Scope() and r.skip_refused and not r.force_acid and not r.allow_scheme_change
               for r in engine.requests)
    assert [r.reason for r in repair.refusals] == ["unstorable"] and "hdfs://z:1" in repair.refusals[0].message


def test_a_given_scan_spares_the_dry_runs_unless_it_was_for_another_target() -> None:
    engine = FakeEngine({OLD: 2})
    scan = scan_drift(engine, [OLD, ALIAS], NEW)
    engine.requests.clear()
    repair_drift(engine, [OLD, ALIAS], NEW, scan=scan)
    assert [r.dry_run for r in engine.requests] == [False]
    engine.requests.clear()
    repair_drift(engine, [OLD], "hdfs://nn-c:8020", scan=scan)
    assert [r.dry_run for r in engine.requests] == [True, False]


def test_the_lock_defers_and_keeps_the_runs_already_done() -> None:
    locked = Refusal("locked", "another hivecat run holds catalog x")
    engine = FakeEngine({OLD: 1, ALIAS: 1}, {ALIAS: locked}, refuse_real=True)
    scan = DriftScan((SourceScan(OLD, NEW, report(OLD, {ObjectKind.TABLE: 1})),
                      SourceScan(ALIAS, NEW, report(ALIAS, {ObjectKind.TABLE: 1}))), ())
    with pytest.raises(RepairDeferred) as deferred:
        repair_drift(engine, [OLD, ALIAS], NEW, scan=scan)
    assert [r.run_id for r in deferred.value.runs] == ["run-1"] and "--" not in deferred.value.message
    with pytest.raises(RepairDeferred):
        scan_drift(FakeEngine({}, {OLD: locked}), [OLD], NEW)
