"""The copy SparkApplication (workloads/spark_application.py): the Job's name, labels and arguments with the
Spark engine, sizes from compute.sparkApplication, the credentials and keytab Secrets on driver and executors and
never a value; the application's state and phase; and the driver's entry module."""

from __future__ import annotations

import json
import sys
import types
from typing import Any

import pytest
from support.copy_runs import DIGEST, SECRET_VALUES
from support.copy_runs import copy_run as run

from hivecat.commands import spark_copy
from hivecat.specs.clusterstorage import SparkApplicationSettings
from hivecat.specs.kerberos import KerberosSpec
from hivecat.workloads.copy_job import CREDENTIALS_DIR, KERBEROS_CONFIG_DIR, KEYTAB_DIR, copy_job, copy_name
from hivecat.workloads.spark_application import (ENTRY_FILE, spark_application, spark_application_phase,
                                                 spark_application_state)

SPARK = SparkApplicationSettings("reg.example/hivecat-spark:1", "spark-driver", "4.0.1", 1, "2g", 8, 4, "16g")


def test_the_application_runs_distcp_with_the_spark_engine_under_the_jobs_name_and_labels() -> None:
    app = spark_application(run(verify="checksum", parallelism=64, bandwidth_mbps=100), SPARK)
    job = copy_job(run())
    assert app["apiVersion"] == "sparkoperator.k8s.io/v1beta2" and app["kind"] == "SparkApplication"
    assert app["metadata"] == job["metadata"]
    assert app["metadata"]["name"] == copy_name("orders", "s3-dr")
    spec = app["spec"]
    assert (spec["type"], spec["mode"], spec["image"], spec["sparkVersion"]) == (
        "Python", "cluster", "reg.example/hivecat-spark:1", "4.0.1")
    assert spec["mainApplicationFile"] == ENTRY_FILE == "local:///opt/hivecat/spark_copy.py"
    assert spec["arguments"] == ["--plan", run().plan_uri, "--plan-digest", DIGEST, "--verify", "checksum",
                                 "--engine", "spark", "--delete", "--parallelism", "64", "--bandwidth", "100",
                                 "--output", "json"]
    assert spec["driver"]["labels"] == spec["executor"]["labels"] == app["metadata"]["labels"]


def test_retries_on_failure_and_ttl() -> None:
    spec = spark_application(run(), SPARK)["spec"]
    assert spec["restartPolicy"] == {"type": "OnFailure", "onFailureRetries": 3, "onFailureRetryInterval": 60,
                                     "onSubmissionFailureRetries": 3, "onSubmissionFailureRetryInterval": 60}
    assert spec["timeToLiveSeconds"] == 86400


def test_sizes_and_identity_from_the_settings() -> None:
    spec = spark_application(run(service_account="job-account", resources={"limits": {"memory": "1Gi"}}),
                             SPARK)["spec"]
    driver, executor = spec["driver"], spec["executor"]
    assert (driver["cores"], driver["memory"], driver["serviceAccount"]) == (1, "2g", "spark-driver")
    assert (executor["instances"], executor["cores"], executor["memory"], executor["serviceAccount"]) == (
        8, 4, "16g", "spark-driver")
    assert "resources" not in json.dumps(spec)  # the Job's resources are not Spark's sizes


def test_unset_sizes_are_left_to_spark_and_the_version_defaults_to_spark_4() -> None:
    spec = spark_application(run(), SparkApplicationSettings("spark:4"))["spec"]
    assert spec["sparkVersion"] == "4.0.0"
    for role in ("driver", "executor"):
        assert not {"cores", "memory", "instances", "serviceAccount", "secrets"} & set(spec[role])
    assert spark_application(run(service_account="job-account"), SparkApplicationSettings("spark:4"))[
        "spec"]["driver"]["serviceAccount"] == "job-account"


def test_credentials_secret_mounted_where_the_engine_reads_it_on_driver_and_executors() -> None:
    spec = spark_application(run(credentials_secret="s3-dr-aws", s3_endpoint="http://minio:9000"), SPARK)["spec"]
    for role in ("driver", "executor"):
        assert spec[role]["secrets"] == [{"name": "s3-dr-aws", "path": CREDENTIALS_DIR, "secretType": "Generic"}]
        assert spec[role]["env"] == [{"name": "HIVECAT_S3_ENDPOINT", "value": "http://minio:9000"},
                                     {"name": "HIVECAT_S3_CREDENTIALS_DIR", "value": CREDENTIALS_DIR}]
        assert spec[role]["securityContext"] == {"allowPrivilegeEscalation": False, "runAsNonRoot": True,
                                                 "capabilities": {"drop": ["ALL"]}}
    text = json.dumps(spec)
    assert not any(value in text for value in SECRET_VALUES) and "secretKeyRef" not in text


def test_a_kerberized_secondary_gets_the_keytab_and_realms_on_driver_and_executors() -> None:
    login = KerberosSpec("etl-a@CORP.EXAMPLE.COM", "etl-keytab", "etl.keytab")
    spec = spark_application(run(kerberos=login, kerberos_config="orders-dr-krb5",
                                 kerberos_config_keys=("krb5.conf", "webhdfs-ca.pem"),
                                 webhdfs_endpoints="nn:8020=https://nn:9871"), SPARK)["spec"]
    for role in ("driver", "executor"):
        assert spec[role]["secrets"] == [{"name": "etl-keytab", "path": KEYTAB_DIR, "secretType": "Generic"}]
        assert spec[role]["configMaps"] == [{"name": "orders-dr-krb5", "path": KERBEROS_CONFIG_DIR}]
        env = {e["name"]: e["value"] for e in spec[role]["env"]}
        assert env["HIVECAT_KERBEROS_KEYTAB"] == f"{KEYTAB_DIR}/etl.keytab"  # the whole Secret: the key's file
        assert env["HIVECAT_KERBEROS_PRINCIPAL"] == "etl-a@CORP.EXAMPLE.COM"
        assert env["KRB5_CONFIG"] == f"{KERBEROS_CONFIG_DIR}/krb5.conf" and env["KRB5CCNAME"].startswith("MEMORY:")
        assert env["HIVECAT_WEBHDFS_CA_BUNDLE"] == f"{KERBEROS_CONFIG_DIR}/webhdfs-ca.pem"
    # the Job maps the one key to its own file name, as before
    job_env = {e["name"]: e["value"] for e in copy_job(run(kerberos=login))["spec"]["template"]["spec"]
               ["containers"][0]["env"]}
    assert job_env["HIVECAT_KERBEROS_KEYTAB"] == f"{KEYTAB_DIR}/keytab"


def _app(state: str | None, **more: Any) -> dict[str, Any]:
    status: dict[str, Any] = {} if state is None else {"applicationState": {"state": state}}
    return {"spec": {"restartPolicy": {"type": "OnFailure", "onSubmissionFailureRetries": 3}},
            "status": {**status, **more}}


@pytest.mark.parametrize("obj, state, phase", [
    (None, None, "Running"), ({}, None, "Running"), (_app(None), None, "Running"), (_app(""), None, "Running"),
    (_app("SUBMITTED"), "SUBMITTED", "Running"), (_app("RUNNING"), "RUNNING", "Running"),
    (_app("PENDING_RERUN"), "PENDING_RERUN", "Running"), (_app("SUCCEEDING"), "SUCCEEDING", "Running"),
    (_app("FAILING"), "FAILING", "Running"), (_app("INVALIDATING"), "INVALIDATING", "Running"),
    (_app("UNKNOWN"), "UNKNOWN", "Running"),
    (_app("COMPLETED"), "COMPLETED", "Succeeded"),
    (_app("FAILED"), "FAILED", "Failed"),
    (_app("SUBMISSION_FAILED", submissionAttempts=1), "SUBMISSION_FAILED", "Running"),  # to be retried
    (_app("SUBMISSION_FAILED", submissionAttempts=3), "SUBMISSION_FAILED", "Running"),
    (_app("SUBMISSION_FAILED", submissionAttempts=4), "SUBMISSION_FAILED", "Failed"),  # retries used up
    ({"status": {"applicationState": {"state": "SUBMISSION_FAILED"}}}, "SUBMISSION_FAILED", "Failed"),
    ({"spec": {"restartPolicy": {"type": "Always"}}, "status": {"applicationState": {"state": "SUBMISSION_FAILED"},
                                                                "submissionAttempts": 9}},
     "SUBMISSION_FAILED", "Running"),
])
def test_state_and_phase(obj: dict[str, Any] | None, state: str | None, phase: str) -> None:
    assert spark_application_state(obj) == state
    assert spark_application_phase(obj) == phase


class _FakeSession:
    """What the entry module uses of pyspark: builder.appName(...).getOrCreate() and stop()."""
    made: list[_FakeSession] = []

    def __init__(self) -> None:
        self.stopped = False

    @classmethod
    def appName(cls, name: str) -> type[_FakeSession]:  # noqa: N802 (pyspark's name)
        cls.app_name = name
        return cls

    @classmethod
    def getOrCreate(cls) -> _FakeSession:  # noqa: N802
        cls.made.append(cls())
        return cls.made[-1]

    def stop(self) -> None:
        self.stopped = True


@pytest.fixture
def fake_spark(monkeypatch: pytest.MonkeyPatch) -> type[_FakeSession]:
    module = types.ModuleType("pyspark.sql")
    module.SparkSession = types.SimpleNamespace(builder=_FakeSession)  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "pyspark.sql", module)
    _FakeSession.made.clear()
    return _FakeSession


@pytest.mark.parametrize("argv, engine_args", [
    (["--plan", "file:///p.json"], ["--engine", "spark"]),
    (["--plan", "file:///p.json", "--engine", "local"], ["--engine", "local"]),
    (["--plan", "file:///p.json", "--engine=auto"], ["--engine=auto"]),
])
def test_entry_runs_distcp_in_the_session_adding_the_spark_engine_and_stops_the_session(
        fake_spark: type[_FakeSession], monkeypatch: pytest.MonkeyPatch, argv: list[str],
        engine_args: list[str]) -> None:
    calls: list[list[str]] = []
    monkeypatch.setattr("hivecat.commands.distcp.main", lambda args: calls.append(list(args)) or 1)
    assert spark_copy.main(argv) == 1  # distcp's exit code: the driver fails with the copy
    assert calls == [["--plan", "file:///p.json", *engine_args]]
    assert fake_spark.app_name == "hivecat-distcp" and [s.stopped for s in fake_spark.made] == [True]


def test_entry_stops_the_session_when_distcp_raises(fake_spark: type[_FakeSession],
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(args: list[str]) -> int:
        raise SystemExit(2)  # argparse's way
    monkeypatch.setattr("hivecat.cli.main", refuse)
    with pytest.raises(SystemExit):
        spark_copy.main(["--bogus"])
    assert [s.stopped for s in fake_spark.made] == [True]
