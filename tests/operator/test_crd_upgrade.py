"""The documented CRD upgrade path (docs/operations.md): `kubectl apply --server-side -f crds/` over the CRDs
of an earlier release, with live resources. Here the earlier release is today's TableReplica CRD without
spec.housekeeping (as it was before that field came): a TableReplica written then keeps every field through
the upgrade, and the new field is accepted only after it. Likewise the changes of the multi-team release: the
HiveCatalog CRD before its control-character rule, with a Glue catalog naming spec.glue.roleArn (kept: a field
removed from the CRD would be pruned from live objects silently), and no CatalogPolicy CRD at all."""

from __future__ import annotations

import copy

import yaml
from kube.clients import Client
from support.kube_resources import apply

from conftest import CRD_DIR

REPLICA = {"apiVersion": "hivecatalog.io/v1alpha1", "kind": "TableReplica", "metadata": {"name": "orders"},
           "spec": {"catalogRef": {"name": "sales"}, "table": "orders", "secondaries": ["dr"],
                    "schedule": {"interval": "30m"}}}


def earlier_tablereplica_crd() -> dict:
    crd = yaml.safe_load((CRD_DIR / "tablereplicas.yaml").read_text())
    earlier = copy.deepcopy(crd)
    del earlier["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["housekeeping"]
    return earlier


LAKE = {"apiVersion": "hivecatalog.io/v1alpha1", "kind": "HiveCatalog", "metadata": {"name": "lake"},
        "spec": {"mode": "Glue", "glue": {"region": "eu-west-1", "roleArn": "arn:aws:iam::123456789012:role/lake"},
                 "configurations": [{"classification": "spark-defaults",
                                     "properties": {"spark.sql.shuffle.partitions": "64"}}]}}


def earlier_hivecatalog_crd() -> dict:
    """Today's HiveCatalog CRD without the rule refusing control characters in configurations."""
    crd = yaml.safe_load((CRD_DIR / "hivecatalogs.yaml").read_text())
    properties = (crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
                  ["configurations"]["items"]["properties"]["properties"])
    properties["x-kubernetes-validations"] = [rule for rule in properties["x-kubernetes-validations"]
                                              if "control characters" not in rule["message"]]
    return crd


def test_the_multi_team_release_upgrades_under_live_resources(kubectl: Client, namespace: str, crds: None) -> None:
    try:
        kubectl("delete", "crd", "catalogpolicies.hivecatalog.io", "--wait")
        kubectl("apply", "--server-side", "--force-conflicts", "-f", "-", stdin=yaml.safe_dump(earlier_hivecatalog_crd()))
        apply(kubectl, namespace, LAKE)
        before = kubectl.json("get", "-n", namespace, "hivecatalog", "lake")

        kubectl("apply", "--server-side", "--force-conflicts", "-f", str(CRD_DIR))
        kubectl("wait", "--for=condition=Established", "--timeout=30s", "-f", str(CRD_DIR))
        after = kubectl.json("get", "-n", namespace, "hivecatalog", "lake")
        assert after["spec"] == before["spec"] and after["spec"]["glue"]["roleArn"].endswith("role/lake")
        bad = {**LAKE, "spec": {**LAKE["spec"], "configurations": [
            {"classification": "spark-defaults", "properties": {"spark.x": "1\nspark.y=2"}}]}}
        refused = kubectl("apply", "-n", namespace, "-f", "-", stdin=yaml.safe_dump(bad),
                          check=False)
        assert refused.returncode != 0 and "control characters" in refused.stderr, refused.stderr
        policy = {"apiVersion": "hivecatalog.io/v1alpha1", "kind": "CatalogPolicy",
                  "metadata": {"name": f"{namespace}-upgraded"}, "spec": {"namespaces": [namespace]}}
        kubectl("apply", "-f", "-", stdin=yaml.safe_dump(policy))
        assert kubectl.json("get", "catalogpolicy", f"{namespace}-upgraded")["spec"]["namespaces"] == [namespace]
    finally:
        kubectl("delete", "catalogpolicy", f"{namespace}-upgraded", "--ignore-not-found", "--wait=false")
        kubectl("delete", "-n", namespace, "hivecatalog", "lake", "--ignore-not-found", "--wait=false")
        kubectl("apply", "--server-side", "--force-conflicts", "-f", str(CRD_DIR))
        kubectl("wait", "--for=condition=Established", "--timeout=30s", "-f", str(CRD_DIR))


def test_crds_upgrade_server_side_under_live_resources(kubectl: Client, namespace: str, crds: None) -> None:
    try:
        kubectl("apply", "--server-side", "--force-conflicts", "-f", "-", stdin=yaml.safe_dump(earlier_tablereplica_crd()))
        apply(kubectl, namespace, REPLICA)
        with_field = copy.deepcopy(REPLICA)
        with_field["spec"]["housekeeping"] = {"delay": "24h"}
        pruned = kubectl("apply", "-n", namespace, "-f", "-", stdin=yaml.safe_dump(with_field), check=False)
        before = kubectl.json("get", "-n", namespace, "tablereplica", "orders")
        assert "housekeeping" not in before["spec"], pruned.stdout + pruned.stderr  # unknown to the earlier CRD

        # The upgrade, as documented.
        kubectl("apply", "--server-side", "--force-conflicts", "-f", str(CRD_DIR))
        kubectl("wait", "--for=condition=Established", "--timeout=30s", "-f", str(CRD_DIR))
        after = kubectl.json("get", "-n", namespace, "tablereplica", "orders")
        assert after["spec"] == before["spec"]  # nothing of the live resource lost or changed
        apply(kubectl, namespace, with_field)
        assert kubectl.json("get", "-n", namespace, "tablereplica", "orders")["spec"]["housekeeping"] == {"delay": "24h"}
    finally:
        kubectl("delete", "-n", namespace, "tablereplica", "orders", "--ignore-not-found", "--wait=false")
        kubectl("apply", "--server-side", "--force-conflicts", "-f", str(CRD_DIR))


DR = {"apiVersion": "hivecatalog.io/v1alpha1", "kind": "ClusterStorage", "metadata": {"name": "dr"},
      "spec": {"catalogRef": {"name": "sales"}, "filesystem": "hdfs://nn:8020", "repair": "Off"}}
KERBEROS = {"principal": "etl-a@CORP.EXAMPLE.COM", "keytabSecretRef": {"name": "etl-keytab"}}
SALES = {"apiVersion": "hivecatalog.io/v1alpha1", "kind": "HiveCatalog", "metadata": {"name": "sales"},
         "spec": {"database": {"type": "mariadb", "host": "db", "name": "hive", "user": "hive",
                               "passwordSecretRef": {"name": "sales-db"}}}}
METASTORE_KERBEROS = {**KERBEROS, "metastorePrincipal": "hive/_HOST@CORP.EXAMPLE.COM",
                      "metastoreKeytabSecretRef": {"name": "hive-keytab"}}


def earlier_kerberos_crds() -> list[dict]:
    """Today's ClusterStorage, CatalogPolicy and HiveCatalog CRDs as they were before Kerberos: no spec.kerberos in
    any, and no rule about it."""
    earlier = []
    for name in ("clusterstorages.yaml", "catalogpolicies.yaml", "hivecatalogs.yaml"):
        crd = yaml.safe_load((CRD_DIR / name).read_text())
        spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
        del spec["properties"]["kerberos"]
        spec["x-kubernetes-validations"] = [r for r in spec.get("x-kubernetes-validations", [])
                                            if "kerberos" not in r["rule"]]
        if not spec["x-kubernetes-validations"]:
            del spec["x-kubernetes-validations"]
        earlier.append(crd)
    return earlier


def test_the_kerberos_release_upgrades_under_live_resources(kubectl: Client, namespace: str, crds: None) -> None:
    policy = {"apiVersion": "hivecatalog.io/v1alpha1", "kind": "CatalogPolicy",
              "metadata": {"name": f"{namespace}-krb"}, "spec": {"namespaces": [namespace]}}
    try:
        for crd in earlier_kerberos_crds():
            kubectl("apply", "--server-side", "--force-conflicts", "-f", "-", stdin=yaml.safe_dump(crd))
        apply(kubectl, namespace, DR, SALES)
        kubectl("apply", "-f", "-", stdin=yaml.safe_dump(policy))
        before = (kubectl.json("get", "-n", namespace, "clusterstorage", "dr"),
                  kubectl.json("get", "catalogpolicy", f"{namespace}-krb"),
                  kubectl.json("get", "-n", namespace, "hivecatalog", "sales"))

        kubectl("apply", "--server-side", "--force-conflicts", "-f", str(CRD_DIR))
        kubectl("wait", "--for=condition=Established", "--timeout=30s", "-f", str(CRD_DIR))
        after = (kubectl.json("get", "-n", namespace, "clusterstorage", "dr"),
                 kubectl.json("get", "catalogpolicy", f"{namespace}-krb"),
                 kubectl.json("get", "-n", namespace, "hivecatalog", "sales"))
        assert [a["spec"] for a in after] == [b["spec"] for b in before]  # nothing lost or changed
        apply(kubectl, namespace, {**SALES, "spec": {**SALES["spec"], "kerberos": METASTORE_KERBEROS}})
        assert kubectl.json("get", "-n", namespace, "hivecatalog", "sales")["spec"]["kerberos"] == {
            **METASTORE_KERBEROS, "keytabSecretRef": {"name": "etl-keytab", "key": "keytab"},
            "metastoreKeytabSecretRef": {"name": "hive-keytab", "key": "keytab"}}  # the defaults
        apply(kubectl, namespace, {**DR, "spec": {**DR["spec"], "kerberos": KERBEROS}})
        got = kubectl.json("get", "-n", namespace, "clusterstorage", "dr")["spec"]["kerberos"]
        assert got == {**KERBEROS, "keytabSecretRef": {"name": "etl-keytab", "key": "keytab"}}  # its default
        granted = {**policy, "spec": {**policy["spec"], "kerberos": {"principals": ["etl-*@CORP.EXAMPLE.COM"],
                                                                     "keytabSecrets": ["etl-keytab"]}}}
        kubectl("apply", "-f", "-", stdin=yaml.safe_dump(granted))
        assert kubectl.json("get", "catalogpolicy", f"{namespace}-krb")["spec"]["kerberos"]["keytabSecrets"] == \
            ["etl-keytab"]
        on_s3 = {**DR, "metadata": {"name": "bucket"},
                 "spec": {**DR["spec"], "filesystem": "s3://b/w", "kerberos": KERBEROS}}
        refused = kubectl("apply", "-n", namespace, "-f", "-", stdin=yaml.safe_dump(on_s3), check=False)
        assert refused.returncode != 0 and "applies to hdfs://" in refused.stderr, refused.stderr
    finally:
        kubectl("delete", "catalogpolicy", f"{namespace}-krb", "--ignore-not-found", "--wait=false")
        kubectl("delete", "-n", namespace, "clusterstorage", "dr", "--ignore-not-found", "--wait=false")
        kubectl("delete", "-n", namespace, "hivecatalog", "sales", "--ignore-not-found", "--wait=false")
        kubectl("apply", "--server-side", "--force-conflicts", "-f", str(CRD_DIR))
        kubectl("wait", "--for=condition=Established", "--timeout=30s", "-f", str(CRD_DIR))
