"""Resources the previous release made keep working under this one: the previous release's own code runs first
(kopf's state under hivecatalog.io/), then this release takes over. Nothing is created again, the old keys go,
the finalizer keeps its name, and hivecat's annotations now reach the handlers through kopf's update events."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest
from kube.clients import Client

from support.kube_resources import FACTORY, GLUE_FACTORY, apply, aws_secret, get, status_of, wait_for, wait_reason
from support.services import MotoServer

from hivecat.handlers.storage import PREFIX
from hivecat.kinds import ANNOTATION_SYNC_NOW, FINALIZER

REPO = Path(__file__).resolve().parents[2]
# The last commit whose operator kept kopf's state under hivecatalog.io/ (before handlers/storage.py).
PREVIOUS_RELEASE = "80e7a101cb601ab9d92b45df95f901bdd6b12641"
LEGACY = ("hivecatalog.io/kopf-managed", "hivecatalog.io/last-handled-configuration")
NEW = "s3://upgrade-lake/warehouse"


@pytest.fixture
def previous_release(tmp_path: Path) -> Path:
    """The previous release's operator package (its `operator/` directory), from this repository's history."""
    found = subprocess.run(["git", "-C", str(REPO), "cat-file", "-e", f"{PREVIOUS_RELEASE}^{{commit}}"],
                           capture_output=True)
    if found.returncode != 0:
        pytest.skip(f"the previous release ({PREVIOUS_RELEASE[:10]}) is not in this clone's history (shallow?)")
    archive = subprocess.run(["git", "-C", str(REPO), "archive", PREVIOUS_RELEASE, "operator"],
                             capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(tmp_path)], input=archive, check=True)
    return tmp_path / "operator"


def resources(moto: MotoServer) -> list[dict]:
    meta = {"apiVersion": "hivecatalog.io/v1alpha1"}
    return [aws_secret(),
            {**meta, "kind": "HiveCatalog", "metadata": {"name": "lake"},
             "spec": {"configurations": [{"classification": c, "properties": {FACTORY: GLUE_FACTORY}}
                                         for c in ("hive-site", "spark-hive-site")],
                      "glue": {"region": moto.region, "endpoint": moto.endpoint, "relocateFunctions": False,
                       "credentialsSecretRef": {"name": "aws"}, "defaultDatabaseLocation": NEW}}},
            {**meta, "kind": "ClusterStorage", "metadata": {"name": "lake-s3"},
             "spec": {"catalogRef": {"name": "lake"}, "filesystem": NEW, "scanInterval": "1h"}},
            {**meta, "kind": "TableReplica", "metadata": {"name": "orders"},
             "spec": {"catalogRef": {"name": "lake"}, "database": "sales", "table": "orders",
                      "primary": "lake-s3", "secondaries": ["dr"], "schedule": {"interval": "1h"}}}]


OBJECTS = (("hivecatalog", "lake"), ("clusterstorage", "lake-s3"), ("tablereplica", "orders"))


def annotations(kubectl: Client, namespace: str, kind: str, name: str) -> dict[str, str]:
    return ((get(kubectl, namespace, kind, name) or {}).get("metadata") or {}).get("annotations") or {}


def test_objects_of_the_previous_release_are_taken_over_without_creating_them_again(
        kubectl: Client, namespace: str, run_operator, moto: MotoServer, previous_release: Path) -> None:
    grants = {"glue": [{"region": moto.region, "endpoint": moto.endpoint}], "storage": [{"prefix": NEW}]}
    policy = f"{namespace}-lab"

    previous = run_operator(namespace, env={"PYTHONPATH": str(previous_release)}, grants=grants)
    apply(kubectl, namespace, *resources(moto))
    wait_reason(kubectl, namespace, "lake-s3", "NoDrift", "Drifted", kind="clusterstorage", timeout=90)
    for kind, name in (*OBJECTS, ("catalogpolicy", policy)):
        wait_for(f"the previous release's state on {kind} {name}",
                 lambda: all(key in annotations(kubectl, namespace, kind, name) for key in LEGACY))
    assert "Creation is processed" in previous.log()
    previous.stop()
    scanned = status_of(kubectl, namespace, "lake-s3", "clusterstorage")["drift"]["lastScanTime"]
    generations = {name: get(kubectl, namespace, kind, name)["metadata"]["generation"] for kind, name in OBJECTS}

    current = run_operator(namespace, grants=grants)
    for kind, name in (*OBJECTS, ("catalogpolicy", policy)):
        moved = wait_for(f"kopf's state on {kind} {name} moved to {PREFIX}/", lambda: (
            found := annotations(kubectl, namespace, kind, name)) and not any(k in found for k in LEGACY)
            and f"{PREFIX}/last-handled-configuration" in found and found, timeout=60)
        assert not [key for key in moved if key.startswith("hivecatalog.io/")], moved
    for kind, name in OBJECTS:
        found = get(kubectl, namespace, kind, name)
        assert found["metadata"]["finalizers"] == [FINALIZER]
        assert found["metadata"]["generation"] == generations[name]  # the spec untouched
    wait_for("the scan on resuming", lambda: status_of(kubectl, namespace, "lake-s3", "clusterstorage")
             ["drift"]["lastScanTime"] != scanned, timeout=60)
    assert "Resuming is processed" in current.log()
    assert "Creation is processed" not in current.log()

    # hivecat's own annotation is an update now: a scan long before the hour's interval is due.
    time.sleep(1.1)  # lastScanTime has whole seconds
    resumed = status_of(kubectl, namespace, "lake-s3", "clusterstorage")["drift"]["lastScanTime"]
    kubectl("annotate", "-n", namespace, "clusterstorage", "lake-s3", f"{ANNOTATION_SYNC_NOW}=1")
    wait_for("the scan asked for", lambda: status_of(kubectl, namespace, "lake-s3", "clusterstorage")
             ["drift"]["lastScanTime"] != resumed, timeout=60)
    assert "Creation is processed" not in current.log()
