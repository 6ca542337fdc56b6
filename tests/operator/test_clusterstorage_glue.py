"""ClusterStorage drift on a Glue catalog (moto): reported while the operator has no journal database,
repaired once it has one, undone from the journal after the operator stopped; every status field written is
one the CRD declares, read back from the API server.

The lake (tests/support/glue_lake.py) keeps its locations under s3://old-lake/warehouse, with an Iceberg and
an ACID table among them; the ClusterStorage's filesystem is s3://new-lake/warehouse and the old bucket is
its alias. moto has no user-defined-function API, so the catalog says `relocateFunctions: false`.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import sqlalchemy as sa
import yaml
from kube.clients import Client

from conftest import CRD_DIR
from support.glue_lake import NEW, OLD, PARTITIONS, as_json, build_lake, dump, moved
from support.kube_resources import (FACTORY, GLUE_FACTORY, apply, aws_secret, events, status_of, wait_for,
                                    wait_reason)
from support.services import MotoServer

HIVECAT = Path(sys.executable).parent / "hivecat"


def lake(moto: MotoServer) -> dict:
    return {"apiVersion": "hivecatalog.io/v1alpha1", "kind": "HiveCatalog", "metadata": {"name": "lake"},
            "spec": {"configurations": [{"classification": c, "properties": {FACTORY: GLUE_FACTORY}}
                                        for c in ("hive-site", "spark-hive-site")],
                     "glue": {"region": moto.region, "endpoint": moto.endpoint, "relocateFunctions": False,
                              "credentialsSecretRef": {"name": "aws"}, "defaultDatabaseLocation": f"{NEW}"}}}


def storage() -> dict:
    return {"apiVersion": "hivecatalog.io/v1alpha1", "kind": "ClusterStorage", "metadata": {"name": "lake-s3"},
            "spec": {"catalogRef": {"name": "lake"}, "filesystem": NEW, "aliases": [OLD], "repair": "Auto"}}


def grants(moto: MotoServer) -> dict:
    """The namespace's grant: moto's Glue with its own keys, and the new bucket its ClusterStorage registers."""
    return {"glue": [{"region": moto.region, "endpoint": moto.endpoint}], "storage": [{"prefix": NEW}]}


def lake_dump(glue) -> dict:
    """The lake as built: the `default` database the HiveCatalog itself creates is not the lake's."""
    return {key: value for key, value in dump(glue).items() if key != "default"}


def declared(*path: str) -> set[str]:
    crd = yaml.safe_load((CRD_DIR / "clusterstorages.yaml").read_text())
    node = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["status"]
    for step in path:
        node = node["properties"][step]
        node = node.get("items", node)
    return set(node["properties"])


def test_glue_drift_is_repaired_only_with_a_journal_and_undone_after_a_restart(
        kubectl: Client, namespace: str, run_operator, moto: MotoServer, scratch_mariadb: str) -> None:
    glue = moto.client("glue")
    build_lake(glue)
    before = lake_dump(glue)

    # No journal database: the drift is reported, nothing is written.
    first = run_operator(namespace, grants=grants(moto))
    apply(kubectl, namespace, aws_secret(), lake(moto), storage())
    reported = wait_reason(kubectl, namespace, "lake-s3", "Drifted", "Drifted", kind="clusterstorage", timeout=90)
    drift = status_of(kubectl, namespace, "lake-s3", "clusterstorage")["drift"]
    assert "journal" in drift["pendingRepair"] and "lastRepairRunId" not in drift
    assert drift["counts"] == {"database": 2, "partition": PARTITIONS, "partition_param": PARTITIONS,
                               "serde_param": 2, "table": 3, "table_param": 1}
    assert drift["refused"] == 2 and sorted(r["reason"] for r in drift["refusals"]) == ["acid", "iceberg"]
    assert str(drift["driftedLocations"]) in reported["message"]
    assert lake_dump(glue) == before

    # With a journal database (a scratch MariaDB database, as the chart's journal.urlSecretRef would give).
    assert first.stop() in (0, -15)
    journal = {"HIVECAT_JOURNAL_URL": scratch_mariadb}
    second = run_operator(namespace, env=journal, grants=grants(moto))
    repaired = wait_for("the repair", lambda: (status_of(kubectl, namespace, "lake-s3", "clusterstorage")
                                               .get("drift") or {}).get("lastRepairRunId"), timeout=90)
    wait_reason(kubectl, namespace, "lake-s3", "Iceberg", "Drifted", kind="clusterstorage")  # only refused ones left
    status = status_of(kubectl, namespace, "lake-s3", "clusterstorage")
    assert status["drift"]["driftedLocations"] == 0 and "pendingRepair" not in status["drift"]
    assert status["drift"]["counts"] == {} and status["drift"]["refused"] == 2
    assert status["drift"]["lastRepairRewritten"] == 2 + 2 * PARTITIONS + 2 + 3 + 1
    assert as_json(lake_dump(glue)) == moved(before, set(before) - {"other.ice", "other.acid"})
    assert wait_for("a DriftRepaired Event", lambda: events(kubectl, namespace, "DriftRepaired"))

    # Every status field is one the CRD declares (the API server would have pruned the rest).
    assert set(status) - {"kopf"} <= declared()
    assert set(status["drift"]) <= declared("drift")
    for condition in status["conditions"]:
        assert set(condition) <= declared("conditions")
    for refusal in status["drift"]["refusals"]:
        assert set(refusal) <= declared("drift", "refusals")

    # The operator stops (repair Off first, so the one started after the undo changes nothing); the journal
    # database still knows the run, and the CLI undoes it.
    off = storage()
    off["spec"]["repair"] = "Off"
    apply(kubectl, namespace, off)
    generation = kubectl.json("get", "-n", namespace, "clusterstorage", "lake-s3")["metadata"]["generation"]
    wait_for("repair Off observed", lambda: status_of(kubectl, namespace, "lake-s3", "clusterstorage").get(
        "observedGeneration") == generation)
    assert second.stop() in (0, -15)
    url = sa.make_url(scratch_mariadb)
    without_password = sa.URL.create(url.drivername, url.username, None, url.host, url.port, url.database, url.query)
    undo = subprocess.run(
        [str(HIVECAT), "relocate", "--catalog", f"glue://{moto.region}", "--endpoint-url", moto.endpoint,
         "--skip-functions", "--journal-url", without_password.render_as_string(),
         "--undo", repaired, "--output", "json"],
        capture_output=True, text=True, timeout=120,
        env={**os.environ, "HIVECAT_JOURNAL_PASSWORD": url.password or ""})
    assert undo.returncode == 0, undo.stderr
    assert as_json(lake_dump(glue)) == as_json(before)
    # An operator again (it releases the resources when the test ends): with repair Off it reports, never writes.
    run_operator(namespace, env=journal, grants=grants(moto))
    wait_for("the drift reported again", lambda: (status_of(kubectl, namespace, "lake-s3", "clusterstorage")
                                                 .get("drift") or {}).get("driftedLocations") == 508)
    assert as_json(lake_dump(glue)) == as_json(before)
