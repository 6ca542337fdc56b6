"""The admin's CatalogPolicy and what it grants a namespace (specs/policy.py, reconcile/access.py): pure, no
server. The edges: a namespace no policy selects, prefixes that are string prefixes but not path prefixes,
case and trailing slashes, schemes of one family, several policies, selectors, an unreadable policy, Audit."""

from __future__ import annotations

from typing import Any

import pytest

from hivecat import reasons
from hivecat.replication.routes import ClusterAccess
from hivecat.reconcile.access import (AUDIT, Defaults, InvalidPolicy, NamespacePolicy,
                                      check_cluster_storage, check_hive_catalog, check_table_replica, cluster_access,
                                      judged, namespace_policy, needs_labels)
from hivecat.reconcile.policy import Violation
from hivecat.specs.clusterstorage import parse_cluster_storage
from hivecat.specs.errors import SpecInvalid
from hivecat.specs.hivecatalog import parse_hive_catalog
from hivecat.specs.policy import parse_catalog_policy
from hivecat.specs.tablereplica import parse_table_replica


def policy(name: str = "team-a", **spec: Any) -> Any:
    spec.setdefault("namespaces", ["team-a"])
    return parse_catalog_policy({"metadata": {"name": name}, "spec": spec})


def granted(*policies: Any, namespace: str = "team-a", labels: dict[str, str] | None = None,
            defaults: Defaults = Defaults()) -> NamespacePolicy:
    return namespace_policy(namespace, labels, policies, defaults)


STORAGE = granted(policy(storage=[{"prefix": "s3://team-a/warehouse"}, {"prefix": "hdfs://NN.example:8020/team-a/"},
                                  {"prefix": "file:///data/team-a", "ambientCredentials": True}]))


# --- storage prefixes ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("uri", [
    "s3://team-a/warehouse", "s3://team-a/warehouse/", "s3://team-a/warehouse/sales.db/orders",
    "s3a://team-a/warehouse/x",             # the same bucket through another client
    "S3://TEAM-A/warehouse/x",              # scheme and host compare without case
    "hdfs://nn.example:8020/team-a/t",       # the grant's trailing slash and upper case host do not matter
    "file:/data/team-a/x", "file:///data/team-a",
])
def test_locations_under_a_granted_prefix_are_granted(uri: str) -> None:
    assert STORAGE.check_storage(uri, "spec.filesystem") is None


@pytest.mark.parametrize("uri", [
    "s3://team-ab/warehouse",               # a string prefix of the bucket, not a path prefix
    "s3://team-a/warehouse2",               # nor of the path
    "s3://team-a/Warehouse/x",              # paths keep their case
    "s3://team-a",                          # above the grant
    "hdfs://nn.example:9000/team-a",        # another port is another authority
    "hdfs://nn.example/team-a",
    "file:///data/team-ab", "file:///data", "file:///var/run/secrets",
    "gs://team-a/warehouse",                # another storage family
    "not a uri",
])
def test_everything_else_is_refused(uri: str) -> None:
    violation = STORAGE.check_storage(uri, "spec.filesystem")
    assert violation is not None and violation.reason == reasons.STORAGE_NOT_ALLOWED
    assert "s3://team-a/warehouse" in violation.message  # it says what is granted


def test_a_namespace_no_policy_selects_gets_nothing() -> None:
    other = granted(policy(storage=[{"prefix": "s3://team-a/warehouse"}]), namespace="team-b")
    violation = other.check_storage("s3://team-a/warehouse", "spec.filesystem")
    assert violation is not None and "no CatalogPolicy selects this namespace" in violation.message
    assert other.compute == frozenset() and other.check_compute("KubernetesJob") is not None


def test_the_most_specific_grant_decides_shared_and_credentials() -> None:
    both = granted(policy(storage=[{"prefix": "s3://lake", "shared": True},
                                   {"prefix": "s3://lake/team-a", "ambientCredentials": True}]))
    inner = both.storage_grant("s3://lake/team-a/t")
    assert inner is not None and inner.ambient_credentials and not inner.shared
    outer = both.storage_grant("s3://lake/other")
    assert outer is not None and outer.shared and not outer.ambient_credentials


def test_policies_selecting_one_namespace_add_up() -> None:
    union = granted(policy("a", storage=[{"prefix": "s3://a"}], compute=["Local"]),
                    policy("b", storage=[{"prefix": "s3://b"}], images=["registry.example.com/x/*"]))
    assert union.sources == ("a", "b")
    assert union.check_storage("s3://a/t", "f") is None and union.check_storage("s3://b/t", "f") is None
    assert union.compute == {"Local", "KubernetesJob", "SparkApplication"}  # b grants the default compute
    assert union.workloads.check_image("registry.example.com/x/y:1", "f") is None


# --- credentials, compute, schedules ------------------------------------------------------------------------

def test_the_operators_own_identity_only_where_granted() -> None:
    assert STORAGE.check_credentials("s3://team-a/warehouse/t", True, "f") is None  # the namespace's own Secret
    refused = STORAGE.check_credentials("s3://team-a/warehouse/t", False, "f")
    assert refused is not None and refused.reason == reasons.AMBIENT_CREDENTIALS_NOT_ALLOWED
    assert STORAGE.check_credentials("hdfs://nn.example:8020/team-a/t", False, "f") is not None
    assert STORAGE.check_credentials("file:///data/team-a/t", False, "f") is None  # no identity on local disk


def test_local_compute_is_granted_only_when_listed() -> None:
    default = granted(policy())
    assert default.compute == {"KubernetesJob", "SparkApplication"}
    violation = default.check_compute("Local")
    assert violation is not None and violation.reason == reasons.COMPUTE_NOT_ALLOWED
    assert granted(policy(compute=["Local"])).check_compute("Local") is None


def test_minimums_are_the_lowest_any_policy_sets_else_the_operators() -> None:
    defaults = Defaults(min_sync_interval=60, min_housekeeping_delay=3600, min_scan_interval=60)
    plain = granted(policy(), defaults=defaults)
    assert (plain.min_sync_interval, plain.min_housekeeping_delay, plain.min_scan_interval) == (60, 3600, 60)
    fast = granted(policy("a", minimums={"syncInterval": "10s"}), policy("b", minimums={"syncInterval": "1s",
                                                                                         "housekeepingDelay": "5m"}),
                   defaults=defaults)
    assert (fast.min_sync_interval, fast.min_housekeeping_delay, fast.min_scan_interval) == (1, 300, 60)


def replica(**spec: Any) -> Any:
    base = {"catalogRef": {"name": "sales"}, "table": "orders", "secondaries": ["dr"]}
    return parse_table_replica({"metadata": {"name": "r", "namespace": "team-a"}, "spec": {**base, **spec}})


def test_a_table_replica_faster_than_allowed_is_refused() -> None:
    plain = granted(policy())
    violation = check_table_replica(replica(schedule={"interval": "1s"}), plain)
    assert violation is not None and violation.reason == reasons.INTERVAL_BELOW_MINIMUM
    assert "1s" in violation.message and "1m" in violation.message
    delay = check_table_replica(replica(housekeeping={"delay": "1s"}), plain)
    assert delay is not None and "spec.housekeeping.delay" in delay.message
    assert check_table_replica(replica(), plain) is None  # the defaults (1h, 72h) are within the defaults
    tests = granted(policy(minimums={"syncInterval": "1s", "housekeepingDelay": "1s"}))
    assert check_table_replica(replica(schedule={"interval": "1s"}, housekeeping={"delay": "1s"}), tests) is None


def storage(**spec: Any) -> Any:
    base = {"catalogRef": {"name": "sales"}}
    return parse_cluster_storage({"metadata": {"name": "dr", "namespace": "team-a"}, "spec": {**base, **spec}},
                                 default_scan_interval=1800)


def test_cluster_storage_checks() -> None:
    assert check_cluster_storage(storage(filesystem="s3://team-a/warehouse", compute={"type": "KubernetesJob",
                                                                                      "job": {"image": "x"}}),
                                 STORAGE, scan_interval_set=False) is None
    local = check_cluster_storage(storage(filesystem="file:///data/team-a"), STORAGE, scan_interval_set=False)
    assert local is not None and local.reason == reasons.COMPUTE_NOT_ALLOWED  # Local is the default compute
    secrets = check_cluster_storage(storage(filesystem="file:///var/run/secrets"), STORAGE, scan_interval_set=False)
    assert secrets is not None and secrets.reason == reasons.STORAGE_NOT_ALLOWED
    fast = check_cluster_storage(storage(filesystem="s3://team-a/warehouse", scanInterval="1s",
                                         compute={"type": "KubernetesJob", "job": {"image": "x"}}),
                                 STORAGE, scan_interval_set=True)
    assert fast is not None and fast.reason == reasons.INTERVAL_BELOW_MINIMUM


def test_under_audit_cluster_access_reports_and_allows_but_a_claim_still_refuses() -> None:
    audit = granted(defaults=Defaults(enforcement=AUDIT))  # nothing granted, only reported
    access = cluster_access(audit, "dr", "s3://team-b/warehouse", None)
    assert isinstance(access, ClusterAccess) and access.audit is not None
    assert access.audit.reason == reasons.STORAGE_NOT_ALLOWED
    claimed = Violation(reasons.STORAGE_CLAIM_CONFLICT, "taken")
    assert cluster_access(audit, "dr", "s3://team-b/warehouse", None, claimed) is claimed


def test_cluster_access_names_the_credentials_or_why_not() -> None:
    access = cluster_access(STORAGE, "dr", "s3://team-a/warehouse", "dr-keys")
    assert isinstance(access, ClusterAccess) and access.credentials_secret == "dr-keys"
    assert isinstance(cluster_access(STORAGE, "dr", "s3://team-a/warehouse", None), Violation)  # no ambient there
    ambient = cluster_access(STORAGE, "dev", "file:///data/team-a", None)
    assert isinstance(ambient, ClusterAccess) and ambient.credentials_secret is None
    claimed = Violation(reasons.STORAGE_CLAIM_CONFLICT, "taken")
    assert cluster_access(STORAGE, "dr", "s3://team-a/warehouse", "dr-keys", claimed) is claimed
    assert isinstance(cluster_access(STORAGE, "x", "s3://team-b/warehouse", "k"), Violation)


# --- metastores and Glue ------------------------------------------------------------------------------------

def catalog(**spec: Any) -> Any:
    return parse_hive_catalog({"metadata": {"name": "sales", "namespace": "team-a"}, "spec": spec},
                              default_image="apache/hive:3.1.3")


MARIADB = {"type": "mariadb", "host": "MariaDB.databases.svc", "name": "hive_a", "user": "hive",
           "passwordSecretRef": {"name": "db"}}


def test_metastore_databases() -> None:
    hosts = granted(policy(databases=[{"host": "mariadb.databases.svc", "port": 3306, "names": ["hive_a"]}]))
    assert check_hive_catalog(catalog(database=MARIADB), hosts) is None
    for database in ({**MARIADB, "port": 3307}, {**MARIADB, "name": "hive_b"}, {**MARIADB, "host": "evil.example"}):
        violation = check_hive_catalog(catalog(database=database), hosts)
        assert violation is not None and violation.reason == reasons.METASTORE_NOT_ALLOWED
    assert check_hive_catalog(catalog(database={"type": "derby"}), granted()) is None  # inside its own pod


GLUE = {"hive-site": {"hive.metastore.client.factory.class":
                      "com.amazonaws.glue.catalog.metastore.AWSGlueDataCatalogHiveClientFactory"}}


def glue(**settings: Any) -> Any:
    configurations = [{"classification": k, "properties": v} for k, v in GLUE.items()]
    return catalog(configurations=configurations, glue={"region": "eu-west-1", **settings})


def test_glue_catalogs_regions_endpoints_and_roles() -> None:
    role = "arn:aws:iam::123456789012:role/team-a"
    grants = granted(policy(glue=[{"region": "eu-west-1", "catalogIds": ["123456789012"], "roleArns": [role]}]))
    keys = {"credentialsSecretRef": {"name": "aws"}}
    assert check_hive_catalog(glue(catalogId="123456789012", **keys), grants) is None
    assert check_hive_catalog(glue(catalogId="123456789012", roleArn=role), grants) is None
    cases = [(glue(catalogId="999999999999", **keys), reasons.GLUE_NOT_ALLOWED),
             (glue(catalogId="123456789012", endpoint="http://evil.example", **keys), reasons.GLUE_NOT_ALLOWED),
             (glue(catalogId="123456789012", roleArn="arn:aws:iam::123456789012:role/admin"), reasons.ROLE_NOT_ALLOWED),
             (glue(catalogId="123456789012"), reasons.AMBIENT_CREDENTIALS_NOT_ALLOWED)]
    for spec, reason in cases:
        violation = check_hive_catalog(spec, grants)
        assert violation is not None and violation.reason == reason, (spec.glue, violation)
    ambient = granted(policy(glue=[{"region": "eu-west-1", "ambientCredentials": True}]))
    assert check_hive_catalog(glue(), ambient) is None


def test_metastore_addresses_come_from_the_policy() -> None:
    grants = granted(policy(metastoreAddresses=[{"catalog": "sales", "address": "127.0.0.1:19083"}]))
    assert grants.metastore_address("sales") == ("127.0.0.1", 19083)
    assert grants.metastore_address("other") is None


# --- selectors, unreadable policies, Audit -------------------------------------------------------------------

def test_a_namespace_selector() -> None:
    selected = policy(namespaces=None, namespaceSelector={
        "matchLabels": {"team": "a"}, "matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["x"]}]},
        storage=[{"prefix": "s3://a"}])
    assert needs_labels([selected])
    assert granted(selected, namespace="any", labels={"team": "a"}).sources == (selected.name,)
    assert granted(selected, namespace="any", labels={"team": "a", "tier": "x"}).sources == ()
    assert granted(selected, namespace="any", labels={"team": "b"}).sources == ()
    assert granted(selected, namespace="any", labels=None).sources == ()  # labels unreadable: fail closed


@pytest.mark.parametrize("spec, message", [
    ({}, "spec.namespaces or spec.namespaceSelector"),
    ({"namespaceSelector": {}}, "selects every namespace"),
    ({"namespaces": ["a"], "storage": [{"prefix": "/data"}]}, "spec.storage[0].prefix"),
    ({"namespaces": ["a"], "storage": [{"prefix": "file://host/data"}]}, "spec.storage[0].prefix"),
    ({"namespaces": ["a"], "compute": ["Anywhere"]}, "spec.compute"),
    ({"namespaces": ["a"], "metastoreAddresses": [{"catalog": "c", "address": "nohost"}]}, "metastoreAddresses[0]"),
    ({"namespaces": ["a"], "minimums": {"syncInterval": "soon"}}, "spec.minimums.syncInterval"),
    ({"namespaces": ["Not_A_Namespace"]}, "spec.namespaces"),
])
def test_policies_the_operator_cannot_read(spec: dict[str, Any], message: str) -> None:
    with pytest.raises(SpecInvalid) as refused:
        parse_catalog_policy({"metadata": {"name": "p"}, "spec": spec})
    assert refused.value.reason == reasons.POLICY_INVALID and message in refused.value.message


def test_an_unreadable_policy_grants_nothing_and_refusals_say_why() -> None:
    broken = InvalidPolicy("team-a", "CatalogPolicy team-a: spec.storage must be a list")
    found = granted(broken)
    violation = found.check_storage("s3://team-a/x", "spec.filesystem")
    assert violation is not None and "team-a is invalid and grants nothing" in violation.message


def test_audit_reports_instead_of_refusing() -> None:
    violation = Violation(reasons.STORAGE_NOT_ALLOWED, "outside")
    assert judged(violation, granted()) == (violation, None)
    refusal, audit = judged(violation, granted(defaults=Defaults(enforcement=AUDIT)))
    assert refusal is None and audit is not None
    assert (audit.type, audit.status, audit.reason) == (reasons.POLICY_COMPLIANT, "False", reasons.STORAGE_NOT_ALLOWED)
    assert judged(None, granted()) == (None, None)
