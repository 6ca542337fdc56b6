"""The copy Job of a TableReplica run (workloads/copy_job.py): its fixed name, labels, command, security and
what it never holds (a secret), and job_state for each way a Job ends."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from support.copy_runs import DIGEST, SECRET_VALUES
from support.copy_runs import copy_run as run

from hivecat.copy.storage import CREDENTIALS_DIR_ENV, S3Settings
from hivecat.workloads.copy_job import CREDENTIALS_DIR, MAX_COPY_NAME, copy_job, copy_name, job_state

DNS_1035 = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")


def container(job: dict[str, Any]) -> dict[str, Any]:
    [only] = job["spec"]["template"]["spec"]["containers"]
    return only


def test_the_command_pins_the_plan_by_its_digest_and_asks_for_json() -> None:
    job = copy_job(run(verify="checksum", engine="local", parallelism=16, bandwidth_mbps=200))
    assert container(job)["command"] == [
        "hivecat", "distcp", "--plan", run().plan_uri, "--plan-digest", DIGEST, "--verify", "checksum",
        "--engine", "local", "--delete", "--parallelism", "16", "--bandwidth", "200", "--output", "json"]
    assert copy_job(run(delete=False))["spec"]["template"]["spec"]["containers"][0]["command"] == [
        "hivecat", "distcp", "--plan", run().plan_uri, "--plan-digest", DIGEST, "--verify", "size",
        "--engine", "auto", "--output", "json"]


def test_name_is_fixed_per_replica_and_secondary_and_the_run_is_in_label_and_annotations() -> None:
    first, second = copy_job(run()), copy_job(run(run_id="20250102T000000Z-def456", plan_digest="sha256:" + "cd" * 32))
    assert first["metadata"]["name"] == second["metadata"]["name"] == copy_name("orders", "s3-dr")
    assert first["metadata"]["name"].startswith("orders-copy-s3-dr-")
    assert copy_name("orders", "hdfs-dr") != copy_name("orders", "s3-dr") != copy_name("returns", "s3-dr")
    assert copy_name("a-copy-b", "c") != copy_name("a", "b-copy-c")  # the hash tells them apart
    meta = second["metadata"]
    assert meta["namespace"] == "data"
    assert meta["labels"]["hivecatalog.io/copy-run"] == "20250102T000000Z-def456"
    assert meta["annotations"] == {"hivecatalog.io/copy-run-id": "20250102T000000Z-def456",
                                   "hivecatalog.io/copy-plan": run().plan_uri,
                                   "hivecatalog.io/copy-plan-digest": "sha256:" + "cd" * 32}


@pytest.mark.parametrize("replica, secondary", [
    ("r" * 253, "s"), ("orders", "s" * 253), ("a" * 200, "b" * 200), ("9lives.v2", "dr.east-1"), ("x", "y")])
def test_long_or_odd_names_become_dns_labels_that_fit_a_spark_ui_service(replica: str, secondary: str) -> None:
    name = copy_name(replica, secondary)
    assert DNS_1035.fullmatch(name) and len(name) <= MAX_COPY_NAME == 56
    assert len(name + "-ui-svc") <= 63
    assert name == copy_name(replica, secondary)
    assert copy_name(replica + "x", secondary) != name


def test_labels_follow_the_design_and_select_the_pods() -> None:
    job = copy_job(run(replica="r" * 100))
    labels = job["metadata"]["labels"]
    assert {k: v for k, v in labels.items() if k != "hivecatalog.io/tablereplica"} == {
        "app.kubernetes.io/managed-by": "hivecat", "app.kubernetes.io/part-of": "analytics",
        "app.kubernetes.io/component": "copy", "hivecatalog.io/hivecatalog": "analytics",
        "hivecatalog.io/clusterstorage": "s3-dr", "hivecatalog.io/copy-run": "20250101T000000Z-abc123"}
    assert len(labels["hivecatalog.io/tablereplica"]) <= 63
    assert job["spec"]["template"]["metadata"]["labels"] == labels


def test_retries_deadline_ttl_and_failure_policy() -> None:
    spec = copy_job(run(active_deadline_seconds=7200))["spec"]
    assert spec["backoffLimit"] == 3 and spec["activeDeadlineSeconds"] == 7200
    assert spec["ttlSecondsAfterFinished"] == 86400 and spec["podReplacementPolicy"] == "Failed"
    assert spec["template"]["spec"]["restartPolicy"] == "Never"
    [fail_on_bad_input, ignore_disruption] = spec["podFailurePolicy"]["rules"]
    assert fail_on_bad_input == {"action": "FailJob",
                                 "onExitCodes": {"containerName": "distcp", "operator": "In", "values": [2]}}
    assert ignore_disruption["action"] == "Ignore"


def test_the_pod_is_locked_down_and_writes_only_to_tmp() -> None:
    pod = copy_job(run())["spec"]["template"]["spec"]
    assert pod["securityContext"] == {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}}
    assert container(copy_job(run()))["securityContext"] == {
        "allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True, "runAsNonRoot": True,
        "capabilities": {"drop": ["ALL"]}}
    assert pod["automountServiceAccountToken"] is False and "serviceAccountName" not in pod
    assert pod["volumes"] == [{"name": "tmp", "emptyDir": {}}]
    assert container(copy_job(run()))["volumeMounts"] == [{"name": "tmp", "mountPath": "/tmp"}]
    assert container(copy_job(run()))["env"] == [] and "resources" not in container(copy_job(run()))


def test_service_account_resources_endpoints_and_the_credentials_secret_as_files() -> None:
    resources = {"requests": {"cpu": "2", "memory": "4Gi"}, "limits": {"memory": "8Gi"}}
    job = copy_job(run(service_account="copier", resources=resources, credentials_secret="s3-dr-aws",
                       s3_endpoint="http://minio.storage:9000", webhdfs_endpoints="nn:8020=http://nn:9870",
                       hadoop_user="hive"))
    pod = job["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == "copier"
    assert container(job)["resources"] == resources and container(job)["resources"] is not resources
    assert container(job)["env"] == [
        {"name": "HIVECAT_S3_ENDPOINT", "value": "http://minio.storage:9000"},
        {"name": CREDENTIALS_DIR_ENV, "value": CREDENTIALS_DIR},
        {"name": "HIVECAT_WEBHDFS_ENDPOINTS", "value": "nn:8020=http://nn:9870"},
        {"name": "HADOOP_USER_NAME", "value": "hive"}]
    assert {"name": "s3-credentials", "secret": {"secretName": "s3-dr-aws"}} in pod["volumes"]
    assert {"name": "s3-credentials", "mountPath": CREDENTIALS_DIR, "readOnly": True} in container(job)["volumeMounts"]


def test_the_engine_reads_the_mounted_secret_the_job_points_it_at(tmp_path) -> None:
    """The directory and file names the Job sets up are the ones the copy engine reads."""
    (tmp_path / "access-key-id").write_text(SECRET_VALUES[0])
    (tmp_path / "secret-access-key").write_text(SECRET_VALUES[1] + "\n")
    env = {e["name"]: e["value"] for e in container(copy_job(run(credentials_secret="s")))["env"]}
    settings = S3Settings.from_environment({**env, CREDENTIALS_DIR_ENV: str(tmp_path)})
    assert (settings.access_key, settings.secret_key) == SECRET_VALUES


def test_no_secret_value_anywhere_in_the_object() -> None:
    text = json.dumps(copy_job(run(credentials_secret="s3-dr-aws", s3_endpoint="https://s3.example")))
    assert not any(value in text for value in SECRET_VALUES)
    assert "secretKeyRef" not in text and "AWS_SECRET_ACCESS_KEY" not in text and "stringData" not in text


@pytest.mark.parametrize("changes", [
    {"verify": "md5"}, {"engine": "yarn"}, {"plan_digest": "md5:abc"}, {"plan_digest": "sha256:" + "AB" * 32},
    {"parallelism": 0}, {"bandwidth_mbps": -1}, {"parallelism": True}, {"active_deadline_seconds": 0}])
def test_a_run_that_cannot_be_launched_is_refused(changes: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        run(**changes)


def _job(*conditions: tuple[str, str]) -> dict[str, Any]:
    return {"status": {"conditions": [{"type": t, "status": s} for t, s in conditions]}}


@pytest.mark.parametrize("job, state", [
    (None, "Running"), ({}, "Running"), ({"status": {}}, "Running"), (_job(("Suspended", "True")), "Running"),
    (_job(("Complete", "True")), "Succeeded"),
    (_job(("SuccessCriteriaMet", "True")), "Succeeded"),
    (_job(("SuccessCriteriaMet", "True"), ("Complete", "True")), "Succeeded"),
    (_job(("Failed", "True")), "Failed"),
    (_job(("FailureTarget", "True")), "Failed"),
    (_job(("FailureTarget", "True"), ("Failed", "True")), "Failed"),
    (_job(("Failed", "False"), ("Complete", "False")), "Running"),
])
def test_job_state(job: dict[str, Any] | None, state: str) -> None:
    assert job_state(job) == state


def test_a_kerberized_secondarys_keytab_is_one_file_only_the_pod_reads() -> None:
    from hivecat.specs.kerberos import KerberosSpec
    from hivecat.workloads.copy_job import KEYTAB_DIR, kerberos_config_map, kerberos_config_name

    kerberos = KerberosSpec("etl-a@CORP.EXAMPLE.COM", "team-a-keytab", "etl.keytab")
    config = kerberos_config_name("orders", "hdfs-dr")
    copy = run(kerberos=kerberos, kerberos_config=config, kerberos_config_keys=("krb5.conf", "webhdfs-ca.pem"))
    job = copy_job(copy)
    pod = job["spec"]["template"]["spec"]
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert volumes["keytab"]["secret"] == {"secretName": "team-a-keytab", "defaultMode": 0o400,
                                           "items": [{"key": "etl.keytab", "path": "keytab"}]}
    # the kubelet gives the root-owned file this group, group-readable: the image's user reads it (e2e proves it)
    assert pod["securityContext"]["fsGroup"] == 10001 and "fsGroup" not in copy_job(run())["spec"]["template"][
        "spec"]["securityContext"]
    assert volumes["kerberos-config"]["configMap"] == {"name": config}
    env = {e["name"]: e["value"] for e in container(job)["env"]}
    assert env["HIVECAT_KERBEROS_PRINCIPAL"] == "etl-a@CORP.EXAMPLE.COM"
    assert env["HIVECAT_KERBEROS_KEYTAB"] == f"{KEYTAB_DIR}/keytab"
    assert env["HIVECAT_WEBHDFS_PRINCIPAL"] == "HTTP/_HOST@CORP.EXAMPLE.COM"
    assert env["KRB5_CONFIG"].endswith("/krb5.conf") and env["HIVECAT_WEBHDFS_CA_BUNDLE"].endswith("/webhdfs-ca.pem")
    assert env["KRB5CCNAME"].startswith("MEMORY:") and "HADOOP_USER_NAME" not in env
    mounts = {m["name"]: m for m in container(job)["volumeMounts"]}
    assert mounts["keytab"] == {"name": "keytab", "mountPath": KEYTAB_DIR, "readOnly": True}
    config_map = kerberos_config_map(copy, {"krb5.conf": "[libdefaults]\n"})
    assert config_map["metadata"]["name"] == config and config_map["data"] == {"krb5.conf": "[libdefaults]\n"}
    assert len(config) <= 63
    # only the CA: no KRB5_CONFIG pointing at a file that is not there
    ca_only = {e["name"] for e in container(copy_job(run(kerberos_config=config,
                                                          kerberos_config_keys=("webhdfs-ca.pem",))))["env"]}
    assert "HIVECAT_WEBHDFS_CA_BUNDLE" in ca_only and "KRB5_CONFIG" not in ca_only
