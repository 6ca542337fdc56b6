"""The SparkApplication (Kubeflow Spark operator, sparkoperator.k8s.io/v1beta2) of one TableReplica copy run
(secondary's compute type SparkApplication): the copy engine's `hivecat distcp` in a Spark driver, copying on
the executors (the Spark engine), with the same arguments as the Job (workloads/copy_job.py), the same fixed
name per (replica, secondary), labels and annotations, and the same absence of secrets in the object.

The driver runs hivecat.commands.spark_copy as its main application file. spark-submit takes a Python
application as a file, not a module, so the image holds that module's file at ENTRY_FILE:

    ln -s "$(python3 -c 'import hivecat.commands.spark_copy as m; print(m.__file__)')" /opt/hivecat/spark_copy.py

(and hivecat installed for the image's Python, with pyspark). Executors receive the copy tasks pickled; S3
keys never travel with them (copy/storage.py): each executor reads them from the same mounted Secret, so the
Secret is mounted in the driver and in every executor at the same path.

Spark writes into its image (work dir, local dirs), so unlike the Job the root filesystem stays writable; the
pods still refuse root, privilege escalation and every capability.

A kerberized secondary: as in the Job, every process that copies logs in itself from the keytab, so the keytab
Secret is mounted in the driver and every executor (the Spark operator's `secrets`, which mounts the whole
Secret: the file is the Secret's key) and the operator's krb5.conf and WebHDFS CA (its ConfigMap, `configMaps`).
Not Spark's own spark.kerberos.*: hivecat's copier talks to WebHDFS itself, and Spark in cluster mode would ship
the keytab through a Hadoop file system (spark.kubernetes.file.upload.path), the very cluster it logs in to.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from hivecat.specs.clusterstorage import SparkApplicationSettings
from hivecat.workloads.copy_job import (CREDENTIALS_DIR, FAILED, KERBEROS_CONFIG_DIR, KEYTAB_DIR, KEYTAB_FILE, RUNNING,
                                        SUCCEEDED, TTL_SECONDS_AFTER_FINISHED, CopyRun, copy_environment,
                                        copy_metadata, distcp_arguments)

API_VERSION: Final = "sparkoperator.k8s.io/v1beta2"
KIND: Final = "SparkApplication"
ENTRY_FILE: Final = "local:///opt/hivecat/spark_copy.py"
# spark-operator requires spec.sparkVersion; hivecat runs on pyspark 4 (pyproject), so an image with hivecat
# has Spark 4 unless compute.sparkApplication.sparkVersion says otherwise.
DEFAULT_SPARK_VERSION: Final = "4.0.0"
# distcp resumes (committed units stay), so a rerun copies only what is missing.
RETRIES: Final = 3
RETRY_INTERVAL_SECONDS: Final = 60
COMPLETED, FAILED_STATE, SUBMISSION_FAILED = "COMPLETED", "FAILED", "SUBMISSION_FAILED"
_POD_SECURITY: Final = {"allowPrivilegeEscalation": False, "runAsNonRoot": True, "capabilities": {"drop": ["ALL"]}}


def _pod(run: CopyRun, spark: SparkApplicationSettings, labels: Mapping[str, str], cores: int | None,
         memory: str | None) -> dict[str, Any]:
    """What driver and executors share: labels, env, the credentials and keytab Secrets, the realms' ConfigMap,
    identity, security, size."""
    pod: dict[str, Any] = {
        "labels": dict(labels),
        "env": copy_environment(run, run.kerberos.keytab_key if run.kerberos else KEYTAB_FILE),
        "securityContext": dict(_POD_SECURITY),
        "podSecurityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
    }
    secrets = []
    if run.credentials_secret:
        secrets.append({"name": run.credentials_secret, "path": CREDENTIALS_DIR, "secretType": "Generic"})
    if run.kerberos is not None:
        secrets.append({"name": run.kerberos.keytab_secret, "path": KEYTAB_DIR, "secretType": "Generic"})
    if secrets:
        pod["secrets"] = secrets
    if run.kerberos_config:
        pod["configMaps"] = [{"name": run.kerberos_config, "path": KERBEROS_CONFIG_DIR}]
    account = spark.service_account or run.service_account
    if account:  # executors too: an IRSA-style role for the store is needed where the bytes are copied
        pod["serviceAccount"] = account
    if cores is not None:
        pod["cores"] = cores
    if memory is not None:
        pod["memory"] = memory
    return pod


def spark_application(run: CopyRun, spark: SparkApplicationSettings, *,
                      main_file: str = ENTRY_FILE) -> dict[str, Any]:
    """A SparkApplication running `hivecat distcp --plan <uri> --plan-digest <digest> --engine spark ...`.
    `run.image` and `run.resources` are the Job's and not used: the image and sizes are `spark`'s."""
    metadata = copy_metadata(run)
    executor = _pod(run, spark, metadata["labels"], spark.executor_cores, spark.executor_memory)
    if spark.executor_instances is not None:
        executor["instances"] = spark.executor_instances
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": metadata,
        "spec": {
            "type": "Python",
            "mode": "cluster",
            "image": spark.image,
            "sparkVersion": spark.spark_version or DEFAULT_SPARK_VERSION,
            "mainApplicationFile": main_file,
            "arguments": distcp_arguments(run, engine="spark"),
            "restartPolicy": {"type": "OnFailure",
                              "onFailureRetries": RETRIES, "onFailureRetryInterval": RETRY_INTERVAL_SECONDS,
                              "onSubmissionFailureRetries": RETRIES,
                              "onSubmissionFailureRetryInterval": RETRY_INTERVAL_SECONDS},
            "timeToLiveSeconds": TTL_SECONDS_AFTER_FINISHED,
            "driver": _pod(run, spark, metadata["labels"], spark.driver_cores, spark.driver_memory),
            "executor": executor,
        },
    }


def spark_application_state(obj: Mapping[str, Any] | None) -> str | None:
    """status.applicationState.state as the Spark operator writes it (SUBMITTED, RUNNING, COMPLETED, FAILED,
    SUBMISSION_FAILED, PENDING_RERUN, ...); None before it wrote one."""
    state = (((obj or {}).get("status") or {}).get("applicationState") or {}).get("state")
    return state if isinstance(state, str) and state else None


def spark_application_phase(obj: Mapping[str, Any] | None) -> str:
    """Running, Succeeded or Failed, as copy_job.job_state says of a Job. FAILED is final (the Spark operator
    moves a failure it will retry to PENDING_RERUN); SUBMISSION_FAILED is final only once no submission retry
    is left (submissionAttempts past onSubmissionFailureRetries), as the Spark operator decides it."""
    state = spark_application_state(obj)
    if state == COMPLETED:
        return SUCCEEDED
    if state == FAILED_STATE:
        return FAILED
    if state == SUBMISSION_FAILED:
        policy = (((obj or {}).get("spec") or {}).get("restartPolicy") or {})
        retries = policy.get("onSubmissionFailureRetries")
        attempts = ((obj or {}).get("status") or {}).get("submissionAttempts") or 0
        retried = policy.get("type") == "Always" or (
            policy.get("type") == "OnFailure" and isinstance(retries, int) and attempts <= retries)
        return RUNNING if retried else FAILED
    return RUNNING
