"""A ClusterStorage's two passes, carried out through `StoragePorts`: register the cluster in its catalog's
registry (the registry decided by replication/registry.py, the document written only when it changed), and
scan the catalog's backends for "Wrong FS" drift, repairing it when asked (open each backend → scan → repair
what reconcile/drift.py does not withhold → scan again → the outcome, rendered by reconcile/drift.py).
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
from hivecat.catalog.drift import DriftScan, RepairDeferred, repair_drift, scan_drift
from hivecat.catalog.journal import JournalUnavailable
from hivecat.catalog.model import RelocationReport
from hivecat.reconcile.clusterstorage import DRIFTED, Backend
from hivecat.reconcile.conditions import Condition
from hivecat.reconcile.drift import drift_report, drift_sources, drifted_condition, repair_events, repair_withheld
from hivecat.replication.registry import (
    ClusterEntry, RegistryDecision, decide_registry, parse_registry_document, registry_document)
from hivecat.specs.clusterstorage import ClusterStorageSpec


class StoragePorts(Protocol):
    """What the passes read and write; the live implementation is in handlers/, tests bring fakes."""

    def registry_document(self, catalog: str) -> str | None: ...
    def write_registry(self, catalog: str, document: str) -> None: ...
    def open(self, backend: Backend) -> Catalog: ...  # raises CatalogUnavailable or SecretUnavailable


# --- registration ------------------------------------------------------------------------------------------

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
    withheld: list[str] = []
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
                why = repair_withheld(backend.label, backend.journaled_elsewhere, journal_configured)
                if why is not None:
                    withheld.append(why)
                else:
                    done = repair_drift(catalog, sources, spec.filesystem, scan=scan)
                    repairs.extend(done.run_ids)
                    out.relocations.extend(done.runs)
                    rewritten += done.rewritten
                    out.events.extend(repair_events(backend.label, done.runs))
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
                out.events.extend(repair_events(backend.label, deferred.runs))
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
    out.drift = drift_report(merged, repair=spec.repair, scanned_at=clock(), last_drift=last_drift, repairs=repairs,
                             rewritten=rewritten, withheld=withheld)
    out.conditions.append(drifted_condition(merged))
    out.phase = "Drifted" if merged.drifted else "Ready"
    return out

