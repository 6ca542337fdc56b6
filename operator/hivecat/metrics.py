"""The operator's Prometheus metrics, served on HIVECAT_METRICS_PORT (the chart's metrics.port).

One registry for this process. The handlers record what a pass did from its outcome (never per row or per
file); labels name resources, clusters and the location engine's object kinds, never a path or a secret.

    hivecat_locations_rewritten_total{kind,outcome}      location engine writes of drift repairs and switches
    hivecat_drift_locations{namespace,clusterstorage}    locations under a drift source at the last scan
    hivecat_copy_bytes_total / hivecat_copy_files_total{namespace,tablereplica,cluster}
    hivecat_replica_lag_seconds / hivecat_replica_in_sync_ratio{namespace,tablereplica,cluster}
    hivecat_replica_rpo_seconds / hivecat_replica_failover_ready{namespace,tablereplica,cluster}  what an
                                                         unplanned failover would lose (age of the recovery
                                                         point, at scrape time) and whether it would move
                                                         every unit, as last measured
    hivecat_reconcile_errors_total{kind,reason}          passes that ended Ready=False (reason as in status)
    hivecat_policy_violations_total{namespace,kind,reason,enforcement}  passes that asked for what no
                                                         CatalogPolicy grants (Audit: reported only)
    hivecat_run_duration_seconds{kind,run}                histogram of passes: sync, readiness, drift scan, catalog
                                                         check
    hivecat_event_loop_lag_seconds                       histogram of how late the event loop ran a timer
    hivecat_event_loop_lag_max_seconds                   the worst of those since the operator started
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from prometheus_client import (CollectorRegistry, Counter, Gauge, GCCollector, Histogram, PlatformCollector,
                               ProcessCollector, start_http_server)

from hivecat.catalog.model import RelocationReport
from hivecat.replication.readiness import Readiness

REGISTRY = CollectorRegistry()
for _collector in (ProcessCollector, PlatformCollector, GCCollector):
    _collector(registry=REGISTRY)

_REPLICA = ("namespace", "tablereplica", "cluster")
LOCATIONS_REWRITTEN = Counter("hivecat_locations_rewritten", "Locations the location engine wrote (or left: "
                              "conflicted, skipped, refused, failed) in drift repairs and failovers",
                              ("kind", "outcome"), registry=REGISTRY)
DRIFT_LOCATIONS = Gauge("hivecat_drift_locations", "Locations under a drift source at the last scan",
                        ("namespace", "clusterstorage"), registry=REGISTRY)
COPY_BYTES = Counter("hivecat_copy_bytes", "Bytes the copy engine wrote to a secondary", _REPLICA,
                     registry=REGISTRY)
COPY_FILES = Counter("hivecat_copy_files", "Files the copy engine wrote to a secondary", _REPLICA,
                     registry=REGISTRY)
REPLICA_LAG = Gauge("hivecat_replica_lag_seconds", "Age of the oldest change on the active cluster not yet "
                    "verified on a secondary (0 when in sync)", _REPLICA, registry=REGISTRY)
REPLICA_IN_SYNC = Gauge("hivecat_replica_in_sync_ratio", "Units verified on a secondary out of the units in "
                        "scope", _REPLICA, registry=REGISTRY)
REPLICA_RPO = Gauge("hivecat_replica_rpo_seconds", "Age of a secondary's recovery point: what an unplanned failover "
                    "to it would lose, growing while nothing newer is measured (the primary does not answer)",
                    _REPLICA, registry=REGISTRY)
REPLICA_FAILOVER_READY = Gauge("hivecat_replica_failover_ready", "1 when an unplanned failover to the secondary "
                               "would move every unit (each has a whole recorded copy), as last measured",
                               _REPLICA, registry=REGISTRY)
RECONCILE_ERRORS = Counter("hivecat_reconcile_errors", "Passes that ended not ready, by kind and reason",
                           ("kind", "reason"), registry=REGISTRY)
POLICY_VIOLATIONS = Counter("hivecat_policy_violations", "Passes of a resource that asked for something no "
                            "CatalogPolicy grants its namespace (refused under Enforce, reported under Audit)",
                            ("namespace", "kind", "reason", "enforcement"), registry=REGISTRY)
RUN_DURATION = Histogram("hivecat_run_duration_seconds", "How long a pass took", ("kind", "run"),
                         buckets=(0.1, 0.5, 1, 2.5, 5, 15, 30, 60, 300, 900, 3600, float("inf")), registry=REGISTRY)
LOOP_LAG = Histogram("hivecat_event_loop_lag_seconds", "How late the event loop woke a sleeping task: what every "
                     "event, timer and daemon of the operator waits on top of its own work",
                     buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, float("inf")), registry=REGISTRY)
LOOP_LAG_MAX = Gauge("hivecat_event_loop_lag_max_seconds", "The event loop's worst lag since the operator started",
                     registry=REGISTRY)
WORKERS_BUSY = Gauge("hivecat_workers_busy", "Threads of a kind's pool running a pass (the pool's size is the "
                     "Helm value concurrency.workersPerKind)", ("kind",), registry=REGISTRY)
WORK_WAITING = Gauge("hivecat_work_waiting", "Passes of a kind waiting for a thread of its pool", ("kind",),
                     registry=REGISTRY)
LOCAL_COPIES = Gauge("hivecat_local_copies_running", "Local copy processes running (at most the Helm value "
                     "concurrency.localCopies)", registry=REGISTRY)
_OUTCOMES = ("rewritten", "skipped", "conflicted", "refused", "failed")


def serve(port: int, address: str = "0.0.0.0") -> None:
    """Serve /metrics in a thread of this process."""
    start_http_server(port, address, registry=REGISTRY)


@contextmanager
def timed(kind: str, run: str) -> Iterator[None]:
    began = time.monotonic()
    try:
        yield
    finally:
        RUN_DURATION.labels(kind, run).observe(time.monotonic() - began)


async def watch_loop_lag(beat: float = 0.25) -> None:
    """Record how late each `beat` sleep wakes up: the time the loop was busy elsewhere (never returns)."""
    loop, worst = asyncio.get_running_loop(), 0.0
    while True:
        began = loop.time()
        await asyncio.sleep(beat)
        lag = max(0.0, loop.time() - began - beat)
        LOOP_LAG.observe(lag)
        if lag > worst:
            worst = lag
            LOOP_LAG_MAX.set(worst)


def record_relocations(reports: Iterable[RelocationReport]) -> None:
    """Every object the runs touched, by kind and outcome; dry runs write nothing and count nothing."""
    for report in reports:
        if report.dry_run:
            continue
        for kind, counts in report.counts.items():
            for outcome in _OUTCOMES:
                value = getattr(counts, outcome)
                if value:
                    LOCATIONS_REWRITTEN.labels(kind.value, outcome).inc(value)


def record_drift(namespace: str, name: str, drifted: int) -> None:
    DRIFT_LOCATIONS.labels(namespace, name).set(drifted)


@dataclass(frozen=True)
class ReplicaFigures:
    """One secondary after a sync: what its copy run wrote and where it stands."""

    cluster: str
    files_copied: int
    bytes_copied: int
    units_in_sync: int
    units_total: int
    lag_seconds: float | None


def record_sync(namespace: str, name: str, figures: Sequence[ReplicaFigures]) -> None:
    for f in figures:
        labels = (namespace, name, f.cluster)
        COPY_FILES.labels(*labels).inc(f.files_copied)
        COPY_BYTES.labels(*labels).inc(f.bytes_copied)
        REPLICA_IN_SYNC.labels(*labels).set(f.units_in_sync / f.units_total if f.units_total else 1.0)
        if f.lag_seconds is not None:
            REPLICA_LAG.labels(*labels).set(f.lag_seconds)


def record_readiness(namespace: str, name: str, measured: Sequence[Readiness]) -> None:
    """The last readiness of each secondary; the recovery point's age is read at each scrape."""
    for m in measured:
        labels = (namespace, name, m.cluster)
        REPLICA_FAILOVER_READY.labels(*labels).set(1.0 if m.failover_ready else 0.0)
        point = m.recovery_point.timestamp()
        REPLICA_RPO.labels(*labels).set_function(lambda point=point: max(0.0, time.time() - point))


def record_error(kind: str, reason: str) -> None:
    RECONCILE_ERRORS.labels(kind, reason).inc()


def record_policy_violation(namespace: str, kind: str, reason: str, enforcement: str) -> None:
    POLICY_VIOLATIONS.labels(namespace, kind, reason, enforcement).inc()


def forget(namespace: str, name: str, kind: str) -> None:
    """Drop a deleted resource's series (its gauges would otherwise report it forever)."""
    if kind == "ClusterStorage":
        _remove(DRIFT_LOCATIONS, lambda labels: labels[:2] == (namespace, name))
        return
    for metric in (COPY_BYTES, COPY_FILES, REPLICA_LAG, REPLICA_IN_SYNC, REPLICA_RPO, REPLICA_FAILOVER_READY):
        _remove(metric, lambda labels: labels[:2] == (namespace, name))


def _remove(metric, matches) -> None:
    for labels in [key for key in list(metric._metrics) if matches(key)]:  # noqa: SLF001 - prometheus_client's index
        metric.remove(*labels)
