"""HiveCatalog in Glue mode against moto's Glue: nothing deployed, `default` database with a LocationUri,
client configuration for Glue, idempotent reapply, and garbage collection that keeps the user's Secret."""

from __future__ import annotations

import json
import time

import pytest
from kube.clients import Client

from conftest import TIMINGS
from support.kube_resources import GLUE_FACTORY, apply, aws_secret, children
from support.services import MotoServer


def glue_catalog(name: str, endpoint: str, region: str, *, location: str | None = "s3://lake/warehouse",
                 secret: str = "aws", spark_too: bool = True) -> dict:
    configurations = [{"classification": "hive-site",
                       "properties": {"hive.metastore.client.factory.class": GLUE_FACTORY}}]
    if spark_too:
        configurations.append({"classification": "spark-hive-site",
                               "properties": {"hive.metastore.client.factory.class": GLUE_FACTORY}})
    glue = {"region": region, "endpoint": endpoint, "credentialsSecretRef": {"name": secret}}
    if location:
        glue["defaultDatabaseLocation"] = location
    return {"apiVersion": "hivecatalog.io/v1alpha1", "kind": "HiveCatalog", "metadata": {"name": name},
            "spec": {"configurations": configurations, "glue": glue}}


def glue_grant(moto: MotoServer) -> dict:
    """The namespace's grant: moto's Glue, reached with the namespace's own keys (the Secret `aws`)."""
    return {"glue": [{"region": moto.region, "endpoint": moto.endpoint}]}


def wait_condition(kubectl: Client, namespace: str, name: str, type_: str = "Ready", status: str = "True",
                   timeout: float = 60) -> dict:
    deadline = time.monotonic() + timeout
    catalog: dict = {}
    while time.monotonic() < deadline:
        catalog = kubectl.json("get", "-n", namespace, "hivecatalog", name)
        for condition in (catalog.get("status") or {}).get("conditions") or ():
            if condition["type"] == type_ and condition["status"] == status:
                return catalog
        time.sleep(0.1)
    raise AssertionError(f"{type_} never became {status}: {json.dumps(catalog.get('status'), indent=1)}")


def test_glue_catalog_ready_without_a_metastore(kubectl: Client, namespace: str, run_operator,
                                                 moto: MotoServer) -> None:
    run_operator(namespace, grants=glue_grant(moto))
    apply(kubectl, namespace, aws_secret())
    began = time.monotonic()
    apply(kubectl, namespace, glue_catalog("lake", moto.endpoint, moto.region))
    catalog = wait_condition(kubectl, namespace, "lake")
    TIMINGS["Glue catalog applied→Ready"] = time.monotonic() - began

    status = catalog["status"]
    assert status["mode"] == "Glue" and status["endpoint"] == "" and status["clientConfigMap"] == "lake-client"
    conditions = {c["type"]: c for c in status["conditions"]}
    assert conditions["BackendReachable"]["status"] == "True"
    assert "Warning" not in conditions  # both classifications name the factory: nothing completed for them

    glue = moto.client("glue")
    assert glue.get_database(Name="default")["Database"]["LocationUri"] == "s3://lake/warehouse"

    made = children(kubectl, namespace)
    assert set(made) == {"ConfigMap/lake-client", "ConfigMap/lake"}  # nothing deployed in Glue mode
    client = kubectl.json("get", "-n", namespace, "configmap", "lake-client")
    assert GLUE_FACTORY in client["data"]["hive-site.xml"]
    assert GLUE_FACTORY in client["data"]["spark-defaults.conf"]
    assert "testing" not in json.dumps(client) and "testing" not in json.dumps(catalog)
    owner = client["metadata"]["ownerReferences"][0]
    assert owner["kind"] == "HiveCatalog" and owner["name"] == "lake" and owner["controller"] is True

    # Reapplying the unchanged CR, and the timer's re-checks, change no child.
    apply(kubectl, namespace, glue_catalog("lake", moto.endpoint, moto.region))
    time.sleep(3)
    assert children(kubectl, namespace) == made

    kubectl("delete", "-n", namespace, "hivecatalog/lake", "--wait", "--timeout=60s")
    # The garbage collector removes the children. It learns new resource kinds (our CRDs, applied at the
    # start of this session) from discovery every 30 s, so the first collection of a session can take that long.
    deadline = time.monotonic() + 90
    while children(kubectl, namespace) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert children(kubectl, namespace) == {}
    assert kubectl.json("get", "-n", namespace, "secret", "aws")["metadata"]["name"] == "aws"
    assert glue.get_database(Name="default")["Database"]["Name"] == "default"  # the catalog's data stays


def test_hive_site_only_completes_the_spark_side_with_a_warning(kubectl: Client, namespace: str, run_operator,
                                                                 moto: MotoServer) -> None:
    run_operator(namespace, grants=glue_grant(moto))
    apply(kubectl, namespace, aws_secret(), glue_catalog("lake", moto.endpoint, moto.region, spark_too=False))
    catalog = wait_condition(kubectl, namespace, "lake")
    assert catalog["status"]["mode"] == "Glue"
    warning = next(c for c in catalog["status"]["conditions"] if c["type"] == "Warning")
    assert warning["reason"] == "SparkSideCompleted"
    client = kubectl.json("get", "-n", namespace, "configmap", "lake-client")
    assert GLUE_FACTORY in client["data"]["spark-defaults.conf"]


@pytest.mark.parametrize("case, reason", [
    ("secret-missing", "SecretNotFound"),
    ("secret-key-missing", "SecretKeyNotFound"),
    ("existing-default-without-location", "DefaultDatabaseWithoutLocation"),
])
def test_bad_glue_specs_get_a_reason_and_nothing_is_created(kubectl: Client, namespace: str, run_operator,
                                                            moto: MotoServer, case: str, reason: str) -> None:
    run_operator(namespace, grants=glue_grant(moto))
    glue = moto.client("glue")
    if case == "secret-key-missing":
        apply(kubectl, namespace, {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "aws"},
                                   "stringData": {"AWS_ACCESS_KEY_ID": "testing"}})
    elif case == "existing-default-without-location":
        apply(kubectl, namespace, aws_secret())
        glue.create_database(DatabaseInput={"Name": "default"})
    before = glue.get_databases()["DatabaseList"]
    apply(kubectl, namespace, glue_catalog("lake", moto.endpoint, moto.region))
    catalog = wait_condition(kubectl, namespace, "lake", status="False")
    ready = next(c for c in catalog["status"]["conditions"] if c["type"] == "Ready")
    assert ready["reason"] == reason, ready
    assert "testing" not in json.dumps(catalog)
    assert children(kubectl, namespace) == {}
    assert glue.get_databases()["DatabaseList"] == before  # no write to the catalog either
