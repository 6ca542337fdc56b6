"""A ClusterStorage's status has two writers, registration (Ready) and the drift scan (Drifted), and the
daemon writes from a body that lags the watch. A scan rendered from that body put back the Ready it had read,
undoing a registration that refused the cluster meanwhile (a narrowed CatalogPolicy): the refusal was lost for
good, since nothing moved the registration's inputs again. Status writes are now compare-and-set on the body's
resourceVersion, rendered again onto the status as it is (k8s.write_status). Real API server; the scan is the
operator's own function, called with the stale body the daemon would have held."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import kopf
import pytest
from kube.clients import Client
from kube.controlplane import ControlPlane

from hivecat import k8s, reasons
from hivecat.handlers import drift
from hivecat.kinds import CLUSTER_STORAGE
from hivecat.reconcile.conditions import Condition, find, merge
from support.kube_resources import apply, status_of


def storage(name: str) -> dict:
    return {"apiVersion": "hivecatalog.io/v1alpha1", "kind": "ClusterStorage", "metadata": {"name": name},
            "spec": {"catalogRef": {"name": "dev"}, "filesystem": "file:///data/team"}}


@pytest.fixture
def in_process_client(control_plane: ControlPlane, crds: None, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """hivecat.k8s of this process, talking to the test's API server as the operator would."""
    monkeypatch.setenv("KUBECONFIG", str(control_plane.admin_kubeconfig))
    k8s._made_dynamic.cache_clear()
    yield
    k8s._made_dynamic.cache_clear()


def test_a_scan_from_a_stale_body_never_undoes_a_refusal(kubectl: Client, namespace: str,
                                                         in_process_client: None) -> None:
    apply(kubectl, namespace, storage("own"))
    registered = Condition.of("Ready", True, reasons.REGISTERED, "registered in the catalog's cluster registry")
    k8s.patch_status(CLUSTER_STORAGE, namespace, "own", {
        "phase": "Ready", "conditions": merge(None, [registered], generation=1, now="2026-01-01T00:00:00Z")})
    stale = kopf.Body(k8s.get(CLUSTER_STORAGE.api_version, CLUSTER_STORAGE.kind, namespace, "own"))
    # The registration refuses it (the policy no longer grants the filesystem) after the daemon's body was read.
    refused = Condition.of("Ready", False, reasons.STORAGE_NOT_ALLOWED, "no longer granted")
    k8s.patch_status(CLUSTER_STORAGE, namespace, "own", {
        "phase": "Invalid", "conditions": merge(None, [refused], generation=1, now="2026-01-01T00:00:00Z")})

    drift.scan(stale, kopf.Memo(), logging.getLogger("test"), {})  # its catalog is missing: Drifted Unknown

    status = status_of(kubectl, namespace, "own", "clusterstorage")
    ready = find(status.get("conditions"), "Ready")
    assert (ready["status"], ready["reason"]) == ("False", reasons.STORAGE_NOT_ALLOWED), status
    assert status["phase"] == "Invalid", status  # a scan's phase never hides a refusal
    drifted = find(status.get("conditions"), "Drifted")
    assert (drifted["status"], drifted["reason"]) == ("Unknown", reasons.CATALOG_NOT_FOUND), status  # scan wrote


def test_a_status_write_to_a_deleted_resource_is_dropped(kubectl: Client, namespace: str,
                                                          in_process_client: None) -> None:
    apply(kubectl, namespace, storage("gone"))
    body = kopf.Body(k8s.get(CLUSTER_STORAGE.api_version, CLUSTER_STORAGE.kind, namespace, "gone"))
    kubectl("delete", "-n", namespace, "clusterstorage", "gone", "--wait=true")
    k8s.write_status(CLUSTER_STORAGE, body, lambda now: {"phase": "Ready"})  # nothing to report on: no error
