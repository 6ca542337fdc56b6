"""reconcile/clusterstorage.py without a server: which backends a catalog has, the registry write, and a
scan pass (report, repair, lock held, journal missing, backend unreachable) over a fake catalog that keeps
locations in a dict and relocates them with the location engine's own prefix rules."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from hivecat.catalog.connect import CatalogUnavailable
from hivecat.catalog.model import (
    KindCounts, ObjectKind, Refusal, RelocationRefused, RelocationReport, RelocationRequest)
from hivecat.catalog.targets import GlueTarget, SqlTarget, ThriftTarget
from hivecat.apierrors import SecretUnavailable
from hivecat.locations.prefix import rebase
from hivecat.act.clusterstorage import register, scan_pass
from hivecat.reconcile.clusterstorage import Backend, backends_of, registration_of
from hivecat.replication.registry import ClusterEntry, parse_registry_document
from hivecat.specs.clusterstorage import parse_cluster_storage
from hivecat.specs.errors import SpecInvalid
from hivecat.specs.hivecatalog import parse_hive_catalog

NOW = datetime(2026, 11, 25, 12, 0, 0, tzinfo=timezone.utc)
GLUE_FACTORY = "com.amazonaws.glue.catalog.metastore.AWSGlueDataCatalogHiveClientFactory"
OLD, NEW = "hdfs://nn-old:8020", "hdfs://nn-new:8020"


def hive_catalog(mode: str, database_type: str = "mariadb") -> object:
    factory = {"hive.metastore.client.factory.class": GLUE_FACTORY}
    classes = {"Thrift": (), "Glue": ("hive-site", "spark-hive-site"), "Hybrid": ("spark-hive-site",)}[mode]
    spec: dict = {"configurations": [{"classification": c, "properties": factory} for c in classes]}
    if mode != "Glue":
        spec["database"] = ({"type": "derby"} if database_type == "derby" else
                            {"type": database_type, "host": "db", "name": "hms", "user": "hive",
                             "passwordSecretRef": {"name": "db"}})
    if mode != "Thrift":
        spec["glue"] = {"region": "eu-west-1", "credentialsSecretRef": {"name": "aws"}}
    return parse_hive_catalog({"metadata": {"name": "sales", "namespace": "data", "uid": "u", "generation": 1},
                               "spec": spec}, default_image="apache/hive:3.1.3")


def storage(repair: str = "DryRun", aliases: tuple[str, ...] = (), filesystem: str = NEW) -> object:
    spec = {"catalogRef": {"name": "sales"}, "filesystem": filesystem, "repair": repair}
    if aliases:
        spec["aliases"] = list(aliases)
    return parse_cluster_storage({"metadata": {"name": "main", "namespace": "data"}, "spec": spec},
                                 default_scan_interval=1800)


class FakeCatalog:
    """Locations by (kind, id); relocate() rewrites (or counts) those under the old prefix."""

    def __init__(self, locations: dict[tuple[ObjectKind, int], str], *, locked: bool = False) -> None:
        self.name, self.locations, self.locked = "fake://sales", dict(locations), locked
        self.runs: list[RelocationRequest] = []
        self.closed = False

    def relocate(self, request: RelocationRequest) -> RelocationReport:
        if self.locked:
            raise RelocationRefused([Refusal("locked", "another hivecat run holds catalog fake://sales")])
        report = RelocationReport("dry-run" if request.dry_run else f"run-{len(self.runs) + 1}", self.name,
                                  request.old_prefix, request.new_prefix, request.dry_run)
        for (kind, key), value in sorted(self.locations.items()):
            moved = rebase(value, request.old_prefix, request.new_prefix)
            if moved is None:
                continue
            report.counts.setdefault(kind, KindCounts()).rewritten += 1
            report.add_sample(value, moved)
            if not request.dry_run:
                self.locations[(kind, key)] = moved
        if not request.dry_run:
            self.runs.append(request)
        return report

    def close(self) -> None:
        self.closed = True


class FakePorts:
    def __init__(self, catalogs: dict[str, object] | None = None, document: str | None = None,
                 failure: Exception | None = None) -> None:
        self.catalogs, self.document, self.failure = catalogs or {}, document, failure
        self.writes: list[str] = []

    def registry_document(self, catalog: str) -> str | None:
        return self.document

    def write_registry(self, catalog: str, document: str) -> None:
        self.writes.append(document)
        self.document = document

    def open(self, backend: Backend) -> object:
        if self.failure is not None:
            raise self.failure
        return self.catalogs[backend.label]


def drifted_locations() -> dict[tuple[ObjectKind, int], str]:
    return {(ObjectKind.DATABASE, 1): f"{OLD}/warehouse/sales.db",
            (ObjectKind.TABLE, 1): f"{OLD}/warehouse/sales.db/orders",
            (ObjectKind.PARTITION, 1): f"{OLD}/warehouse/sales.db/orders/dt=1",
            (ObjectKind.PARTITION, 2): f"{OLD}/warehouse/sales.db/orders/dt=2",
            (ObjectKind.TABLE, 2): "s3://elsewhere/t"}


# --- backends ----------------------------------------------------------------------------------------------

def test_backends_follow_the_catalog_mode() -> None:
    [sql] = backends_of(hive_catalog("Thrift"), "Database", None)
    assert sql.target == SqlTarget("mysql", "db", "hms", "hive", 3306) and sql.password.name == "db"
    assert not sql.journaled_elsewhere
    [glue] = backends_of(hive_catalog("Glue"), "Database", None)
    assert glue.target == GlueTarget("eu-west-1") and glue.glue_credentials.name == "aws" and glue.journaled_elsewhere
    assert [b.label for b in backends_of(hive_catalog("Hybrid"), "Database", None)] == ["Database", "Glue"]


def test_thrift_access_goes_to_the_service_or_the_address_override() -> None:
    [service] = backends_of(hive_catalog("Thrift"), "Thrift", None)
    assert service.target == ThriftTarget("sales-metastore.data.svc", 9083) and service.journaled_elsewhere
    [override] = backends_of(hive_catalog("Thrift"), "Thrift", ("127.0.0.1", 19083))  # the policy's address
    assert override.target == ThriftTarget("127.0.0.1", 19083)


def test_an_embedded_derby_metastore_is_scanned_only_through_thrift() -> None:
    with pytest.raises(SpecInvalid) as refused:
        backends_of(hive_catalog("Thrift", "derby"), "Database", None)
    assert refused.value.reason == "DatabaseNotScannable" and "Thrift" in refused.value.message
    assert backends_of(hive_catalog("Thrift", "derby"), "Thrift", None)[0].label == "Metastore"


# --- registry ----------------------------------------------------------------------------------------------

def test_register_writes_only_when_the_document_changes() -> None:
    ports = FakePorts()
    members = [ClusterEntry("a", "hdfs://nn1:8020"), ClusterEntry("b", "hdfs://nn1:8020")]
    decision = register("sales", members, ports)
    assert len(ports.writes) == 1 and set(parse_registry_document(ports.document)) == {"a"}
    assert registration_of("a", decision).status == "True"
    refused = registration_of("b", decision)
    assert (refused.status, refused.reason) == ("False", "DuplicateFilesystem") and "a" in refused.message
    register("sales", members, ports)
    assert len(ports.writes) == 1  # unchanged: no second write


# --- scans and repairs -------------------------------------------------------------------------------------

def test_dry_run_reports_the_plan_and_writes_nothing() -> None:
    fake = FakeCatalog(drifted_locations())
    outcome = scan_pass(storage("DryRun"), [OLD], [Backend("Database", SqlTarget("mysql", "db", "hms", "hive"))],
                        FakePorts({"Database": fake}), journal_configured=False, clock=lambda: NOW)
    assert fake.runs == [] and fake.closed
    assert outcome.drift["driftedLocations"] == 4
    assert outcome.drift["counts"] == {"database": 1, "partition": 2, "table": 1}
    assert outcome.drift["sources"] == [{"from": OLD, "to": NEW, "locations": 4,
                                         "counts": {"database": 1, "partition": 2, "table": 1}}]
    assert outcome.drift["lastScanTime"] == "2026-11-25T12:00:00Z"
    [drifted] = outcome.conditions
    assert (drifted.type, drifted.status, drifted.reason) == ("Drifted", "True", "Drifted")
    assert outcome.phase == "Drifted" and outcome.events == []


def test_off_reports_counts_without_the_plan() -> None:
    outcome = scan_pass(storage("Off"), [OLD], [Backend("Database", SqlTarget("mysql", "db", "hms", "hive"))],
                        FakePorts({"Database": FakeCatalog(drifted_locations())}), journal_configured=True,
                        clock=lambda: NOW)
    assert outcome.drift["driftedLocations"] == 4 and "sources" not in outcome.drift and "sample" not in outcome.drift


def test_auto_repairs_records_the_run_and_scans_again() -> None:
    fake = FakeCatalog(drifted_locations())
    outcome = scan_pass(storage("Auto"), [OLD], [Backend("Database", SqlTarget("mysql", "db", "hms", "hive"))],
                        FakePorts({"Database": fake}), journal_configured=False, clock=lambda: NOW)
    assert len(fake.runs) == 1 and fake.locations[(ObjectKind.TABLE, 1)] == f"{NEW}/warehouse/sales.db/orders"
    assert fake.locations[(ObjectKind.TABLE, 2)] == "s3://elsewhere/t"
    assert outcome.drift["driftedLocations"] == 0
    assert outcome.drift["lastRepairRunId"] == "run-1" and outcome.drift["lastRepairRewritten"] == 4
    assert outcome.drift["lastRepairTime"] == "2026-11-25T12:00:00Z"
    [(type_, reason, message)] = outcome.events
    assert (type_, reason) == ("Normal", "DriftRepaired") and "run-1" in message and "rewrote 4" in message
    assert outcome.conditions[-1].status == "False" and outcome.phase == "Ready"


def test_a_later_scan_keeps_the_last_repair() -> None:
    outcome = scan_pass(storage("Auto"), [OLD], [Backend("Database", SqlTarget("mysql", "db", "hms", "hive"))],
                        FakePorts({"Database": FakeCatalog({})}), journal_configured=True, clock=lambda: NOW,
                        last_drift={"lastRepairRunId": "run-0", "lastRepairRewritten": 7, "pendingRepair": "x"})
    assert outcome.drift["lastRepairRunId"] == "run-0" and outcome.drift["lastRepairRewritten"] == 7
    assert "pendingRepair" not in outcome.drift


def test_a_glue_repair_without_a_journal_database_is_reported_not_run() -> None:
    fake = FakeCatalog(drifted_locations())
    outcome = scan_pass(storage("Auto"), [OLD], [Backend("Glue", GlueTarget("eu-west-1"), journaled_elsewhere=True)],
                        FakePorts({"Glue": fake}), journal_configured=False, clock=lambda: NOW)
    assert fake.runs == [] and outcome.drift["driftedLocations"] == 4
    assert "journal" in outcome.drift["pendingRepair"] and outcome.events == []


def test_a_held_lock_defers_and_says_so() -> None:
    fake = FakeCatalog(drifted_locations(), locked=True)
    outcome = scan_pass(storage("Auto"), [OLD], [Backend("Database", SqlTarget("mysql", "db", "hms", "hive"))],
                        FakePorts({"Database": fake}), journal_configured=True, clock=lambda: NOW)
    assert outcome.drift is None and outcome.retry_soon and fake.closed
    [condition] = outcome.conditions
    assert (condition.status, condition.reason) == ("Unknown", "RelocationInProgress")
    assert "tried again later" in condition.message


def test_a_repair_whose_journal_cannot_be_written_is_a_condition_and_writes_nothing() -> None:
    from hivecat.catalog.journal import JournalUnavailable

    class NoJournal(FakeCatalog):
        def relocate(self, request: RelocationRequest) -> RelocationReport:
            if not request.dry_run:
                raise JournalUnavailable("hive may not create or write the relocation journal: grant it")
            return super().relocate(request)

    fake = NoJournal(drifted_locations())
    outcome = scan_pass(storage("Auto"), [OLD], [Backend("Database", SqlTarget("mysql", "db", "hms", "hive"))],
                        FakePorts({"Database": fake}), journal_configured=True, clock=lambda: NOW)
    assert fake.runs == [] and fake.locations == drifted_locations() and fake.closed
    assert outcome.phase == "Degraded" and not outcome.retry_soon
    [condition] = outcome.conditions
    assert (condition.type, condition.status, condition.reason) == ("Drifted", "Unknown", "JournalUnavailable")
    assert condition.message == "Database: hive may not create or write the relocation journal: grant it"


@pytest.mark.parametrize("failure, reason", [
    (CatalogUnavailable("AuthenticationFailed", "access denied"), "AuthenticationFailed"),
    (SecretUnavailable("SecretNotFound", "Secret db not found"), "SecretNotFound"),
])
def test_a_backend_that_cannot_be_opened_is_a_condition(failure: Exception, reason: str) -> None:
    outcome = scan_pass(storage("Auto"), [OLD], [Backend("Database", SqlTarget("mysql", "db", "hms", "hive"))],
                        FakePorts(failure=failure), journal_configured=True, clock=lambda: NOW)
    assert outcome.drift is None and outcome.phase == "Degraded"
    [condition] = outcome.conditions
    assert (condition.type, condition.status, condition.reason) == ("Drifted", "Unknown", reason)


def test_hybrid_scans_both_backends_and_adds_them_up() -> None:
    database, glue = FakeCatalog(drifted_locations()), FakeCatalog({(ObjectKind.TABLE, 9): f"{OLD}/t9"})
    outcome = scan_pass(storage("DryRun", aliases=()), [OLD],
                        [Backend("Database", SqlTarget("mysql", "db", "hms", "hive")),
                         Backend("Glue", GlueTarget("eu-west-1"), journaled_elsewhere=True)],
                        FakePorts({"Database": database, "Glue": glue}), journal_configured=False, clock=lambda: NOW)
    assert outcome.drift["driftedLocations"] == 5 and outcome.drift["counts"]["table"] == 2
    assert [s["locations"] for s in outcome.drift["sources"]] == [4, 1]
