"""The operator's metrics as recorded from pass outcomes: relocation counts by kind and outcome (dry runs not
counted), replica figures, drift, errors, and a deleted resource's series dropped."""

from __future__ import annotations

import asyncio
import time

import pytest

from hivecat import metrics
from hivecat.catalog.model import KindCounts, ObjectKind, RelocationReport
from hivecat.config import OperatorConfig


def value(name: str, **labels: str) -> float | None:
    return metrics.REGISTRY.get_sample_value(name, labels)


def report(dry_run: bool = False, **counts: KindCounts) -> RelocationReport:
    return RelocationReport("r", "c", "hdfs://a", "hdfs://b", dry_run,
                            counts={ObjectKind(kind): c for kind, c in counts.items()})


def test_relocations_count_by_kind_and_outcome_and_dry_runs_count_nothing() -> None:
    before = value("hivecat_locations_rewritten_total", kind="partition", outcome="rewritten") or 0
    conflicted = value("hivecat_locations_rewritten_total", kind="table", outcome="conflicted") or 0
    metrics.record_relocations([report(partition=KindCounts(rewritten=40)),
                                report(table=KindCounts(rewritten=1, conflicted=2)),
                                report(True, partition=KindCounts(rewritten=1000))])
    assert value("hivecat_locations_rewritten_total", kind="partition", outcome="rewritten") == before + 40
    assert value("hivecat_locations_rewritten_total", kind="table", outcome="conflicted") == conflicted + 2


def test_a_sync_sets_the_replica_figures_and_adds_the_copies() -> None:
    figures = [metrics.ReplicaFigures("dr1", 6, 7200, 3, 4, 12.5), metrics.ReplicaFigures("dr2", 0, 0, 0, 0, None)]
    metrics.record_sync("ns", "events", figures)
    metrics.record_sync("ns", "events", figures)
    labels = {"namespace": "ns", "tablereplica": "events", "cluster": "dr1"}
    assert value("hivecat_copy_bytes_total", **labels) == 14400
    assert value("hivecat_copy_files_total", **labels) == 12
    assert value("hivecat_replica_in_sync_ratio", **labels) == 0.75
    assert value("hivecat_replica_lag_seconds", **labels) == 12.5
    assert value("hivecat_replica_in_sync_ratio", **{**labels, "cluster": "dr2"}) == 1.0  # nothing in scope
    metrics.forget("ns", "events", "TableReplica")
    assert value("hivecat_copy_bytes_total", **labels) is None
    assert value("hivecat_replica_in_sync_ratio", **labels) is None


def test_drift_errors_and_durations() -> None:
    metrics.record_drift("ns", "main", 5)
    assert value("hivecat_drift_locations", namespace="ns", clusterstorage="main") == 5
    metrics.forget("ns", "main", "ClusterStorage")
    assert value("hivecat_drift_locations", namespace="ns", clusterstorage="main") is None
    before = value("hivecat_reconcile_errors_total", kind="TableReplica", reason="SyncError") or 0
    metrics.record_error("TableReplica", "SyncError")
    assert value("hivecat_reconcile_errors_total", kind="TableReplica", reason="SyncError") == before + 1
    with metrics.timed("TableReplica", "sync"):
        pass
    assert value("hivecat_run_duration_seconds_count", kind="TableReplica", run="sync") >= 1


@pytest.mark.parametrize("raw, port", [("9102", 9102), ("", 0), ("0", 0), ("http", 0), ("70000", 0)])
def test_the_metrics_port_comes_from_the_environment(raw: str, port: int) -> None:
    assert OperatorConfig.from_environ({"HIVECAT_METRICS_PORT": raw}).metrics_port == port


def test_the_event_loop_lag_is_how_late_a_sleep_woke() -> None:
    """A task that holds the loop for 0.3 s shows as lag of at least that; the watcher itself adds none."""
    async def scenario() -> None:
        watcher = asyncio.get_running_loop().create_task(metrics.watch_loop_lag(beat=0.05))
        await asyncio.sleep(0.12)
        time.sleep(0.3)  # a blocking call on the loop, as a sync client called from a coroutine would be
        await asyncio.sleep(0.12)
        watcher.cancel()

    count = value("hivecat_event_loop_lag_seconds_count") or 0
    asyncio.run(scenario())
    assert value("hivecat_event_loop_lag_seconds_count") >= count + 3
    assert 0.25 <= value("hivecat_event_loop_lag_max_seconds") < 1.0
