"""A ClusterStorage's two jobs, each one pass over `StoragePorts`: register the cluster in its catalog's
registry (resolve the catalog → validate against the other clusters → write clusters.json), and scan the
catalog for "Wrong FS" drift, repairing it when asked (open the catalog's backends → dry-run each drift
source → relocate → status).

Which backends a catalog has follows its mode: Thrift → its metastore database (or, when the
ClusterStorage asks for it, the metastore's Thrift API); Glue → Glue; Hybrid → both, since Hive clients read
the metastore and Spark clients read Glue. Each is opened from the HiveCatalog's spec and Secrets, never
from anything the ClusterStorage says about credentials.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Protocol

from sqlalchemy.exc import DBAPIError, SQLAlchemyError

from hivecat import reasons
from hivecat.apierrors import SecretUnavailable
from hivecat.catalog.base import Catalog
from hivecat.catalog.connect import CatalogUnavailable, first_line
from hivecat.catalog.drift import DriftRepair, DriftScan, RepairDeferred, repair_drift, scan_drift
from hivecat.catalog.journal import JournalUnavailable
from hivecat.catalog.model import RelocationReport
from hivecat.catalog.targets import CatalogTarget, GlueTarget, InvalidTarget, SqlTarget, ThriftTarget
from hivecat.reconcile.conditions import Condition
from hivecat.reconcile.drift import drift_sources, drift_status, drifted_condition
from hivecat.replication.registry import (
    ClusterEntry, RegistryDecision, decide_registry, parse_registry_document, registry_document)
from hivecat.specs.clusterstorage import ClusterStorageSpec
from hivecat.specs.errors import SpecInvalid
from hivecat.specs.hivecatalog import GlueCredentialsRef, HiveCatalogSpec, SecretKeyRef
from hivecat.workloads.metastore import metastore_name

READY, DRIFTED = "Ready", "Drifted"
THRIFT, GLUE, HYBRID = "Thrift", "Glue", "Hybrid"


@dataclass(frozen=True)
class Backend:
    """One metastore backend of a catalog, and the Secret keys that open it."""

    label: str  # Database | Metastore | Glue: how status and Events name it
    target: CatalogTarget
    password: SecretKeyRef | None = None
    glue_credentials: GlueCredentialsRef | None = None
    glue_role: str | None = None  # spec.glue.roleArn: assumed with the operator's identity (the policy granted it)
    journaled_elsewhere: bool = False  # Glue, Thrift: the journal needs the operator's journal database


def backends_of(catalog: HiveCatalogSpec, access: str,
                metastore_address: tuple[str, int] | None) -> tuple[Backend, ...]:
    """The backends a drift scan reads: pure, from the HiveCatalog's spec. `access` is the ClusterStorage's
    metastoreAccess (Database | Thrift); `metastore_address` the administrator's (host, port) override of where
    the catalog's metastore is reached (CatalogPolicy spec.metastoreAddresses), if any."""
    found: list[Backend] = []
    if catalog.mode in (THRIFT, HYBRID):
        if access == "Thrift":
            if metastore_address:
                target: CatalogTarget = ThriftTarget(*metastore_address)
            else:
                target = ThriftTarget(f"{metastore_name(catalog)}.{catalog.namespace}.svc", catalog.metastore.port)
            found.append(Backend("Metastore", target, journaled_elsewhere=True))
        else:
            database = catalog.database
            if database is None or database.dialect == "derby" or not (database.host and database.name):
                raise SpecInvalid(reasons.DATABASE_NOT_SCANNABLE,
                                  f"HiveCatalog {catalog.name} keeps its metastore in an embedded Derby database "
                                  "that only the metastore pod reaches: scan it through the metastore's Thrift "
                                  "API instead (metastoreAccess Thrift)")
            found.append(Backend("Database", SqlTarget(database.dialect, database.host, database.name,
                                                       database.user or "", database.port), password=database.password))
    if catalog.mode in (GLUE, HYBRID):
        glue = catalog.glue
        assert glue is not None  # parse_hive_catalog refuses Glue/Hybrid without it
        try:
            target = GlueTarget(glue.region, glue.catalog_id, glue.endpoint, functions=glue.functions)
        except InvalidTarget as error:
            raise SpecInvalid(reasons.INVALID_GLUE_TARGET, f"HiveCatalog {catalog.name}: {error}") from None
        found.append(Backend("Glue", target, glue_credentials=glue.credentials, glue_role=glue.role_arn,
                             journaled_elsewhere=True))
    return tuple(found)


class StoragePorts(Protocol):
    """What the passes read and write; the live implementation is in handlers/, tests bring fakes."""

    def registry_document(self, catalog: str) -> str | None: ...
    def write_registry(self, catalog: str, document: str) -> None: ...
    def open(self, backend: Backend) -> Catalog: ...  # raises CatalogUnavailable or SecretUnavailable


# --- registration ------------------------------------------------------------------------------------------

@dataclass
class Registration:
    conditions: list[Condition] = field(default_factory=list)
    status: dict[str, Any] = field(default_factory=dict)  # filesystem, previousFilesystems when accepted
    changed: bool = False  # the registry document was rewritten
    decision: RegistryDecision | None = None


def register(catalog: str, members: Sequence[ClusterEntry], ports: StoragePorts,
             current_text: str | None = None) -> RegistryDecision:
    """Decide the registry of `catalog` from its live members and write it when it changed. `current_text`: the
    document as the caller just read it (else read here)."""
    if current_text is None:
        current_text = ports.registry_document(catalog)
    decision = decide_registry(parse_registry_document(current_text), members)
    document = registry_document(decision.entries)
    if document != current_text:
        ports.write_registry(catalog, document)
    return decision


def registration_of(name: str, decision: RegistryDecision) -> Condition:
    """The Ready condition one ClusterStorage gets from the registry decision."""
    rejected = decision.rejected.get(name)
    if rejected is not None:
        return Condition.of(READY, False, rejected.reason, rejected.message)
    return Condition.of(READY, True, reasons.REGISTERED, "registered in the catalog's cluster registry")


# --- drift -------------------------------------------------------------------------------------------------

@dataclass
class DriftOutcome:
    conditions: list[Condition] = field(default_factory=list)
    drift: dict[str, Any] | None = None  # status.drift; None: keep what status shows
    events: list[tuple[str, str, str]] = field(default_factory=list)  # (type, reason, message)
    phase: str | None = None
    retry_soon: bool = False  # the catalog's lock was held: come back after a short wait, not an interval
    relocations: list[RelocationReport] = field(default_factory=list)  # the repairs' runs (metrics)


def scan_pass(spec: ClusterStorageSpec, previous: Sequence[str], backends: Sequence[Backend], ports: StoragePorts,
              *, journal_configured: bool, last_drift: Mapping[str, Any] | None = None,
              clock: Callable[[], datetime] = lambda: datetime.now(timezone.utc)) -> DriftOutcome:
    """Scan every backend for locations under a drift source; with repair Auto, relocate them and scan again.
    A backend that cannot be opened, or a refused run, is a condition; nothing is forced."""
    out = DriftOutcome()
    sources = drift_sources(spec, previous)
    repairs: list[str] = []  # run ids of the repairs of this pass
    rewritten = 0
    pending: list[str] = []
    scans: list[DriftScan] = []
    for backend in backends:
        try:
            catalog = ports.open(backend)
        except (CatalogUnavailable, SecretUnavailable) as error:
            out.conditions.append(Condition(DRIFTED, "Unknown", error.reason,
                                            f"{backend.label} {backend.target.name}: {error.message}"))
            out.phase = "Degraded"
            return out
        try:
            scan = scan_drift(catalog, sources, spec.filesystem)
            if spec.repair == "Auto" and scan.drifted:
                if backend.journaled_elsewhere and not journal_configured:
                    pending.append(f"{backend.label}: repairs of a {backend.label} catalog are journaled in the "
                                   "operator's journal database, which is not configured (Helm value "
                                   "journal.urlSecretRef); drift is reported only")
                else:
                    done = repair_drift(catalog, sources, spec.filesystem, scan=scan)
                    repairs.extend(done.run_ids)
                    out.relocations.extend(done.runs)
                    rewritten += done.rewritten
                    out.events.extend(_repair_events(backend, done))
                    scan = scan_drift(catalog, sources, spec.filesystem)
            scans.append(scan)
        except JournalUnavailable as error:  # a repair needs the journal; the message says what to grant
            out.conditions.append(Condition(DRIFTED, "Unknown", error.reason, f"{backend.label}: {error}"))
            out.phase = "Degraded"
            return out
        except SQLAlchemyError as error:  # the catalog's database (or the journal's) stopped answering mid-scan
            detail = first_line(error.orig) if isinstance(error, DBAPIError) else type(error).__name__
            out.conditions.append(Condition(DRIFTED, "Unknown", reasons.DATABASE_UNREACHABLE,
                                            f"{backend.label} {backend.target.name}: {detail}"))
            out.phase = "Degraded"
            return out
        except RepairDeferred as deferred:
            # Another relocation of this catalog holds the engine's lock (on SQL catalogs a dry run waits on it
            # too): what status shows stands, and the next due pass tries again.
            if deferred.runs:  # finished before the lock was met: they stand, journaled and undoable
                out.relocations.extend(deferred.runs)
                out.events.extend(_repair_events(backend, DriftRepair(deferred.runs)))
            out.conditions.append(Condition(DRIFTED, "Unknown", reasons.RELOCATION_IN_PROGRESS,
                                            f"{backend.label}: {deferred.message}; the scan is retried later"))
            out.retry_soon = True
            out.phase = "Pending"
            return out
        finally:
            close = getattr(catalog, "close", None)
            if close is not None:
                close()
    merged = DriftScan(tuple(s for scan in scans for s in scan.scans),
                       tuple(r for scan in scans for r in scan.refusals))
    drift = drift_status(merged, repair=spec.repair, scanned_at=clock())
    keep = dict(last_drift or {})
    for key in ("lastRepairRunId", "lastRepairTime", "lastRepairRewritten"):
        if key in keep:
            drift.setdefault(key, keep[key])
    if repairs:
        drift["lastRepairRunId"] = repairs[-1]
        drift["lastRepairTime"] = clock().strftime("%Y-%m-%dT%H:%M:%SZ")
        drift["lastRepairRewritten"] = rewritten
    if pending:
        drift["pendingRepair"] = "; ".join(pending)
    out.drift = drift
    out.conditions.append(drifted_condition(merged))
    out.phase = "Drifted" if merged.drifted else "Ready"
    return out


def _repair_events(backend: Backend, done: DriftRepair) -> list[tuple[str, str, str]]:
    events = []
    for report in done.runs:
        counts = ", ".join(f"{kind.value} {c.rewritten}" for kind, c in sorted(report.counts.items(),
                                                                               key=lambda kv: kv[0].value)
                           if c.rewritten)
        events.append(("Normal", reasons.DRIFT_REPAIRED,
                       f"{backend.label}: rewrote {report.rewritten} locations from {report.old_prefix} to "
                       f"{report.new_prefix} ({counts or 'none'}) in run {report.run_id}; an undo of that run "
                       "restores them"))
    return events
