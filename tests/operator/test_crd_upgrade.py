"""The documented CRD upgrade path (docs/operations.md): `kubectl apply --server-side -f crds/` over the CRDs
of an earlier release, with live resources. Here the earlier release is today's TableReplica CRD without
spec.housekeeping (as it was before that field came): a TableReplica written then keeps every field through
the upgrade, and the new field is accepted only after it."""

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
