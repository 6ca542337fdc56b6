"""hivecat never adopts or deletes an object it did not create, and a broken journal database is a condition:
on the real control plane with the real operator process. Before, a HiveCatalog named like an existing
ConfigMap took it over (server-side apply with force) and garbage collection removed it with the catalog, and
a Glue catalog deleted `<name>-metastore*` whoever had made them; a journal database that does not exist made
the ClusterStorage daemon die with a traceback every minute."""

from __future__ import annotations

import time

import sqlalchemy as sa
from kube.clients import Client

from hivecat import reasons
from support.glue_lake import NEW, OLD, build_lake
from support.kube_resources import (FACTORY, GLUE_FACTORY, apply, aws_secret, get, status_of, wait_reason,
                                    wait_taken)
from support.services import MotoServer

THEIRS = {"app": "someone-elses"}


def theirs(kind: str, name: str) -> dict:
    """An object a team made itself, without hivecat's label or owner."""
    body: dict = {"apiVersion": "apps/v1" if kind == "Deployment" else "v1", "kind": kind,
                  "metadata": {"name": name, "labels": THEIRS}}
    if kind == "ConfigMap":
        body["data"] = {"mine": "yes"}
    elif kind == "Service":
        body["spec"] = {"selector": THEIRS, "ports": [{"port": 80}]}
    else:
        body["spec"] = {"selector": {"matchLabels": THEIRS}, "replicas": 0, "template": {
            "metadata": {"labels": THEIRS}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}
    return body


def lake(moto: MotoServer, name: str = "lake") -> dict:
    return {"apiVersion": "hivecatalog.io/v1alpha1", "kind": "HiveCatalog", "metadata": {"name": name},
            "spec": {"configurations": [{"classification": c, "properties": {FACTORY: GLUE_FACTORY}}
                                        for c in ("hive-site", "spark-hive-site")],
                     "glue": {"region": moto.region, "endpoint": moto.endpoint, "relocateFunctions": False,
                              "credentialsSecretRef": {"name": "aws"}, "defaultDatabaseLocation": NEW}}}


def versions(kubectl: Client, namespace: str, *names: str) -> dict[str, tuple | None]:
    """kind/name → what taking an object over or writing to it changes (uid, generation, labels, annotations,
    owners, the writers of everything but its status, its data and spec), None for an object that is gone. Not the
    resourceVersion: Kubernetes' own controllers write a Deployment's status when they get to it."""
    found: dict[str, tuple | None] = {}
    for name in names:
        kind, _, object_name = name.partition("/")
        item = get(kubectl, namespace, kind.lower(), object_name)
        if item is None:
            found[name] = None
            continue
        meta = item["metadata"]
        writers = sorted({m["manager"] for m in meta.get("managedFields") or () if m.get("subresource") != "status"})
        found[name] = (meta["uid"], meta.get("generation"), meta.get("labels"), meta.get("annotations"),
                       meta.get("ownerReferences") or [], writers, item.get("data"), item.get("spec"))
    return found


def test_objects_hivecat_did_not_create_are_never_taken_over_or_deleted(
        kubectl: Client, namespace: str, run_operator, moto: MotoServer) -> None:
    run_operator(namespace, grants={"glue": [{"region": moto.region, "endpoint": moto.endpoint}],
                                    "storage": [{"prefix": NEW}]})
    # The team's own objects, named as hivecat would name a Glue catalog's discovery ConfigMap, the metastore a
    # Glue catalog removes, and the cluster registry.
    names = ("ConfigMap/lake", "Deployment/lake-metastore", "Service/lake-metastore", "ConfigMap/lake-metastore-config",
             "ConfigMap/lake-clusters")
    apply(kubectl, namespace, *(theirs(*name.split("/")) for name in names))
    before = versions(kubectl, namespace, *names)
    apply(kubectl, namespace, aws_secret(), lake(moto),
          {"apiVersion": "hivecatalog.io/v1alpha1", "kind": "ClusterStorage", "metadata": {"name": "s3"},
           "spec": {"catalogRef": {"name": "lake"}, "filesystem": NEW, "repair": "Off"}})
    wait_taken(kubectl, namespace, "lake")
    wait_taken(kubectl, namespace, "s3", "clusterstorage")
    time.sleep(2)  # more passes (the catalog is retried): still nothing of theirs touched
    assert versions(kubectl, namespace, *names) == before
    taken = wait_reason(kubectl, namespace, "lake", reasons.NAME_TAKEN)
    assert "ConfigMap" in taken["message"] and "lake" in taken["message"]
    wait_reason(kubectl, namespace, "s3", reasons.NAME_TAKEN, kind="clusterstorage")
    # The catalog goes; the team's objects stay (garbage collection takes only what the catalog owns).
    kubectl("delete", "-n", namespace, "clusterstorage/s3", "hivecatalog/lake", "--wait", "--timeout=60s")
    time.sleep(5)
    assert versions(kubectl, namespace, *names) == before


def test_a_journal_database_that_does_not_exist_is_a_condition_not_a_traceback(
        kubectl: Client, namespace: str, run_operator, moto: MotoServer, scratch_mariadb: str) -> None:
    build_lake(moto.client("glue"))
    missing = sa.make_url(scratch_mariadb).set(database="absent_journal_db").render_as_string(
        hide_password=False)
    operator = run_operator(namespace, env={"HIVECAT_JOURNAL_URL": missing},
                            grants={"glue": [{"region": moto.region, "endpoint": moto.endpoint}],
                                    "storage": [{"prefix": NEW}]})
    apply(kubectl, namespace, aws_secret(), lake(moto),
          {"apiVersion": "hivecatalog.io/v1alpha1", "kind": "ClusterStorage", "metadata": {"name": "lake-s3"},
           "spec": {"catalogRef": {"name": "lake"}, "filesystem": NEW, "aliases": [OLD], "repair": "Auto",
                    "scanInterval": "1m"}})
    wait_taken(kubectl, namespace, "lake-s3", "clusterstorage")
    time.sleep(10)  # the scan and its retries: none may end in a traceback
    assert "Traceback" not in operator.log(), operator.log()[-3000:]
    drifted = wait_reason(kubectl, namespace, "lake-s3", "JournalUnavailable", type_="Drifted", kind="clusterstorage",
                          timeout=90)
    assert drifted["status"] == "Unknown" and "absent_journal_db" in drifted["message"]
    assert sa.make_url(scratch_mariadb).password not in str(status_of(kubectl, namespace, "lake-s3", "clusterstorage"))
