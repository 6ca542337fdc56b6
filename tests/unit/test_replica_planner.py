"""The TableReplica copy plan for one secondary: units in scope, rebased from the primary's filesystem (or
alias) to the secondary's, units elsewhere reported, mostRecent, and the copy engine's plan document."""

from __future__ import annotations

import pytest

from hivecat.catalog.model import PartitionInfo, TableInfo
from hivecat.copy.plan import plan_from_document
from hivecat.replication.registry import ClusterEntry
from hivecat.replication.planner import PlanRefused, ReplicaScope, plan_replica, unit_id

PRIMARY = ClusterEntry("main", "s3://lake/warehouse", aliases=("s3a://lake/warehouse",))
SECONDARY = ClusterEntry("dr", "s3://dr-lake/warehouse")


class FakeCatalog:
    def __init__(self, table: TableInfo, partitions: list[PartitionInfo] = ()) -> None:
        self.table, self.partitions = table, list(partitions)
        self.filters: list[str | None] = []

    def get_table(self, database: str, table: str):
        return self.table if (database, table) == (self.table.database, self.table.name) else None

    def list_partitions(self, database: str, table: str, partition_filter=None):
        self.filters.append(partition_filter)
        return iter(self.partitions)


def events(*days: str, location=lambda d: f"s3://lake/warehouse/sales.db/events/dt={d}") -> FakeCatalog:
    table = TableInfo("sales", "events", "s3://lake/warehouse/sales.db/events", partition_keys=("dt",))
    return FakeCatalog(table, [PartitionInfo("sales", "events", (d,), location(d)) for d in days])


def test_partitions_are_units_rebased_to_the_secondary() -> None:
    catalog = events("2026-11-02", "2026-11-01")
    planned = plan_replica(catalog, ReplicaScope("sales", "events", "dt >= '2026-11-01'"), PRIMARY, SECONDARY)
    assert planned.unit_ids == ("sales.events/dt=2026-11-01", "sales.events/dt=2026-11-02")
    assert [(u.source.uri, u.target.uri) for u in planned.plan.units] == [
        ("s3://lake/warehouse/sales.db/events/dt=2026-11-01", "s3://dr-lake/warehouse/sales.db/events/dt=2026-11-01"),
        ("s3://lake/warehouse/sales.db/events/dt=2026-11-02", "s3://dr-lake/warehouse/sales.db/events/dt=2026-11-02")]
    assert catalog.filters == ["dt >= '2026-11-01'"] and planned.outside == ()
    again = plan_from_document(planned.plan.to_dict())  # the copy engine's own document, validated
    assert again.units == planned.plan.units


def test_most_recent_keeps_the_greatest_values() -> None:
    planned = plan_replica(events("2026-11-03", "2026-11-01", "2026-11-02"),
                           ReplicaScope("sales", "events", most_recent=2), PRIMARY, SECONDARY)
    assert planned.unit_ids == ("sales.events/dt=2026-11-02", "sales.events/dt=2026-11-03")
    assert plan_replica(events("2026-11-01"), ReplicaScope("sales", "events", most_recent=0), PRIMARY,
                        SECONDARY).unit_ids == ()


def test_units_off_the_primary_are_reported_not_copied_and_aliases_count() -> None:
    elsewhere = {"2026-11-01": "s3://other-bucket/events/dt=2026-11-01",
                 "2026-11-02": "s3a://lake/warehouse/sales.db/events/dt=2026-11-02",
                 "2026-11-03": "s3://lake/warehouse2/events/dt=2026-11-03"}  # shares the text, not the prefix
    planned = plan_replica(events(*elsewhere, location=elsewhere.get), ReplicaScope("sales", "events"),
                           PRIMARY, SECONDARY)
    assert planned.unit_ids == ("sales.events/dt=2026-11-02",)
    assert planned.plan.units[0].target.uri == "s3://dr-lake/warehouse/sales.db/events/dt=2026-11-02"
    assert [uid for uid, _ in planned.outside] == ["sales.events/dt=2026-11-01", "sales.events/dt=2026-11-03"]


def test_an_unpartitioned_table_is_one_unit_and_a_missing_one_is_refused() -> None:
    catalog = FakeCatalog(TableInfo("sales", "dim", "s3://lake/warehouse/sales.db/dim"))
    planned = plan_replica(catalog, ReplicaScope("sales", "dim"), PRIMARY, SECONDARY)
    assert planned.unit_ids == ("sales.dim",) and catalog.filters == []
    with pytest.raises(PlanRefused) as refused:
        plan_replica(catalog, ReplicaScope("sales", "gone"), PRIMARY, SECONDARY)
    assert refused.value.reason == "TableNotFound" and "sales.gone" in refused.value.message


def test_unit_ids_are_hive_partition_names() -> None:
    assert unit_id("db", "t") == "db.t"
    assert unit_id("db", "t", ("dt", "region"), ("2026-11-01", "eu")) == "db.t/dt=2026-11-01/region=eu"
