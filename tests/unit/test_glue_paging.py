"""GlueCatalog against a paging fake that enforces AWS's limits (moto does not): paging, segments, batch
sizes, per-entry Errors, VersionId conflicts, Expression push-down and its fallback, resume, undo, refusals;
replica bookkeeping parameters written in batches, compare-and-set."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
import sqlalchemy as sa
from botocore.exceptions import ClientError

from hivecat.catalog.glue import GlueCatalog
from hivecat.catalog.model import PARTITION_GONE, ObjectKind, RelocationRefused, RelocationRequest, Scope, UnitParams
from support.fake_glue import FakeGlue

OLD, NEW = "s3://old-lake/wh", "s3://new-lake/wh"
PARTITIONS = 250


def build(glue: FakeGlue) -> FakeGlue:
    glue.add_database("sales", f"{OLD}/sales.db")
    glue.add_database("other", "s3://elsewhere/other.db")
    for i in range(12):  # more tables than one fake page
        glue.add_table("sales", f"t{i:02d}", f"{OLD}/sales.db/t{i:02d}")
    glue.add_table("sales", "events", f"{OLD}/sales.db/events", keys={"dt": "string", "n": "int"},
                   params={"path": f"{OLD}/sales.db/events", "note": f"{OLD}/sales.db/not-a-location-key"},
                   serde={"path": f"{OLD}/sales.db/events", "avro.schema.url": f"{OLD}/schemas/e.avsc"},
                   skewed={"('x')": f"{OLD}/sales.db/events/skew_x"})
    for i in range(PARTITIONS):
        day = (dt.date(2026, 1, 1) + dt.timedelta(days=i)).isoformat()
        glue.add_partition("sales", "events", (day, str(i)), f"{OLD}/sales.db/events/dt={day}/n={i}",
                           params={"path": f"{OLD}/sales.db/events/dt={day}/n={i}"})
    glue.add_table("other", "keep", "s3://elsewhere/other.db/keep")
    glue.add_function("sales", "udf", [f"{OLD}/jars/udf.jar", "s3://elsewhere/jars/dep.jar"])
    return glue


@pytest.fixture
def glue() -> FakeGlue:
    return build(FakeGlue())


@pytest.fixture
def journal_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'journal.db'}"


def catalog(glue: FakeGlue, journal_url: str, **kwargs) -> GlueCatalog:
    return GlueCatalog("eu-west-1", client=glue, journal_url=journal_url, **kwargs)


def locations(glue: FakeGlue) -> list[str]:
    """Every location-valued string the fake holds (to check nothing under OLD is left)."""
    found: list[str] = []

    def walk(value):
        if isinstance(value, dict):
            for v in value.values():
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)
        elif isinstance(value, str) and "://" in value:
            found.append(value)
    walk(glue.state())
    return found


def calls(glue: FakeGlue, operation: str) -> list[dict]:
    return [params for op, params in glue.calls if op == operation]


def test_fake_enforces_the_limits_it_claims(glue: FakeGlue) -> None:
    with pytest.raises(ClientError, match="MaxResults"):
        glue.get_partitions(DatabaseName="sales", TableName="events", MaxResults=1001)
    entries = [{"PartitionValueList": ["x", str(i)], "PartitionInput": {"Values": ["x", str(i)]}} for i in range(101)]
    with pytest.raises(ClientError, match="more than 100"):
        glue.batch_update_partition(DatabaseName="sales", TableName="events", Entries=entries)
    with pytest.raises(Exception, match="VersionId"):  # boto3's validation: read-only fields are not input
        glue.update_table(DatabaseName="sales", TableInput={"Name": "t00", "VersionId": "1"})


def test_every_page_is_read(glue: FakeGlue, journal_url: str) -> None:
    cat = catalog(glue, journal_url)
    assert sorted(d.name for d in cat.list_databases()) == ["other", "sales"]
    assert len(list(cat.list_tables("sales"))) == 13
    parts = list(cat.list_partitions("sales", "events"))
    assert len(parts) == PARTITIONS == len({p.values for p in parts})
    pages = calls(glue, "GetPartitions")
    assert len(pages) == -(-PARTITIONS // glue.page_size)  # one call per fake page, none skipped
    assert all(p["MaxResults"] == 1000 for p in pages)
    assert all(p["MaxResults"] == 100 for p in calls(glue, "GetTables") + calls(glue, "GetDatabases"))


@pytest.mark.parametrize("segments", [2, 4, 10])
def test_segments_cover_every_partition_exactly_once(glue: FakeGlue, journal_url: str, segments: int) -> None:
    parts = list(catalog(glue, journal_url, segments=segments).list_partitions("sales", "events"))
    assert sorted(p.values for p in parts) == sorted(glue.partitions[("sales", "events")])
    seen = {(c["Segment"]["SegmentNumber"], c["Segment"]["TotalSegments"]) for c in calls(glue, "GetPartitions")}
    assert seen == {(n, segments) for n in range(segments)}


def test_segments_outside_glue_limits_are_refused(glue: FakeGlue, journal_url: str) -> None:
    for segments in (0, 11):
        with pytest.raises(ValueError, match="segments must be 1..10"):
            catalog(glue, journal_url, segments=segments)


def test_relocation_moves_everything_in_batches_of_at_most_100(glue: FakeGlue, journal_url: str) -> None:
    before = glue.state()
    report = catalog(glue, journal_url).relocate(RelocationRequest(OLD, NEW))
    batches = calls(glue, "BatchUpdatePartition")
    assert [len(b["Entries"]) for b in batches] == [100, 100, 50]
    assert report.count(ObjectKind.PARTITION).rewritten == PARTITIONS
    assert report.count(ObjectKind.PARTITION_PARAM).rewritten == PARTITIONS
    assert report.count(ObjectKind.TABLE).rewritten == 13
    assert report.count(ObjectKind.SERDE_PARAM).rewritten == 2          # path and avro.schema.url
    assert report.count(ObjectKind.TABLE_PARAM).rewritten == 1          # path; `note` is not a named key
    assert report.count(ObjectKind.TABLE_PARAM).skipped == 1
    assert report.count(ObjectKind.SKEWED_LOCATION).rewritten == 1
    assert report.count(ObjectKind.DATABASE).rewritten == 1
    assert report.count(ObjectKind.FUNCTION_RESOURCE).rewritten == 1
    assert report.conflicted == report.failed == 0 and report.status == "done"
    assert "sales.events" in report.tables_touched and "other.keep" not in report.tables_touched
    left = [loc for loc in locations(glue) if loc.startswith(OLD)]
    assert left == [f"{OLD}/sales.db/not-a-location-key"]
    assert glue.functions[("sales", "udf")]["ResourceUris"][1]["Uri"] == "s3://elsewhere/jars/dep.jar"
    assert glue.tables[("other", "keep")] == before["tables"][("other", "keep")]
    # every table write carried the VersionId read just before it
    assert all("VersionId" in c for c in calls(glue, "UpdateTable"))


def test_per_entry_errors_are_counted_never_silent(glue: FakeGlue, journal_url: str) -> None:
    day = lambda i: (dt.date(2026, 1, 1) + dt.timedelta(days=i)).isoformat()  # noqa: E731
    failing, vanished = (day(5), "5"), (day(7), "7")
    glue.entry_errors = {failing: "InternalServiceException", vanished: "EntityNotFoundException"}
    report = catalog(glue, journal_url).relocate(RelocationRequest(OLD, NEW, Scope("sales", "events")))
    counts = report.count(ObjectKind.PARTITION)
    assert (counts.rewritten, counts.failed, counts.conflicted) == (PARTITIONS - 2, 1, 1)
    assert report.status == "partial" and any("InternalServiceException" in e for e in report.errors)
    parts = glue.partitions[("sales", "events")]
    assert parts[failing]["StorageDescriptor"]["Location"].startswith(OLD)
    assert parts[vanished]["StorageDescriptor"]["Location"].startswith(OLD)


def test_version_conflict_on_a_table_is_reported_not_clobbered(glue: FakeGlue, journal_url: str) -> None:
    def someone_else_changes_the_table(params: dict) -> None:
        if params["TableInput"]["Name"] == "t03":
            glue.tables[("sales", "t03")]["StorageDescriptor"]["Location"] = "s3://theirs/t03"
            glue.versions[("sales", "t03")] += 1
    glue.before["UpdateTable"] = someone_else_changes_the_table
    report = catalog(glue, journal_url).relocate(RelocationRequest(OLD, NEW, Scope("sales")))
    assert report.count(ObjectKind.TABLE).conflicted == 1
    assert glue.tables[("sales", "t03")]["StorageDescriptor"]["Location"] == "s3://theirs/t03"
    assert glue.tables[("sales", "t04")]["StorageDescriptor"]["Location"] == f"{NEW}/sales.db/t04"


def test_partition_changed_after_planning_is_conflicted(glue: FakeGlue, journal_url: str) -> None:
    victim = next(iter(glue.partitions[("sales", "events")]))

    def change_before_reread(params: dict) -> None:
        glue.partitions[("sales", "events")][victim]["StorageDescriptor"]["Location"] = "s3://theirs/p"
        glue.before.pop("BatchGetPartition")
    glue.before["BatchGetPartition"] = change_before_reread
    report = catalog(glue, journal_url).relocate(RelocationRequest(OLD, NEW, Scope("sales", "events")))
    assert report.count(ObjectKind.PARTITION).conflicted == 1
    assert report.count(ObjectKind.PARTITION).rewritten == PARTITIONS - 1
    assert glue.partitions[("sales", "events")][victim]["StorageDescriptor"]["Location"] == "s3://theirs/p"


def test_expression_is_sent_and_the_filter_is_applied(glue: FakeGlue, journal_url: str) -> None:
    request = RelocationRequest(OLD, NEW, Scope("sales", "events", "dt >= '2026-03-01' AND n < 100"))
    report = catalog(glue, journal_url).relocate(request)
    assert {c.get("Expression") for c in calls(glue, "GetPartitions")} == {"(dt >= '2026-03-01') AND (n < 100)"}
    moved = {v for v, p in glue.partitions[("sales", "events")].items()
             if p["StorageDescriptor"]["Location"].startswith(NEW)}
    expected = {v for v in glue.partitions[("sales", "events")] if v[0] >= "2026-03-01" and int(v[1]) < 100}
    assert moved == expected and report.count(ObjectKind.PARTITION).rewritten == len(expected) == 41
    assert ObjectKind.TABLE not in report.counts  # a partition filter touches partitions only


def test_filter_glue_cannot_express_falls_back_to_client_side(glue: FakeGlue, journal_url: str) -> None:
    glue.add_partition("sales", "events", ("50%", "1000"), f"{OLD}/sales.db/events/odd")
    request = RelocationRequest(OLD, NEW, Scope("sales", "events", "dt LIKE '50\\\\%'"))
    report = catalog(glue, journal_url).relocate(request)
    assert all("Expression" not in c for c in calls(glue, "GetPartitions"))
    assert report.count(ObjectKind.PARTITION).rewritten == 1
    assert glue.partitions[("sales", "events")][("50%", "1000")]["StorageDescriptor"]["Location"] == \
        f"{NEW}/sales.db/events/odd"


class Crash(Exception):
    """Stands for the process dying (not a ClientError: nothing handles it)."""


def test_crashed_run_resumes_and_undo_restores_exactly(glue: FakeGlue, journal_url: str) -> None:
    before = glue.state()
    batches = []

    def crash_on_second_batch(params: dict) -> None:
        batches.append(1)
        if len(batches) == 2:
            raise Crash()
    glue.before["BatchUpdatePartition"] = crash_on_second_batch
    request = RelocationRequest(OLD, NEW)
    planned = catalog(glue, journal_url).relocate(RelocationRequest(OLD, NEW, dry_run=True))
    only_planning_knows = {k: (c.skipped, c.refused) for k, c in planned.counts.items() if c.skipped or c.refused}
    assert only_planning_knows  # the fixture holds values the run leaves alone: the resumed report must keep them
    with pytest.raises(Crash):
        catalog(glue, journal_url).relocate(request)
    moved = sum(p["StorageDescriptor"]["Location"].startswith(NEW) for p in glue.partitions[("sales", "events")].values())
    assert moved == 100

    cat = catalog(glue, journal_url)
    with pytest.raises(RelocationRefused) as refused:  # another request while the run is unfinished
        cat.relocate(RelocationRequest(OLD, "s3://third/wh"))
    assert refused.value.refusals[0].reason == "unfinished-run"
    glue.before.clear()
    report = cat.relocate(request)
    assert report.count(ObjectKind.PARTITION).rewritten == PARTITIONS
    assert {k: (c.skipped, c.refused) for k, c in report.counts.items() if c.skipped or c.refused} == only_planning_knows
    assert not [loc for loc in locations(glue) if loc.startswith(f"{OLD}/sales.db/events/")]
    assert [r.status for r in cat.history()] == ["done"]

    undone = cat.undo(report.run_id)
    assert undone.count(ObjectKind.PARTITION).rewritten == PARTITIONS and undone.conflicted == 0
    assert glue.state() == before


def test_crash_after_a_write_before_its_journal_update_is_recovered(glue: FakeGlue, journal_url: str,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """The write landed, the journal still says planned: resume sees the new value and marks it applied."""
    before = glue.state()
    cat = catalog(glue, journal_url)
    original = cat.journal.set_states
    monkeypatch.setattr(cat.journal, "set_states", lambda *a: (_ for _ in ()).throw(Crash()))
    with pytest.raises(Crash):
        cat.relocate(RelocationRequest(OLD, NEW, Scope("sales")))
    monkeypatch.setattr(cat.journal, "set_states", original)
    assert glue.databases["sales"]["LocationUri"] == f"{NEW}/sales.db"  # written, not journaled as applied
    report = cat.relocate(RelocationRequest(OLD, NEW, Scope("sales")))
    assert report.count(ObjectKind.DATABASE).rewritten == 1 and report.conflicted == 0
    cat.undo(report.run_id)
    assert glue.state() == before


def test_undo_leaves_values_someone_changed_since(glue: FakeGlue, journal_url: str) -> None:
    cat = catalog(glue, journal_url)
    report = cat.relocate(RelocationRequest(OLD, NEW, Scope("sales", "t01")))
    glue.tables[("sales", "t01")]["StorageDescriptor"]["Location"] = "s3://theirs/t01"
    undone = cat.undo(report.run_id)
    assert undone.count(ObjectKind.TABLE).conflicted == 1
    assert glue.tables[("sales", "t01")]["StorageDescriptor"]["Location"] == "s3://theirs/t01"
    with pytest.raises(RelocationRefused, match="already undone"):
        cat.undo(report.run_id)


@pytest.mark.parametrize("request_,reason", [
    (RelocationRequest(OLD, "hdfs://nn:8020/wh"), "scheme-change"),
    (RelocationRequest(OLD, f"{OLD}/sub"), "overlap"),
    (RelocationRequest("relative/path", NEW), "invalid-uri"),
    (RelocationRequest(OLD, NEW, Scope("nope")), "not-found"),
    (RelocationRequest(OLD, NEW, Scope("sales", "nope")), "not-found"),
    (RelocationRequest(OLD, NEW, Scope("sales", "events", "nokey = 'x'")), "invalid-filter"),
    (RelocationRequest(OLD, NEW, Scope("sales", "ice")), "iceberg"),
    (RelocationRequest(OLD, NEW, Scope("sales", "acid")), "acid"),
    (RelocationRequest(OLD, NEW), "iceberg"),
])
def test_refusals_write_nothing(glue: FakeGlue, journal_url: str, request_: RelocationRequest, reason: str) -> None:
    glue.add_table("sales", "ice", f"{OLD}/sales.db/ice", params={"table_type": "ICEBERG"})
    glue.add_table("sales", "acid", f"{OLD}/sales.db/acid", params={"transactional": "true"})
    before = glue.state()
    with pytest.raises(RelocationRefused) as refused:
        catalog(glue, journal_url).relocate(request_)
    assert reason in {r.reason for r in refused.value.refusals}
    assert glue.writes() == [] and glue.state() == before


def test_skip_refused_and_force_acid(glue: FakeGlue, journal_url: str) -> None:
    glue.add_table("sales", "ice", f"{OLD}/sales.db/ice", params={"metadata_location": f"{OLD}/ice/m.json"})
    glue.add_table("sales", "acid", f"{OLD}/sales.db/acid", params={"transactional": "true"})
    report = catalog(glue, journal_url).relocate(RelocationRequest(OLD, NEW, Scope("sales"), force_acid=True,
                                                                   skip_refused=True))
    assert [r.table for r in report.refusals] == ["sales.ice"]
    assert report.count(ObjectKind.TABLE).refused == 1
    assert glue.tables[("sales", "ice")]["StorageDescriptor"]["Location"] == f"{OLD}/sales.db/ice"
    assert glue.tables[("sales", "acid")]["StorageDescriptor"]["Location"] == f"{NEW}/sales.db/acid"


def test_locked_catalog_is_refused(glue: FakeGlue, journal_url: str) -> None:
    cat = catalog(glue, journal_url)
    cat.journal.ensure(locks=True)
    with cat.engine.begin() as conn:
        conn.execute(cat.journal.locks.insert().values(
            catalog=cat.name, owner="another-host:1", acquired_at=dt.datetime.now(),
            expires_at=dt.datetime.now() + dt.timedelta(hours=1)))
    with pytest.raises(RelocationRefused) as refused:
        cat.relocate(RelocationRequest(OLD, NEW))
    assert refused.value.refusals[0].reason == "locked" and glue.writes() == []
    with cat.engine.begin() as conn:  # an expired lock is stale: the next run takes it over
        conn.execute(cat.journal.locks.update().values(expires_at=dt.datetime(2000, 1, 1)))
    assert cat.relocate(RelocationRequest(OLD, NEW, Scope("sales", "t00"))).rewritten == 1


def test_dry_run_writes_nothing_not_even_the_journal(glue: FakeGlue, tmp_path: Path) -> None:
    journal = tmp_path / "journal.db"
    before = glue.state()
    report = catalog(glue, f"sqlite:///{journal}").relocate(RelocationRequest(OLD, NEW, dry_run=True))
    assert report.status == "dry-run" and report.count(ObjectKind.PARTITION).rewritten == PARTITIONS
    assert report.sample and all(new.startswith(NEW) for _, new in report.sample)
    assert "sales.events" in report.tables_touched
    assert glue.writes() == [] and glue.state() == before
    assert not journal.exists() or not sa.inspect(sa.create_engine(f"sqlite:///{journal}")).get_table_names()


def test_set_and_remove_params(glue: FakeGlue, journal_url: str) -> None:
    cat = catalog(glue, journal_url)
    cat.set_params("sales", "t00", {"replica": "b"})
    day = (dt.date(2026, 1, 1)).isoformat()
    cat.set_params("sales", "events", {"replica": "b"}, partition_values=[day, "0"])
    assert glue.tables[("sales", "t00")]["Parameters"] == {"replica": "b"}
    assert glue.partitions[("sales", "events")][(day, "0")]["Parameters"]["replica"] == "b"
    cat.remove_params("sales", "events", ["replica"], partition_values=[day, "0"])
    assert "replica" not in glue.partitions[("sales", "events")][(day, "0")]["Parameters"]


# --- replica bookkeeping: update_unit_params --------------------------------------------------------------

def day(i: int) -> str:
    return (dt.date(2026, 1, 1) + dt.timedelta(days=i)).isoformat()


def events(glue: FakeGlue) -> dict:
    return glue.partitions[("sales", "events")]


def recorded(i: int) -> UnitParams:
    """Partition i's copy on cluster c2, recorded against the location it was taken from."""
    return UnitParams((day(i), str(i)), f"{OLD}/sales.db/events/dt={day(i)}/n={i}",
                      {"hivecat.replica.c2.location": f"s3://c2/events/{i}", "hivecat.replica.c2.checksum": f"x{i}"})


def test_unit_params_go_in_batches_of_at_most_100_and_conflicts_are_not_written(glue: FakeGlue,
                                                                               journal_url: str) -> None:
    moved, dropped = (day(7), "7"), (day(130), "130")
    events(glue)[moved]["StorageDescriptor"]["Location"] = "s3://theirs/p7"  # changed after planning
    del events(glue)[dropped]
    outcome = catalog(glue, journal_url).update_unit_params("sales", "events", [recorded(i) for i in range(PARTITIONS)])
    assert outcome.written == PARTITIONS - 2 and outcome.failed == ()
    assert dict(outcome.conflicts) == {
        moved: f"location is now 's3://theirs/p7', expected '{OLD}/sales.db/events/dt={day(7)}/n=7'",
        dropped: PARTITION_GONE}
    assert [len(c["Entries"]) for c in calls(glue, "BatchUpdatePartition")] == [99, 99, 50]
    assert all(len(c["PartitionsToGet"]) <= 100 for c in calls(glue, "BatchGetPartition"))
    assert "hivecat.replica.c2.location" not in events(glue)[moved]["Parameters"]
    assert dropped not in events(glue)
    for i in (0, 99, 100, 249):
        part = events(glue)[(day(i), str(i))]
        assert part["Parameters"] == {"path": part["StorageDescriptor"]["Location"],  # the others are kept
                                      "hivecat.replica.c2.location": f"s3://c2/events/{i}",
                                      "hivecat.replica.c2.checksum": f"x{i}"}
        assert part["StorageDescriptor"]["Location"] == f"{OLD}/sales.db/events/dt={day(i)}/n={i}"


def test_units_that_already_hold_their_parameters_are_not_written_again(glue: FakeGlue, journal_url: str) -> None:
    cat = catalog(glue, journal_url)
    units = [recorded(i) for i in range(PARTITIONS)]
    assert cat.update_unit_params("sales", "events", units).written == PARTITIONS
    glue.calls.clear()
    assert cat.update_unit_params("sales", "events", units).written == PARTITIONS
    assert calls(glue, "BatchUpdatePartition") == [] and len(calls(glue, "BatchGetPartition")) == 3


def test_removal_ignores_the_location_and_keeps_other_keys(glue: FakeGlue, journal_url: str) -> None:
    cat = catalog(glue, journal_url)
    cat.update_unit_params("sales", "events", [recorded(i) for i in range(PARTITIONS)])
    events(glue)[(day(3), "3")]["StorageDescriptor"]["Location"] = "s3://theirs/p3"
    keys = ("hivecat.replica.c2.location", "hivecat.replica.c2.checksum", "hivecat.replica.c2.syncedAt")
    outcome = cat.update_unit_params("sales", "events",
                                     [UnitParams((day(i), str(i)), None, remove=keys) for i in range(PARTITIONS)])
    assert (outcome.written, outcome.conflicts) == (PARTITIONS, ())
    assert all(set(p["Parameters"]) == {"path"} for p in events(glue).values())


def test_table_level_units_are_compare_and_set_too(glue: FakeGlue, journal_url: str) -> None:
    cat = catalog(glue, journal_url)
    ok = cat.update_unit_params("sales", "t00", [UnitParams(None, f"{OLD}/sales.db/t00", {"k": "v"})])
    assert (ok.written, ok.conflicts) == (1, ()) and glue.tables[("sales", "t00")]["Parameters"] == {"k": "v"}
    stale = cat.update_unit_params("sales", "t01", [UnitParams(None, "s3://elsewhere/t01", {"k": "v"})])
    assert stale.written == 0 and stale.conflicts[0][0] is None and "expected 's3://elsewhere/t01'" in stale.conflicts[0][1]

    def someone_else_changes_the_table(params: dict) -> None:  # between our read and our write
        glue.versions[("sales", "t02")] += 1
    glue.before["UpdateTable"] = someone_else_changes_the_table
    raced = cat.update_unit_params("sales", "t02", [UnitParams(None, f"{OLD}/sales.db/t02", {"k": "v"})])
    assert raced.written == 0 and "ConcurrentModificationException" in raced.conflicts[0][1]
    assert glue.tables[("sales", "t01")]["Parameters"] == glue.tables[("sales", "t02")]["Parameters"] == {}


def test_entry_errors_are_failed_or_conflicted_per_unit(glue: FakeGlue, journal_url: str) -> None:
    failing, vanished = (day(5), "5"), (day(6), "6")
    glue.entry_errors = {failing: "InternalServiceException", vanished: "EntityNotFoundException"}
    outcome = catalog(glue, journal_url).update_unit_params("sales", "events", [recorded(i) for i in range(10)])
    assert outcome.written == 8
    assert [v for v, _ in outcome.failed] == [failing] and "InternalServiceException" in outcome.failed[0][1]
    assert [v for v, _ in outcome.conflicts] == [vanished]


def test_bad_batches_are_refused_before_any_write(glue: FakeGlue, journal_url: str) -> None:
    cat = catalog(glue, journal_url)
    with pytest.raises(ValueError, match="listed twice"):
        cat.update_unit_params("sales", "events", [recorded(1), recorded(2), recorded(1)])
    with pytest.raises(ValueError, match="2 partition keys"):
        cat.update_unit_params("sales", "events", [UnitParams((day(1),), None, {"k": "v"})])
    with pytest.raises(LookupError, match="sales.nope"):
        cat.update_unit_params("sales", "nope", [UnitParams(None, None, {"k": "v"})])
    with pytest.raises(LookupError, match="does not exist"):
        cat.set_params("sales", "events", {"k": "v"}, partition_values=["1999-01-01", "0"])
    assert glue.writes() == []
