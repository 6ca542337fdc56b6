"""The copy launchers' objects on a real API server: the Job (workloads/copy_job.py) is created for real, with
strict field validation, and read back equal in every field hivecat set; the Job controller makes its pod in a
namespace that enforces the "restricted" Pod Security Standard; the SparkApplication
(workloads/spark_application.py) is accepted by the SparkApplication CRD (tests/support/spark_crd.py) and read
back equal. A second run's object for the same replica and secondary is refused while the first exists."""

from __future__ import annotations

import base64
import dataclasses
import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
from kube.api import Api
from kube.clients import Client
from support.copy_runs import SECRET_VALUES, copy_run
from support.kube_resources import wait_for
from support.spark_crd import CRD_NAME, spark_application_crd

from hivecat.specs.clusterstorage import SparkApplicationSettings
from hivecat.workloads.copy_job import CopyRun, copy_job
from hivecat.workloads.spark_application import spark_application

from conftest import TIMINGS

SPARK = SparkApplicationSettings("reg.example/hivecat-spark:1", "spark-driver", "4.0.1", 1, "2g", 4, 2, "8g")
RESTRICTED = {"pod-security.kubernetes.io/enforce": "restricted", "pod-security.kubernetes.io/warn": "restricted"}


def differences(sent: Any, got: Any, path: str = "") -> list[str]:
    """Where `got` (read back) lacks or changed what `sent` set; fields the server added are not differences."""
    if isinstance(sent, dict):
        if not isinstance(got, dict):
            return [f"{path}: {got!r}"]
        return [d for key, value in sent.items()
                for d in (differences(value, got[key], f"{path}.{key}") if key in got else [f"{path}.{key}: gone"])]
    if isinstance(sent, list):
        if not isinstance(got, list) or len(got) != len(sent):
            return [f"{path}: {got!r}"]
        return [d for i, (a, b) in enumerate(zip(sent, got)) for d in differences(a, b, f"{path}[{i}]")]
    return [] if sent == got else [f"{path}: sent {sent!r}, read back {got!r}"]


def create(api: Api, path: str, body: dict[str, Any]) -> tuple[int, str, dict[str, Any]]:
    """POST with strict field validation (an unknown or misspelt field is an error, not silently dropped):
    status code, the Warning headers (Pod Security), the answer."""
    response = api.request("POST", path, body, fieldValidation="Strict")
    return response.status_code, response.headers.get("Warning", ""), response.json()


def no_secret_in(obj: Any) -> bool:
    text = json.dumps(obj)
    return not any(v in text or base64.b64encode(v.encode()).decode() in text for v in SECRET_VALUES)


@pytest.fixture(scope="module")
def spark_crd(kubectl: Client) -> None:
    kubectl("apply", "-f", str(spark_application_crd()))
    kubectl("wait", "--for=condition=Established", "--timeout=30s", f"crd/{CRD_NAME}")


@pytest.fixture
def run(api: Api, namespace: str) -> Iterator[CopyRun]:
    """A run whose every optional field is set, with long names, in a namespace enforcing the restricted profile,
    with the service account and the credentials Secret it names."""
    api.merge_patch(f"/api/v1/namespaces/{namespace}", {"metadata": {"labels": RESTRICTED}})
    api.create(f"/api/v1/namespaces/{namespace}/serviceaccounts", {"metadata": {"name": "copier"}})
    api.create(f"/api/v1/namespaces/{namespace}/secrets", {
        "metadata": {"name": "s3-dr-aws"},
        "stringData": {"access-key-id": SECRET_VALUES[0], "secret-access-key": SECRET_VALUES[1]}})
    yield copy_run(namespace=namespace, replica="orders-" + "x" * 120, secondary="dr.s3-" + "y" * 100,
                   service_account="copier", credentials_secret="s3-dr-aws",
                   resources={"requests": {"cpu": "500m", "memory": "1Gi"}, "limits": {"memory": "2Gi"}},
                   verify="checksum", engine="local", parallelism=8, bandwidth_mbps=100,
                   s3_endpoint="http://minio.storage:9000", webhdfs_endpoints="nn:8020=http://nn:9870",
                   hadoop_user="hive", active_deadline_seconds=7200)


def test_the_copy_job_is_created_as_built_and_its_pod_passes_the_restricted_profile(
        api: Api, namespace: str, run: CopyRun) -> None:
    job = copy_job(run)
    name = job["metadata"]["name"]
    jobs = f"/apis/batch/v1/namespaces/{namespace}/jobs"
    began = time.monotonic()
    status, warnings, answer = create(api, jobs, job)
    assert status == 201, answer
    assert warnings == ""  # Pod Security "restricted" has nothing to say of the pod template
    got = api.get(f"{jobs}/{name}")
    assert differences(job, got) == []
    assert got["spec"]["template"]["spec"]["containers"][0]["command"][:4] == ["hivecat", "distcp", "--plan",
                                                                                run.plan_uri]

    # The Job controller made its pod from the template: admitted by Pod Security (enforced) and the
    # ServiceAccount admission, the run's labels on it, no secret value anywhere.
    selector = f"batch.kubernetes.io/job-name={name}"
    pods = wait_for("the copy Job's pod",
                    lambda: api.get(f"/api/v1/namespaces/{namespace}/pods", labelSelector=selector)["items"])
    TIMINGS["copy Job created until its pod exists"] = time.monotonic() - began
    [pod] = pods
    assert differences(job["spec"]["template"]["spec"]["containers"], pod["spec"]["containers"]) == []
    assert differences(job["spec"]["template"]["metadata"]["labels"], pod["metadata"]["labels"]) == []
    assert pod["spec"]["serviceAccountName"] == "copier"
    assert no_secret_in(got) and no_secret_in(pod)

    # One run per replica and secondary: the next run's Job cannot be created while this one exists.
    status, _, answer = create(api, jobs, copy_job(dataclasses.replace(run, run_id="20250102T000000Z-def456")))
    assert status == 409 and answer["reason"] == "AlreadyExists"


def test_a_misspelt_job_field_is_refused_not_dropped(api: Api, namespace: str) -> None:
    """The strict validation the test above relies on: a field the API does not know fails the create."""
    job = copy_job(copy_run(namespace=namespace))
    job["spec"]["podReplacmentPolicy"] = "Failed"
    status, _, answer = create(api, f"/apis/batch/v1/namespaces/{namespace}/jobs", job)
    assert status == 400 and "podReplacmentPolicy" in answer["message"]


def test_the_spark_application_is_accepted_as_built(api: Api, namespace: str, run: CopyRun,
                                                     spark_crd: None) -> None:
    from hivecat.specs.kerberos import KerberosSpec

    # kerberized: the keytab Secret and the realms' ConfigMap on driver and executors survive the CRD's schema
    app = spark_application(dataclasses.replace(run, kerberos=KerberosSpec("etl-a@CORP.EXAMPLE.COM", "etl-keytab"),
                                                kerberos_config="orders-krbdr-krb5", kerberos_config_keys=("krb5.conf",)),
                            SPARK)
    apps = f"/apis/sparkoperator.k8s.io/v1beta2/namespaces/{namespace}/sparkapplications"
    status, _, answer = create(api, apps, app)
    assert status == 201, answer
    got = api.get(f"{apps}/{app['metadata']['name']}")
    assert differences(app, got) == []
    assert got["spec"]["arguments"][-2:] == ["--output", "json"] and "--engine" in got["spec"]["arguments"]
    assert no_secret_in(got)
    assert got["spec"]["executor"]["configMaps"] == [{"name": "orders-krbdr-krb5", "path": "/etc/hivecat/kerberos"}]
    assert [s["name"] for s in got["spec"]["executor"]["secrets"]] == ["s3-dr-aws", "etl-keytab"]

    status, _, answer = create(api, apps, spark_application(
        dataclasses.replace(run, run_id="20250102T000000Z-def456"), SPARK))
    assert status == 409 and answer["reason"] == "AlreadyExists"

    misspelt = spark_application(copy_run(namespace=namespace, replica="other"), SPARK)
    misspelt["spec"]["executor"]["instance"] = 2
    status, _, answer = create(api, apps, misspelt)
    assert status == 400 and "instance" in answer["message"]


def test_a_kerberized_copy_job_mounts_its_keytab_and_realms_and_passes_the_restricted_profile(
        api: Api, namespace: str, run: CopyRun) -> None:
    from hivecat.specs.kerberos import KerberosSpec
    from hivecat.workloads.copy_job import kerberos_config_map, kerberos_config_name

    keytab = bytes(range(256)) * 4  # a keytab's bytes: binary, never in the Job, its pod or the ConfigMap
    api.create(f"/api/v1/namespaces/{namespace}/secrets", {
        "metadata": {"name": "etl-keytab"}, "data": {"keytab": base64.b64encode(keytab).decode()}})
    kerberized = dataclasses.replace(
        run, secondary="krbdr", credentials_secret=None, hadoop_user=None,
        kerberos=KerberosSpec("etl-a@CORP.EXAMPLE.COM", "etl-keytab"),
        kerberos_config=kerberos_config_name(run.replica, "krbdr"), kerberos_config_keys=("krb5.conf",))
    config_map = kerberos_config_map(kerberized, {"krb5.conf": "[libdefaults]\n default_realm = CORP.EXAMPLE.COM\n"})
    status, _, answer = create(api, f"/api/v1/namespaces/{namespace}/configmaps", config_map)
    assert status == 201, answer
    job = copy_job(kerberized)
    jobs = f"/apis/batch/v1/namespaces/{namespace}/jobs"
    status, warnings, answer = create(api, jobs, job)
    assert status == 201 and warnings == "", answer
    selector = f"batch.kubernetes.io/job-name={job['metadata']['name']}"
    [pod] = wait_for("the kerberized copy Job's pod",
                     lambda: api.get(f"/api/v1/namespaces/{namespace}/pods", labelSelector=selector)["items"])
    volumes = {v["name"]: v for v in pod["spec"]["volumes"]}
    assert volumes["keytab"]["secret"]["defaultMode"] == 0o400
    assert volumes["kerberos-config"]["configMap"]["name"] == config_map["metadata"]["name"]
    encoded = base64.b64encode(keytab).decode()
    for obj in (api.get(f"{jobs}/{job['metadata']['name']}"), pod, config_map):
        assert encoded[:40] not in json.dumps(obj)
