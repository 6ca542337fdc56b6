"""The TableReplica spec: the CRD's defaults and rules applied again, durations, every refusal a reason."""

from __future__ import annotations

import pytest

from hivecat.specs.errors import SpecInvalid
from hivecat.specs.tablereplica import DEFAULT_INTERVAL, CopySettings, parse_duration, parse_table_replica


def body(**spec) -> dict:
    return {"metadata": {"name": "orders", "namespace": "data"},
            "spec": {"catalogRef": {"name": "analytics"}, "table": "Orders", "secondaries": ["s3-dr"], **spec}}


def test_defaults_are_the_crds() -> None:
    spec = parse_table_replica(body())
    assert (spec.name, spec.namespace, spec.catalog, spec.database, spec.table) == (
        "orders", "data", "analytics", "default", "orders")
    assert spec.primary is None and spec.active is None and spec.secondaries == ("s3-dr",)
    assert spec.partition_filter is None and spec.most_recent is None and not spec.suspend
    assert spec.interval == DEFAULT_INTERVAL and spec.copy == CopySettings()
    assert spec.qualified_table == "default.orders" and spec.clusters() == ("s3-dr",)


def test_the_example_parses() -> None:
    spec = parse_table_replica(body(database="sales", partitions={"filter": 'dt >= "2024-01-01"', "mostRecent": 30},
                                    primary="hdfs-prod", active="hdfs-prod", schedule={"interval": "1h30m"},
                                    copy={"verify": "checksum", "parallelism": 16, "bandwidthMBps": 200,
                                          "engine": "spark"}, suspend=True))
    assert spec.partition_filter == 'dt >= "2024-01-01"' and spec.most_recent == 30
    assert spec.interval == 5400 and spec.suspend and spec.clusters() == ("hdfs-prod", "s3-dr")
    assert spec.copy == CopySettings("checksum", 16, 200, "spark")


@pytest.mark.parametrize("text, seconds", [("15m", 900), ("1h30m", 5400), ("2.5h", 9000), ("500ms1s", 1.5),
                                           ("720h", 2592000)])
def test_durations(text: str, seconds: float) -> None:
    assert parse_duration(text, "x") == seconds


@pytest.mark.parametrize("spec, reason, words", [
    ({"catalogRef": {}}, "InvalidField", "spec.catalogRef.name is required"),
    ({"table": "bad-name"}, "InvalidField", "spec.table must be a Hive name"),
    ({"secondaries": []}, "InvalidClusters", "at least one ClusterStorage"),
    ({"secondaries": ["a", "a"]}, "InvalidClusters", "duplicates"),
    ({"secondaries": [f"s{i}" for i in range(17)]}, "InvalidClusters", "at most 16"),
    ({"secondaries": ["Upper"]}, "InvalidField", "spec.secondaries must be the name of a ClusterStorage"),
    ({"primary": "s3-dr"}, "InvalidClusters", "must not also be listed"),
    ({"active": "elsewhere"}, "InvalidClusters", "spec.active elsewhere must name"),
    ({"schedule": {"interval": "1d"}}, "InvalidSchedule", "not a duration"),
    ({"schedule": {"interval": "0s"}}, "InvalidSchedule", "outside 1s to 30 days"),
    ({"schedule": {"interval": "721h"}}, "InvalidSchedule", "outside 1s to 30 days"),
    ({"partitions": {"mostRecent": 0}}, "InvalidField", "mostRecent must be a whole number"),
    ({"copy": {"verify": "md5"}}, "InvalidField", "spec.copy.verify must be one of size, checksum"),
    ({"suspend": "yes"}, "InvalidField", "spec.suspend must be true or false"),
])
def test_refusals(spec: dict, reason: str, words: str) -> None:
    with pytest.raises(SpecInvalid) as refused:
        parse_table_replica(body(**spec))
    assert refused.value.reason == reason and words in refused.value.message
