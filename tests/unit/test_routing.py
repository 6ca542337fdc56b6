"""hivecat route's rules, with the design's own examples: T11 and T12 on C1, T21 on C2, T31 on C3 — with and
without T11's secondary copy on C2 — and placements read from a catalog through the replica bookkeeping."""

from __future__ import annotations

import pytest

from hivecat.catalog.model import PartitionInfo, TableInfo
from hivecat.replication.registry import ClusterEntry
from hivecat.replication.bookkeeping import replica_location_key
from hivecat.replication.placement import cluster_of, placement_of
from hivecat.replication.routing import Placement, route


def tables(t11_on_c2: bool) -> dict[str, Placement]:
    return {"T11": Placement("db.T11", primary="C1", holding=frozenset({"C1", "C2"} if t11_on_c2 else {"C1"})),
            "T12": Placement("db.T12", primary="C1", holding=frozenset({"C1"})),
            "T21": Placement("db.T21", primary="C2", holding=frozenset({"C2"})),
            "T31": Placement("db.T31", primary="C3", holding=frozenset({"C3"}))}


@pytest.mark.parametrize("query, t11_on_c2, cluster, reason", [
    (("T11", "T12"), False, "C1", "InputPrimary"),
    (("T11", "T21"), False, None, "NoCluster"),        # T11 join T21: no cluster holds both
    (("T11", "T21"), True, "C2", "InputPrimary"),      # ... until T11 has its copy on C2
    (("T21", "T11"), True, "C2", "InputPrimary"),
    (("T11", "T31"), True, None, "NoCluster"),
    (("T31",), False, "C3", "InputPrimary"),
])
def test_reads_run_where_every_input_is(query, t11_on_c2, cluster, reason) -> None:
    t = tables(t11_on_c2)
    decision = route([t[name] for name in query])
    assert (decision.cluster, decision.reason) == (cluster, reason)


def test_the_no_cluster_message_says_what_each_candidate_lacks() -> None:
    t = tables(False)
    decision = route([t["T11"], t["T21"]])
    assert decision.message == "no cluster holds every input: C1 lacks db.T21; C2 lacks db.T11"


@pytest.mark.parametrize("t11_on_c2, cluster, reason", [(False, None, "NoCluster"), (True, "C2", "OutputPrimary")])
def test_insert_into_t21_select_from_t11_runs_on_c2_only_with_the_copy(t11_on_c2, cluster, reason) -> None:
    t = tables(t11_on_c2)
    decision = route([t["T11"]], output=t["T21"])
    assert (decision.cluster, decision.reason) == (cluster, reason)
    if cluster is None:
        assert "C2" in decision.message and "db.T11" in decision.message


def test_a_new_output_table_does_not_count() -> None:
    t = tables(False)
    decision = route([t["T11"], t["T12"]], output=Placement("db.new", exists=False))
    assert (decision.cluster, decision.reason) == ("C1", "InputPrimary")


def test_a_forced_cluster_is_only_checked() -> None:
    t = tables(True)
    assert route([t["T11"]], cluster="C2").cluster == "C2"
    refused = route([t["T11"], t["T12"]], cluster="C2")
    assert (refused.cluster, refused.reason) == (None, "NotOnCluster") and "db.T12" in refused.message
    wrong_output = route([t["T11"]], output=t["T21"], cluster="C1")
    assert (wrong_output.cluster, wrong_output.reason) == (None, "NotOutputPrimary")


def test_a_missing_input_is_named() -> None:
    decision = route([Placement("db.gone", exists=False)])
    assert (decision.cluster, decision.reason) == (None, "TableNotFound") and "db.gone" in decision.message


# --- placements from a catalog -----------------------------------------------------------------------------

CLUSTERS = {"c1": ClusterEntry("c1", "hdfs://nn1:8020", aliases=("hdfs://nn1-old:8020",)),
            "c2": ClusterEntry("c2", "hdfs://nn2:8020"), "s3": ClusterEntry("s3", "s3://lake/warehouse")}


class FakeCatalog:
    def __init__(self, tables: list[TableInfo], partitions: dict[str, list[PartitionInfo]]) -> None:
        self.tables, self.partitions = tables, partitions

    def list_tables(self, database: str):
        return iter([t for t in self.tables if t.database == database])

    def get_table(self, database: str, table: str):
        return next((t for t in self.tables if (t.database, t.name) == (database, table)), None)

    def list_partitions(self, database: str, table: str, partition_filter=None):
        return iter(self.partitions.get(f"{database}.{table}", []))


def test_cluster_of_uses_filesystems_and_aliases_anchored() -> None:
    assert cluster_of("hdfs://nn1:8020/w/t", CLUSTERS) == "c1"
    assert cluster_of("hdfs://nn1-old:8020/w/t", CLUSTERS) == "c1"
    assert cluster_of("s3://lake/warehouse2/t", CLUSTERS) is None
    assert cluster_of(None, CLUSTERS) is None


def test_a_partitioned_table_is_held_where_every_partition_has_a_copy() -> None:
    key = replica_location_key("c2")
    catalog = FakeCatalog(
        [TableInfo("db", "events", "hdfs://nn1:8020/w/events", partition_keys=("dt",))],
        {"db.events": [PartitionInfo("db", "events", ("1",), "hdfs://nn1:8020/w/events/dt=1", {key: "hdfs://nn2:8020/w/events/dt=1"}),
                       PartitionInfo("db", "events", ("2",), "hdfs://nn1:8020/w/events/dt=2", {})]})
    partly = placement_of(catalog, CLUSTERS, "db.events")
    assert (partly.primary, partly.holding) == ("c1", frozenset({"c1"}))
    catalog.partitions["db.events"][1] = PartitionInfo("db", "events", ("2",), "hdfs://nn1:8020/w/events/dt=2",
                                                       {key: "hdfs://nn2:8020/w/events/dt=2"})
    assert placement_of(catalog, CLUSTERS, "db.events").holding == frozenset({"c1", "c2"})


def test_an_unpartitioned_table_uses_its_own_parameters_and_missing_tables_do_not_exist() -> None:
    catalog = FakeCatalog([TableInfo("db", "dim", "s3://lake/warehouse/dim",
                                     parameters={replica_location_key("c1"): "hdfs://nn1:8020/w/dim"})], {})
    dim = placement_of(catalog, CLUSTERS, "db.dim")
    assert (dim.exists, dim.primary, dim.holding) == (True, "s3", frozenset({"s3", "c1"}))
    assert placement_of(catalog, CLUSTERS, "db.nothing").exists is False
    assert placement_of(catalog, CLUSTERS, "other.dim").exists is False


def test_partitions_on_two_clusters_have_no_single_primary() -> None:
    catalog = FakeCatalog(
        [TableInfo("db", "mixed", "hdfs://nn1:8020/w/mixed", partition_keys=("dt",))],
        {"db.mixed": [PartitionInfo("db", "mixed", ("1",), "hdfs://nn1:8020/w/mixed/dt=1"),
                      PartitionInfo("db", "mixed", ("2",), "hdfs://nn2:8020/w/mixed/dt=2")]})
    mixed = placement_of(catalog, CLUSTERS, "db.mixed")
    assert (mixed.primary, mixed.holding) == (None, frozenset())
