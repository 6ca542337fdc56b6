"""parse_cluster_storage: a ClusterStorage body → a frozen spec with the CRD's defaults, canonical URIs, and
SpecInvalid with a stable reason for everything the CRD or the location engine refuses; previous_filesystems:
the one rule for status.previousFilesystems."""

from __future__ import annotations

import copy
import dataclasses
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from hivecat.specs import SpecInvalid
from hivecat.specs import clusterstorage as spec_module
from hivecat.specs.clusterstorage import (ClusterStorageSpec, ComputeSpec, SparkApplicationSettings, canonical_uri,
                                          overlapping, parse_cluster_storage, parse_scan_interval, previous_filesystems,
                                          same_location)
from support import crds

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((REPO / "examples").glob("clusterstorage-*.yaml"))
DEFAULT_INTERVAL = 1800.0
SCHEMA = crds.openapi_schema(crds.load_crds()["ClusterStorage"])
SPEC_SCHEMA = SCHEMA["properties"]["spec"]["properties"]


def body(spec: dict[str, Any], **meta: Any) -> dict[str, Any]:
    return {"apiVersion": "hivecatalog.io/v1alpha1", "kind": "ClusterStorage",
            "metadata": {"name": "hdfs-prod", "namespace": "data", **meta},
            "spec": {"catalogRef": {"name": "analytics"}, **spec}}


def parse(spec: dict[str, Any], **meta: Any) -> ClusterStorageSpec:
    return parse_cluster_storage(body(spec, **meta), default_scan_interval=DEFAULT_INTERVAL)


def hdfs(**extra: Any) -> ClusterStorageSpec:
    return parse({"filesystem": "hdfs://nn-b:8020", **extra})


def refused(spec: dict[str, Any]) -> SpecInvalid:
    with pytest.raises(SpecInvalid) as caught:
        parse(spec)
    assert caught.value.message and caught.value.reason[0].isupper() and " " not in caught.value.reason
    assert "--" not in caught.value.message  # words, never a CLI flag
    return caught.value


# --- what is taken ------------------------------------------------------------------------------------------

def test_a_minimal_storage_gets_the_crds_defaults() -> None:
    assert parse({"filesystem": "hdfs://nn:8020"}) == ClusterStorageSpec(
        name="hdfs-prod", namespace="data", catalog="analytics", filesystem="hdfs://nn:8020", aliases=(),
        compute=ComputeSpec("Local", None, None), credentials_secret=None, repair="DryRun", suspend=False,
        scan_interval=1800.0, metastore_access="Database")


def test_a_storage_without_a_namespace_is_in_default() -> None:
    raw = body({"filesystem": "hdfs://nn:8020"})
    del raw["metadata"]["namespace"]
    assert parse_cluster_storage(raw, default_scan_interval=600).namespace == "default"


def test_everything_written_is_taken() -> None:
    spec = parse({
        "filesystem": "s3://acme/warehouse", "aliases": ["s3a://acme/warehouse", "s3n://acme/warehouse"],
        "credentialsSecretRef": {"name": "s3-aws"}, "repair": "Auto", "suspend": True, "scanInterval": "1h",
        "metastoreAccess": "Thrift",
        "compute": {"type": "KubernetesJob", "job": {"image": "reg.example/tools:1", "serviceAccountName": "copy",
                                                     "resources": {"limits": {"memory": "4Gi"}}}}})
    assert spec == ClusterStorageSpec(
        name="hdfs-prod", namespace="data", catalog="analytics", filesystem="s3://acme/warehouse",
        aliases=("s3a://acme/warehouse", "s3n://acme/warehouse"),
        compute=ComputeSpec("KubernetesJob", "reg.example/tools:1", "copy", resources={"limits": {"memory": "4Gi"}}),
        credentials_secret="s3-aws",
        repair="Auto", suspend=True, scan_interval=3600.0, metastore_access="Thrift")


@pytest.mark.parametrize("compute, expected, registry", [
    (None, ComputeSpec(), {"type": "Local"}),
    ({"type": "Local", "job": {"image": "ignored"}}, ComputeSpec(), {"type": "Local"}),
    ({"type": "KubernetesJob", "job": {"image": "tools:1"}}, ComputeSpec("KubernetesJob", "tools:1", None),
     {"type": "KubernetesJob", "image": "tools:1"}),
    ({"type": "SparkApplication", "sparkApplication": {"image": "spark:3.5.1", "serviceAccountName": "spark",
                                                        "executor": {"instances": 4}}},
     ComputeSpec("SparkApplication", "spark:3.5.1", "spark",
                 spark=SparkApplicationSettings("spark:3.5.1", "spark", executor_instances=4)),
     {"type": "SparkApplication", "image": "spark:3.5.1", "serviceAccountName": "spark"}),
])
def test_compute_and_what_the_registry_says_of_it(compute: dict[str, Any] | None, expected: ComputeSpec,
                                                  registry: dict[str, str]) -> None:
    spec = hdfs(**({} if compute is None else {"compute": compute}))
    assert spec.compute == expected
    assert spec.compute.to_registry() == registry


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_every_example_parses(path: Path) -> None:
    spec = parse_cluster_storage(yaml.safe_load(path.read_text()), default_scan_interval=DEFAULT_INTERVAL)
    expected = {
        "hdfs-prod": ("hdfs://namenode-prod.hadoop.svc:8020", 2, "DryRun", "SparkApplication"),
        "local-dev": ("file:///data", 0, "Off", "Local"),
        "s3-dr": ("s3://acme-analytics-dr/warehouse", 1, "Auto", "KubernetesJob"),
    }
    assert (spec.filesystem, len(spec.aliases), spec.repair, spec.compute.type) == expected[spec.name]


def test_the_spec_is_frozen_and_does_not_share_the_body() -> None:
    raw = body({"filesystem": "hdfs://nn:8020", "aliases": ["hdfs://old:8020"]})
    spec = parse_cluster_storage(raw, default_scan_interval=DEFAULT_INTERVAL)
    kept = copy.deepcopy(spec)
    raw["spec"]["aliases"].append("hdfs://older:8020")
    assert spec == kept and spec.aliases == ("hdfs://old:8020",)
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.repair = "Auto"  # type: ignore[misc]


# --- canonical URIs -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("written, canonical", [
    ("hdfs://nn:8020", "hdfs://nn:8020"),
    ("hdfs://nn:8020/", "hdfs://nn:8020"),
    ("HDFS://NameNode.Hadoop.svc:8020/Warehouse/", "hdfs://namenode.hadoop.svc:8020/Warehouse"),
    ("s3://bucket/prefix/", "s3://bucket/prefix"),
    ("file:///data/", "file:///data"),
    ("file:///data/x", "file:///data/x"),
    ("hdfs://user@NN:8020/a", "hdfs://user@nn:8020/a"),
])
def test_the_filesystem_is_canonical(written: str, canonical: str) -> None:
    assert hdfs(filesystem=written).filesystem == canonical
    assert canonical_uri(written) == canonical


def test_file_colon_slash_is_the_same_location_as_file_triple_slash() -> None:
    assert canonical_uri("file:/data") == "file:///data"
    assert same_location("file:/data", "file:///data/") and not same_location("file:///data", "file:///data2")


def test_aliases_are_canonical_in_order_without_duplicates() -> None:
    spec = hdfs(aliases=["hdfs://OLD-B:8020/", "hdfs://old-a:8020", "hdfs://old-b:8020", "viewfs://cluster/",
                         "hdfs://old-a:8020/"])
    assert spec.aliases == ("hdfs://old-b:8020", "hdfs://old-a:8020", "viewfs://cluster")


def test_overlapping_is_anchored_at_a_path_segment() -> None:
    assert overlapping("hdfs://nn:8020/a", "hdfs://nn:8020/a/b")
    assert overlapping("hdfs://nn:8020/a/b", "hdfs://nn:8020/a")
    assert overlapping("hdfs://nn:8020", "HDFS://NN:8020/")
    assert not overlapping("hdfs://nn:8020/a", "hdfs://nn:8020/ab")
    assert not overlapping("hdfs://nn:8020", "hdfs://nn:9000")  # another authority, another storage
    assert not overlapping("hdfs://nn", "hdfs://nn:8020")


# --- repair, scan interval, metastore access ----------------------------------------------------------------

@pytest.mark.parametrize("written, repair", [("Off", "Off"), ("DryRun", "DryRun"),
                                             ("Auto", "Auto")])
def test_repair_modes(written: Any, repair: str) -> None:
    assert hdfs(repair=written).repair == repair


def test_a_bare_yaml_off_is_refused_saying_to_quote_it() -> None:
    raw = yaml.safe_load("spec:\n  catalogRef: {name: dev}\n  filesystem: file:///data\n  repair: Off\n")
    assert raw["spec"]["repair"] is False  # YAML 1.1, as kubectl and PyYAML read it; the API server refuses it
    with pytest.raises(SpecInvalid) as refused:
        parse_cluster_storage(raw, default_scan_interval=60)
    assert 'quote "Off"' in refused.value.message


@pytest.mark.parametrize("written, seconds", [
    ("30m", 1800.0), ("1h", 3600.0), ("90s", 90.0), ("45m30s", 2730.0), ("1m", 60.0), ("60s", 60.0),
    ("1h30m", 5400.0), ("1d", 86400.0), ("7d", 604800.0), ("168h", 604800.0), ("6d23h59m59s", 604799.0),
    ("0h5m", 300.0), ("59s", 59.0), ("1s", 1.0),  # below a minute: the policy's minimum decides (reconcile.access)
])
def test_scan_intervals(written: str, seconds: float) -> None:
    assert hdfs(scanInterval=written).scan_interval == seconds
    assert parse_scan_interval(written) == seconds


def test_without_a_scan_interval_the_operators_default_applies() -> None:
    raw = body({"filesystem": "hdfs://nn:8020"})
    assert parse_cluster_storage(raw, default_scan_interval=900).scan_interval == 900.0


@pytest.mark.parametrize("written", ["0s", "0m", "7d1s", "8d", "169h", "", "30", "30 m", "1h30x",
                                     "30s1m", "1.5h", "m", "-5m", "30M", 1800, 30.0, True, ["30m"]])
def test_scan_intervals_refused(written: Any) -> None:
    invalid = refused({"filesystem": "hdfs://nn:8020", "scanInterval": written})
    assert invalid.reason == "InvalidScanInterval"


@pytest.mark.parametrize("written", ["0s", "8d", "30", "1h30x"])
def test_scan_interval_messages_say_the_range_or_the_form(written: str) -> None:
    message = refused({"filesystem": "hdfs://nn:8020", "scanInterval": written}).message
    assert ("1s to 7d" in message) == (written in ("0s", "8d"))
    assert ("30m, 1h" in message) == (written in ("30", "1h30x"))


def test_metastore_access() -> None:
    assert hdfs().metastore_access == "Database"
    assert hdfs(metastoreAccess="Thrift").metastore_access == "Thrift"
    assert refused({"filesystem": "hdfs://nn:8020", "metastoreAccess": "Glue"}).reason == "InvalidField"


# --- what is refused ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("spec, reason", [
    ({}, "InvalidFilesystem"),
    ({"filesystem": ""}, "InvalidFilesystem"),
    ({"filesystem": 8020}, "InvalidFilesystem"),
    ({"filesystem": "/data"}, "InvalidFilesystem"),
    ({"filesystem": "file:/data"}, "InvalidFilesystem"),  # the CRD's pattern wants scheme://
    ({"filesystem": "hdfs:///warehouse"}, "InvalidFilesystem"),  # the default filesystem is not a place
    ({"filesystem": "file:///"}, "InvalidFilesystem"),  # the whole local filesystem
    ({"filesystem": "file://host/data"}, "InvalidFilesystem"),
    ({"filesystem": "hdfs://nn:80x0"}, "InvalidFilesystem"),
    ({"filesystem": "hdfs://nn:8020/a/../b"}, "InvalidFilesystem"),
    ({"filesystem": " hdfs://nn:8020"}, "InvalidFilesystem"),
    ({"filesystem": "hdfs://nn:8020/" + "a" * 1024}, "InvalidFilesystem"),
    ({"filesystem": "hdfs://nn:8020", "aliases": "hdfs://old:8020"}, "InvalidAlias"),
    ({"filesystem": "hdfs://nn:8020", "aliases": [None]}, "InvalidAlias"),
    ({"filesystem": "hdfs://nn:8020", "aliases": ["old:8020"]}, "InvalidAlias"),
    ({"filesystem": "hdfs://nn:8020", "aliases": ["hdfs:///x"]}, "InvalidAlias"),
    ({"filesystem": "hdfs://nn:8020", "aliases": [f"hdfs://old{i}:8020" for i in range(17)]}, "InvalidAlias"),
    ({"filesystem": "hdfs://nn:8020", "aliases": ["s3://bucket"]}, "SchemeChange"),
    ({"filesystem": "s3://bucket/w", "aliases": ["gs://bucket/w"]}, "SchemeChange"),
    ({"filesystem": "file:///data", "aliases": ["hdfs://nn:8020/data"]}, "SchemeChange"),
    ({"filesystem": "hdfs://nn:8020", "aliases": ["hdfs://NN:8020/"]}, "AliasOverlap"),
    ({"filesystem": "hdfs://nn:8020", "aliases": ["hdfs://nn:8020/warehouse"]}, "AliasOverlap"),
    ({"filesystem": "hdfs://nn:8020/warehouse", "aliases": ["hdfs://nn:8020"]}, "AliasOverlap"),
    ({"filesystem": "hdfs://nn:8020", "aliases": ["hdfs://old:8020", "hdfs://old:8020/w"]}, "AliasOverlap"),
    ({"filesystem": "hdfs://nn:8020", "aliases": ["hdfs://old:8020/w/x", "hdfs://old:8020/w"]}, "AliasOverlap"),
    ({"filesystem": "hdfs://nn:8020", "catalogRef": None}, "InvalidField"),
    ({"filesystem": "hdfs://nn:8020", "catalogRef": {"name": ""}}, "InvalidField"),
    ({"filesystem": "hdfs://nn:8020", "catalogRef": "analytics"}, "InvalidField"),
    ({"filesystem": "hdfs://nn:8020", "repair": "off"}, "InvalidField"),
    ({"filesystem": "hdfs://nn:8020", "repair": True}, "InvalidField"),
    ({"filesystem": "hdfs://nn:8020", "suspend": "yes"}, "InvalidField"),
    ({"filesystem": "hdfs://nn:8020", "credentialsSecretRef": {}}, "InvalidField"),
    ({"filesystem": "hdfs://nn:8020", "compute": {"type": "Batch"}}, "InvalidField"),
    ({"filesystem": "hdfs://nn:8020", "compute": {"type": "KubernetesJob"}}, "ComputeIncomplete"),
    ({"filesystem": "hdfs://nn:8020", "compute": {"type": "SparkApplication", "job": {"image": "x"}}},
     "ComputeIncomplete"),
    ({"filesystem": "hdfs://nn:8020", "scanInterval": "1w"}, "InvalidScanInterval"),
    *(({"filesystem": "hdfs://nn:8020", "compute": {"type": "SparkApplication",
                                                   "sparkApplication": {"image": "s:1", **settings}}}, "InvalidField")
      for settings in ({"sparkVersion": "3"}, {"driver": {"cores": 0}}, {"driver": {"memory": "2 GB"}},
                       {"executor": {"instances": "4"}}, {"executor": {"cores": True}}, {"executor": []},
                       {"executor": {"memory": 4}})),
    ({"filesystem": "hdfs://nn:8020", "compute": {"type": "KubernetesJob", "job": {"image": "x", "resources": []}}},
     "InvalidField"),
])
def test_refused_with_a_reason(spec: dict[str, Any], reason: str) -> None:
    assert refused(spec).reason == reason


def test_spark_application_settings_are_all_taken_and_the_registry_still_names_only_type_image_account() -> None:
    compute = hdfs(compute={"type": "SparkApplication", "sparkApplication": {
        "image": "spark:4.0.1", "serviceAccountName": "spark", "sparkVersion": "4.0.1",
        "driver": {"cores": 1, "memory": "2g"}, "executor": {"instances": 8, "cores": 4, "memory": "16g"}}}).compute
    assert compute.spark == SparkApplicationSettings("spark:4.0.1", "spark", "4.0.1", 1, "2g", 8, 4, "16g")
    assert compute.resources is None
    assert compute.to_registry() == {"type": "SparkApplication", "image": "spark:4.0.1", "serviceAccountName": "spark"}
    assert hash(compute) == hash(hdfs(compute={"type": "SparkApplication", "sparkApplication": {
        "image": "spark:4.0.1", "serviceAccountName": "spark", "sparkVersion": "4.0.1",
        "driver": {"cores": 1, "memory": "2g"}, "executor": {"instances": 8, "cores": 4, "memory": "16g"}}}).compute)


def test_job_resources_are_a_copy_and_leave_the_spec_hashable() -> None:
    resources = {"requests": {"cpu": "1"}, "limits": {"memory": "4Gi"}}
    compute = hdfs(compute={"type": "KubernetesJob", "job": {"image": "tools:1", "resources": resources}}).compute
    resources["limits"]["memory"] = "8Gi"
    assert compute.resources == {"requests": {"cpu": "1"}, "limits": {"memory": "4Gi"}} and compute.spark is None
    assert isinstance(hash(compute), int)
    assert compute.to_registry() == {"type": "KubernetesJob", "image": "tools:1"}


def test_aliases_of_one_family_are_not_a_scheme_change() -> None:
    assert hdfs(aliases=["viewfs://cluster"]).aliases == ("viewfs://cluster",)
    assert parse({"filesystem": "abfss://c@acct.dfs.core.windows.net/w",
                  "aliases": ["wasbs://c@acct.blob.core.windows.net/w"]}).aliases == (
        "wasbs://c@acct.blob.core.windows.net/w",)


def test_a_scheme_change_is_called_a_migration() -> None:
    message = refused({"filesystem": "hdfs://nn:8020", "aliases": ["s3a://bucket/w"]}).message
    assert "s3a://bucket/w" in message and "hdfs://nn:8020" in message
    assert "migration" in message and "scheme change" in message and "remove the alias" in message


def test_overlap_messages_name_both_uris() -> None:
    under = refused({"filesystem": "hdfs://nn:8020", "aliases": ["hdfs://NN:8020/w/"]}).message
    assert "hdfs://nn:8020/w" in under and "hdfs://nn:8020" in under and "overlap" in under
    pair = refused({"filesystem": "hdfs://nn:8020", "aliases": ["hdfs://old:8020", "hdfs://old:8020/w"]}).message
    assert "aliases hdfs://old:8020 and hdfs://old:8020/w overlap" in pair
    same = refused({"filesystem": "hdfs://nn:8020", "aliases": ["hdfs://nn:8020/"]}).message
    assert same == "alias hdfs://nn:8020 is the filesystem itself; remove it from spec.aliases"


def test_an_invalid_filesystem_says_why() -> None:
    message = refused({"filesystem": "hdfs:///warehouse"}).message
    assert message.startswith("spec.filesystem is not a usable storage URI: ") and "authority" in message


# --- the parser and the CRD say the same ---------------------------------------------------------------------

def test_the_crd_enums_are_the_parsers() -> None:
    assert tuple(SPEC_SCHEMA["repair"]["enum"]) == spec_module.REPAIR_MODES
    assert SPEC_SCHEMA["repair"]["default"] == spec_module.DEFAULT_REPAIR
    assert tuple(SPEC_SCHEMA["metastoreAccess"]["enum"]) == spec_module.METASTORE_ACCESS
    assert SPEC_SCHEMA["metastoreAccess"]["default"] == spec_module.DEFAULT_METASTORE_ACCESS
    assert tuple(SPEC_SCHEMA["compute"]["properties"]["type"]["enum"]) == spec_module.COMPUTE_TYPES
    assert SPEC_SCHEMA["aliases"]["maxItems"] == spec_module.MAX_ALIASES
    status = SCHEMA["properties"]["status"]["properties"]
    assert status["previousFilesystems"]["maxItems"] == spec_module.MAX_PREVIOUS


@pytest.mark.parametrize("written", ["30m", "1h", "90s", "45m30s", "1d", "7d", "6d23h59m59s", "59s", "8d",
                                     "30", "1.5h", "30s1m", "1h30x", "30M", "m"])
def test_the_crd_pattern_takes_the_parsers_durations(written: str) -> None:
    field = SPEC_SCHEMA["scanInterval"]
    crd_accepts = re.search(field["pattern"], written) is not None and len(written) >= field["minLength"]
    try:
        parse_scan_interval(written)
        parser_accepts, out_of_range = True, False
    except SpecInvalid as exc:
        parser_accepts, out_of_range = False, "1s to 7d" in exc.message
    # The CRD checks the form; the range (1s to 7d) is the parser's alone, the minimum the policy's.
    assert crd_accepts == (parser_accepts or out_of_range)


# --- previous filesystems -----------------------------------------------------------------------------------

@pytest.mark.parametrize("status, previous", [
    ({}, ()),  # first registration
    ({"filesystem": "hdfs://nn-b:8020"}, ()),  # unchanged
    ({"filesystem": "HDFS://NN-B:8020/"}, ()),  # the same location spelt otherwise: not a change
    ({"filesystem": "hdfs://nn-a:8020"}, ("hdfs://nn-a:8020",)),
    ({"filesystem": "hdfs://nn-a:8020", "previousFilesystems": ["hdfs://nn-0:8020"]},
     ("hdfs://nn-0:8020", "hdfs://nn-a:8020")),
    # already recorded (the status patch was written, the registry not yet): no duplicate
    ({"filesystem": "hdfs://nn-a:8020", "previousFilesystems": ["hdfs://nn-a:8020"]}, ("hdfs://nn-a:8020",)),
    ({"filesystem": "hdfs://nn-b:8020", "previousFilesystems": ["hdfs://nn-a:8020"]}, ("hdfs://nn-a:8020",)),
    # an old filesystem used again becomes the newest
    ({"filesystem": "hdfs://nn-a:8020", "previousFilesystems": ["hdfs://nn-a:8020", "hdfs://nn-0:8020"]},
     ("hdfs://nn-0:8020", "hdfs://nn-a:8020")),
    # back to an old filesystem: it is current again, never a drift source
    ({"filesystem": "hdfs://nn-a:8020", "previousFilesystems": ["hdfs://nn-b:8020", "hdfs://nn-0:8020"]},
     ("hdfs://nn-0:8020", "hdfs://nn-a:8020")),
    # a hand-edited status: junk is dropped, spellings are made canonical
    ({"filesystem": 3, "previousFilesystems": ["not a uri", None, "hdfs://NN-0:8020/"]}, ("hdfs://nn-0:8020",)),
    ({"filesystem": "hdfs://nn-a:8020", "previousFilesystems": "hdfs://nn-0:8020"}, ("hdfs://nn-a:8020",)),
])
def test_previous_filesystems(status: dict[str, Any], previous: tuple[str, ...]) -> None:
    assert previous_filesystems(hdfs(), status) == previous


def test_at_most_sixteen_previous_filesystems_are_kept_the_oldest_go() -> None:
    older = [f"hdfs://nn-{i}:8020" for i in range(16)]
    kept = previous_filesystems(hdfs(), {"filesystem": "hdfs://nn-a:8020", "previousFilesystems": older})
    assert kept == (*older[1:], "hdfs://nn-a:8020") and len(kept) == 16


def test_previous_filesystems_do_not_touch_the_status() -> None:
    status = {"filesystem": "hdfs://nn-a:8020", "previousFilesystems": ["hdfs://nn-0:8020"]}
    kept = copy.deepcopy(status)
    previous_filesystems(hdfs(), status)
    assert status == kept
