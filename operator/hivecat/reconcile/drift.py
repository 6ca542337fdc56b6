"""What a ClusterStorage's drift scan means for the operator: which sources to scan, when the next scan is due,
and how a scan reads in status.drift and in the Drifted condition. Pure: no I/O, no clock of its own."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from hivecat import reasons
from hivecat.catalog.drift import DriftScan
from hivecat.catalog.model import Refusal, RelocationReport
from hivecat.locations.prefix import InvalidLocation, LocationPrefix, parse_prefix, same_family
from hivecat.reconcile.conditions import FALSE, TRUE, UNKNOWN, Condition
from hivecat.specs.clusterstorage import ClusterStorageSpec, overlapping
from hivecat.timestamps import rfc3339

DRIFTED = "Drifted"
JITTER = 0.1         # a scan is due within ±10% of the interval, the same offset every time for one resource
MAX_SOURCES = 32     # status.drift.sources maxItems
MAX_SAMPLE = 10      # status.drift.sample maxItems
MAX_REFUSALS = 10    # status.drift.refusals maxItems
REPORTS_PLAN = ("DryRun", "Auto")  # repair modes whose status shows the plan (sources, sample)
LOCATED = ("iceberg", "acid", "too-long")  # refusals of locations known to be under a source

# The engine's refusal reasons as condition reasons (CamelCase: they are an API).
REASONS = {"iceberg": reasons.ICEBERG, "acid": reasons.ACID, "too-long": reasons.TOO_LONG,
           "unstorable": reasons.CHARSET, "scheme-change": reasons.SCHEME_CHANGE, "overlap": reasons.OVERLAP,
           "invalid-uri": reasons.INVALID_LOCATION, "not-found": reasons.NOT_FOUND}


def drift_sources(spec: ClusterStorageSpec, previous: Sequence[str]) -> tuple[str, ...]:
    """The prefixes whose locations are drift: the spec's aliases, then the previous filesystems (oldest
    first), each once, never the filesystem itself. A previous filesystem of another storage family is no
    drift source (getting there was a migration); neither is one that does not parse (a hand-edited status)."""
    filesystem = parse_prefix(spec.filesystem)
    found: dict[LocationPrefix, str] = {}
    for uri in (*spec.aliases, *previous):
        try:
            prefix = parse_prefix(uri)
        except InvalidLocation:
            continue
        # One under the other is no drift either: the engine refuses overlapping prefixes, and a filesystem
        # that moved to a sub-path of itself is a layout change, not a namenode that moved.
        if same_family(prefix, filesystem) and not overlapping(prefix, filesystem) and prefix not in found:
            found[prefix] = uri
    return tuple(found.values())


def next_scan_due(last_scan: float | None, interval: float, key: str, now: float) -> float:
    """Epoch seconds when the next scan is due: `interval` after the last one, stretched or shortened by up to
    10% by an offset drawn from `key` (namespace/name), so many ClusterStorages spread out yet each keeps
    its own steady rhythm. Never scanned: due now."""
    if last_scan is None:
        return now
    digest = hashlib.sha256(key.encode()).digest()
    fraction = int.from_bytes(digest[:8], "big") / 2 ** 64  # [0, 1)
    return last_scan + interval * (1 + JITTER * (2 * fraction - 1))


REPAIR_FIELDS = ("lastRepairRunId", "lastRepairTime", "lastRepairRewritten")  # status.drift: the last repair's


def repair_withheld(label: str, journaled_elsewhere: bool, journal_configured: bool) -> str | None:
    """Why a drifted backend is reported but not repaired (status.drift.pendingRepair), or None: repair it. A
    Glue or Thrift catalog's relocations are journaled in the operator's journal database; without it, none."""
    if journaled_elsewhere and not journal_configured:
        return (f"{label}: repairs of a {label} catalog are journaled in the operator's journal database, which is "
                "not configured (Helm value journal.urlSecretRef); drift is reported only")
    return None


def drift_report(scan: DriftScan, *, repair: str, scanned_at: datetime, last_drift: Mapping[str, Any] | None,
                 repairs: Sequence[str] = (), rewritten: int = 0, withheld: Sequence[str] = ()) -> dict[str, Any]:
    """status.drift after a pass: what `scan` (every backend's, merged) shows, and the last repair: this pass's
    (`repairs`: its run ids, `rewritten` locations) or, when it made none, the one status showed."""
    drift = drift_status(scan, repair=repair, scanned_at=scanned_at)
    for key in REPAIR_FIELDS:
        if key in (last_drift or {}):
            drift.setdefault(key, (last_drift or {})[key])
    if repairs:
        drift.update(lastRepairRunId=repairs[-1], lastRepairTime=rfc3339(scanned_at), lastRepairRewritten=rewritten)
    if withheld:
        drift["pendingRepair"] = "; ".join(withheld)
    return drift


def repair_events(label: str, runs: Sequence[RelocationReport]) -> list[tuple[str, str, str]]:
    """The Events of a backend's repairs, one per run: (type, reason, message)."""
    events = []
    for report in runs:
        counts = ", ".join(f"{kind.value} {c.rewritten}" for kind, c in sorted(report.counts.items(),
                                                                               key=lambda kv: kv[0].value)
                           if c.rewritten)
        events.append(("Normal", reasons.DRIFT_REPAIRED,
                       f"{label}: rewrote {report.rewritten} locations from {report.old_prefix} to "
                       f"{report.new_prefix} ({counts or 'none'}) in run {report.run_id}"
                       f"{_logged(report)}; an undo of that run restores them"))
    return events


def _logged(report: RelocationReport) -> str:
    """What the metastore's notification log says of the run (engines that follow it refresh those objects)."""
    if report.notification_events:
        return f", logged as {report.notification_events} notification events"
    return ""


def _refusal(refusal: Refusal) -> dict[str, Any]:
    entry: dict[str, Any] = {"reason": refusal.reason, "message": refusal.message}
    if refusal.table is not None:  # a whole-source refusal names no table: no null in status
        entry["table"] = refusal.table
    return entry


def drift_status(scan: DriftScan, *, repair: str, scanned_at: datetime) -> dict[str, Any]:
    """status.drift as a scan shows it. Off reports counts only; DryRun and Auto also the plan: each source
    with what it would rewrite, and a sample of old -> new values. The repair fields (lastRepair*,
    pendingRepair) are the handler's, from a repair's outcome."""
    status: dict[str, Any] = {
        "lastScanTime": rfc3339(scanned_at),
        "driftedLocations": scan.drifted,
        "counts": scan.counts,
        "refused": scan.refused,
        "refusals": [_refusal(r) for r in scan.refusals[:MAX_REFUSALS]],
    }
    if repair in REPORTS_PLAN:
        status["sources"] = [{"from": s.source, "to": s.target, "locations": s.drifted, "counts": s.counts}
                             for s in scan.scans[:MAX_SOURCES]]
        status["sample"] = [f"{old} -> {new}" for old, new in scan.sample[:MAX_SAMPLE]]
    return status


def _reason(refusal: Refusal) -> str:
    return REASONS.get(refusal.reason) or "".join(part.capitalize() for part in refusal.reason.split("-"))


def _counted(counts: dict[str, int]) -> str:
    return ", ".join(f"{n} {kind.replace('_', ' ')}" for kind, n in counts.items())


def drifted_condition(scan: DriftScan) -> Condition:
    """Drifted: True while locations still name an old filesystem (reason Drifted, or, when every such
    location is one a metastore rewrite must not touch, the refusal's reason: Iceberg, Acid, TooLong);
    Unknown when a source could not be scanned at all (reason of the refusal); False otherwise (NoDrift)."""
    sources = ", ".join(s.source for s in scan.scans)
    refused = scan.refused
    left_alone = (f"; {refused} more are left alone, in tables whose locations a metastore rewrite must not "
                  "change (Iceberg, transactional) or whose new value would not fit" if refused else "")
    unscanned = f"; a drift source could not be scanned: {scan.blocked[0].message}" if scan.blocked else ""
    if scan.drifted:
        return Condition(DRIFTED, TRUE, reasons.DRIFTED,
                         f"{scan.drifted} locations still name an old filesystem ({sources}): "
                         f"{_counted(scan.counts)}{left_alone}{unscanned}")
    if refused:
        first = next((r for r in scan.refusals if r.reason in LOCATED), None)
        why = f": {first.message}" if first is not None else ""
        return Condition(DRIFTED, TRUE, _reason(first) if first is not None else reasons.REFUSED,
                         f"{refused} locations still name an old filesystem ({sources}), none of which a metastore "
                         f"rewrite may change{why}. Move such tables' data consistently (or shorten "
                         "the filesystem URI where values would not fit), then the next scan clears this")
    if scan.blocked:
        first = scan.blocked[0]
        return Condition(DRIFTED, UNKNOWN, _reason(first), f"a drift source could not be scanned: {first.message}")
    if not scan.scans:
        return Condition(DRIFTED, FALSE, reasons.NO_DRIFT, "no aliases or previous filesystems to scan for drift")
    return Condition(DRIFTED, FALSE, reasons.NO_DRIFT, f"no location in the catalog names an old filesystem ({sources})")
