"""The Kubernetes Job of one TableReplica copy run (secondary's compute type KubernetesJob): `hivecat distcp`
reading the run's plan from the secondary's filesystem (hivecat.copy.plan_store), pinned by its digest.

One run per (replica, secondary) at a time: the Job's name is fixed per pair (copy_name), so a second Job for
the pair cannot be created while one exists (the API server answers AlreadyExists; a Job's template cannot be
changed either). The caller reads the finished Job's state (job_state), records it, and deletes the Job before
the next run; the run id is in a label and annotations. Ownership is the caller's, as for every workload here:
it adopts the manifest (kopf.adopt, owner the TableReplica) so garbage collection takes the Job with it.

No secret is in the object: S3 keys come from the ClusterStorage's Secret, mounted as files in the directory
the copy engine reads ($HIVECAT_S3_CREDENTIALS_DIR: keys access-key-id, secret-access-key, optional
session-token), or from the pod's identity (service account) when there is no Secret. A kerberized secondary's
keytab is its keytab Secret's key, mounted as one file readable by the pod's user only
($HIVECAT_KERBEROS_KEYTAB); the realms and KDCs are the operator's krb5.conf, in a ConfigMap the operator keeps
beside the Job (kerberos_config_map), since a pod mounts ConfigMaps of its own namespace only.

The image must hold hivecat (the `hivecat` command) and run as a numeric non-root user, as hivecat's own image
does: the pod refuses root, writes only to /tmp (an emptyDir), and may not escalate privileges.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from hivecat.copy.errors import CopyInputError
from hivecat.copy.plan_store import check_digest
from hivecat.copy.storage import (
    CREDENTIALS_DIR_ENV, ENDPOINT_ENVS, HADOOP_USER_ENV, WEBHDFS_CA_BUNDLE_ENV, WEBHDFS_ENDPOINTS_ENV,
    WEBHDFS_PRINCIPAL_ENV,
)
from hivecat.kerberos.login import KEYTAB_ENV, PRINCIPAL_ENV
from hivecat.kinds import (CLUSTER_STORAGE, COMPONENT, GROUP, HIVE_CATALOG, LABEL_COMPONENT, LABEL_MANAGED_BY,
                           LABEL_PART_OF, MANAGED_BY, TABLE_REPLICA)
from hivecat.replication.launch import distcp_args
from hivecat.replication.launch.workload import ANNOTATION_PLAN, ANNOTATION_PLAN_DIGEST, ANNOTATION_RUN
from hivecat.specs.kerberos import KerberosSpec
from hivecat.specs.tablereplica import CopySettings
from hivecat.workloads.keytab_volume import KEYTAB_FILE, KEYTAB_FS_GROUP, keytab_volume
from hivecat.workloads.labels import MAX_NAME, label_value

CONTAINER: Final = "distcp"
# distcp resumes: committed units stay, so a retry copies only what is missing. Exit 2 (bad input, nothing
# written) fails the Job at once instead (pod failure policy): a retry would meet the same input.
BACKOFF_LIMIT: Final = 3
EXIT_BAD_INPUT: Final = 2
ACTIVE_DEADLINE_SECONDS: Final = 24 * 3600  # bounds a hung run; a longer copy resumes at the next run
# The operator reads a finished Job within minutes (it re-checks while a run is out); a day more is for people
# reading its logs, and a backstop when the operator is down: a lost result only means a rerun that has
# nothing left to copy.
TTL_SECONDS_AFTER_FINISHED: Final = 24 * 3600
CREDENTIALS_DIR: Final = "/var/run/secrets/hivecat/s3"
CREDENTIALS_VOLUME: Final = "s3-credentials"
KEYTAB_DIR: Final = "/var/run/secrets/hivecat/kerberos"
KEYTAB_VOLUME: Final = "keytab"
KERBEROS_CONFIG_DIR: Final = "/etc/hivecat/kerberos"
KERBEROS_CONFIG_VOLUME: Final = "kerberos-config"
KRB5_CONF, WEBHDFS_CA = "krb5.conf", "webhdfs-ca.pem"
TMP_DIR: Final = "/tmp"
TMP_VOLUME: Final = "tmp"
# Spark operator names a SparkApplication's UI Service <name>-ui-svc, and a Service's name is a DNS-1035 label
# of at most 63 characters: copy objects of either kind take the same name, so both fit.
MAX_COPY_NAME: Final = MAX_NAME - len("-ui-svc")
LABEL_RUN: Final = f"{GROUP}/copy-run"
RUNNING, SUCCEEDED, FAILED = "Running", "Succeeded", "Failed"
VERIFY_MODES: Final = ("size", "checksum")
ENGINES: Final = ("auto", "spark", "local")
_HASH_LEN: Final = 8


@dataclass(frozen=True, kw_only=True)
class CopyRun:
    """One copy run of TableReplica `replica` to ClusterStorage `secondary`, as its launchers need it."""

    replica: str
    namespace: str
    catalog: str  # the TableReplica's HiveCatalog: app.kubernetes.io/part-of
    secondary: str
    run_id: str
    plan_uri: str  # where plan_store.write_plan put the plan (plan_store.plan_location)
    plan_digest: str  # what write_plan returned: sha256:<hex>
    image: str  # compute.job.image
    service_account: str | None = None  # compute.job.serviceAccountName
    resources: Mapping[str, Any] | None = field(default=None, hash=False)  # compute.job.resources
    verify: str = "size"
    engine: str = "auto"
    parallelism: int | None = None
    bandwidth_mbps: int | None = None
    # A unit's copy is hivecat's own (a target holding data without hivecat's manifest never reaches a plan),
    # so files gone from the source go from the copy too; as the Local launcher does.
    delete: bool = True
    credentials_secret: str | None = None  # the secondary's credentialsSecretRef.name
    s3_endpoint: str | None = None  # HIVECAT_S3_ENDPOINT: an S3-compatible store's address (path-style)
    webhdfs_endpoints: str | None = None  # HIVECAT_WEBHDFS_ENDPOINTS: nn:8020=http://nn:9870,...
    hadoop_user: str | None = None  # HADOOP_USER_NAME on hdfs://
    kerberos: KerberosSpec | None = None  # the secondary's login on a kerberized HDFS
    kerberos_config: str | None = None  # the ConfigMap (kerberos_config_map) with krb5.conf and the WebHDFS CA
    kerberos_config_keys: tuple[str, ...] = ()  # which of KRB5_CONF and WEBHDFS_CA it holds
    active_deadline_seconds: int = ACTIVE_DEADLINE_SECONDS

    def __post_init__(self) -> None:
        if self.verify not in VERIFY_MODES:
            raise ValueError(f"verify must be one of {', '.join(VERIFY_MODES)}, not {self.verify!r}")
        if self.engine not in ENGINES:
            raise ValueError(f"engine must be one of {', '.join(ENGINES)}, not {self.engine!r}")
        try:
            check_digest(self.plan_digest)
        except CopyInputError as exc:
            raise ValueError(str(exc)) from None
        for name in ("parallelism", "bandwidth_mbps", "active_deadline_seconds"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
                raise ValueError(f"{name} must be a whole number of at least 1, not {value!r}")


def copy_name(replica: str, secondary: str) -> str:
    """The one name of the copy Job or SparkApplication of (replica, secondary): <replica>-copy-<secondary>-<hash>,
    a DNS-1035 label of at most MAX_COPY_NAME characters. The hash of both names is always there: names may
    hold "-copy-" themselves, and without it (a-copy-b, c) and (a, b-copy-c) would share a Job."""
    digest = hashlib.sha256(f"{replica}/{secondary}".encode()).hexdigest()[:_HASH_LEN]  # "/" is in no name
    head = re.sub(r"[^-a-z0-9]+", "-", f"{replica}-copy-{secondary}".lower())
    if not head[:1].isalpha():
        head = f"hc-{head}"
    return f"{head[:MAX_COPY_NAME - _HASH_LEN - 1].rstrip('-')}-{digest}"


def copy_labels(run: CopyRun) -> dict[str, str]:
    """Stable labels of every copy object of (replica, secondary), to select them by; the run's own label
    (LABEL_RUN) comes on top in copy_metadata."""
    catalog = label_value(run.catalog)
    return {
        LABEL_MANAGED_BY: MANAGED_BY,
        LABEL_PART_OF: catalog,
        LABEL_COMPONENT: COMPONENT.copy,
        HIVE_CATALOG.label: catalog,
        TABLE_REPLICA.label: label_value(run.replica),
        CLUSTER_STORAGE.label: label_value(run.secondary),
    }


def copy_metadata(run: CopyRun) -> dict[str, Any]:
    """metadata of the Job or SparkApplication: name, namespace, labels and the run's annotations (exact values:
    a label value is cut at 63 characters)."""
    return {
        "name": copy_name(run.replica, run.secondary),
        "namespace": run.namespace,
        "labels": {**copy_labels(run), LABEL_RUN: label_value(run.run_id)},
        "annotations": {ANNOTATION_RUN: run.run_id, ANNOTATION_PLAN: run.plan_uri,
                        ANNOTATION_PLAN_DIGEST: run.plan_digest},
    }


def distcp_arguments(run: CopyRun, engine: str | None = None) -> list[str]:
    """`hivecat distcp`'s arguments (after "distcp"): the plan pinned by its digest, JSON output for the result."""
    copy = CopySettings(run.verify, run.parallelism, run.bandwidth_mbps, run.engine)
    return distcp_args(run.plan_uri, copy, digest=run.plan_digest, engine=engine, delete=run.delete)


def copy_environment(run: CopyRun, keytab_file: str = KEYTAB_FILE) -> list[dict[str, str]]:
    """The copy engine's settings as env vars: addresses and a directory, never a key. `keytab_file`: the keytab's
    file name in KEYTAB_DIR (a SparkApplication mounts the whole Secret, so there it is the Secret's key)."""
    env = []
    if run.s3_endpoint:
        env.append({"name": ENDPOINT_ENVS[0], "value": run.s3_endpoint})
    if run.credentials_secret:
        env.append({"name": CREDENTIALS_DIR_ENV, "value": CREDENTIALS_DIR})
    if run.webhdfs_endpoints:
        env.append({"name": WEBHDFS_ENDPOINTS_ENV, "value": run.webhdfs_endpoints})
    if run.kerberos is not None:
        env += [{"name": PRINCIPAL_ENV, "value": run.kerberos.principal},
                {"name": KEYTAB_ENV, "value": f"{KEYTAB_DIR}/{keytab_file}"},
                {"name": WEBHDFS_PRINCIPAL_ENV, "value": run.kerberos.http_principal},
                {"name": "KRB5CCNAME", "value": "MEMORY:hivecat-copy"}]  # tickets never on the pod's disk
    elif run.hadoop_user:
        env.append({"name": HADOOP_USER_ENV, "value": run.hadoop_user})
    if run.kerberos_config and KRB5_CONF in run.kerberos_config_keys:
        env.append({"name": "KRB5_CONFIG", "value": f"{KERBEROS_CONFIG_DIR}/{KRB5_CONF}"})
    if run.kerberos_config and WEBHDFS_CA in run.kerberos_config_keys:
        env.append({"name": WEBHDFS_CA_BUNDLE_ENV, "value": f"{KERBEROS_CONFIG_DIR}/{WEBHDFS_CA}"})
    return env


def kerberos_config_map(run: CopyRun, data: Mapping[str, str]) -> dict[str, Any]:
    """The ConfigMap of run.kerberos_config: the operator's krb5.conf and WebHDFS CA bundle (no secret), by
    KRB5_CONF and WEBHDFS_CA."""
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": run.kerberos_config, "namespace": run.namespace, "labels": copy_labels(run)},
            "data": dict(data)}


def kerberos_config_name(replica: str, secondary: str) -> str:
    return f"{copy_name(replica, secondary)}-krb5"


def _container(run: CopyRun) -> dict[str, Any]:
    mounts = [{"name": TMP_VOLUME, "mountPath": TMP_DIR}]
    if run.credentials_secret:
        mounts.append({"name": CREDENTIALS_VOLUME, "mountPath": CREDENTIALS_DIR, "readOnly": True})
    if run.kerberos is not None:
        mounts.append({"name": KEYTAB_VOLUME, "mountPath": KEYTAB_DIR, "readOnly": True})
    if run.kerberos_config:
        mounts.append({"name": KERBEROS_CONFIG_VOLUME, "mountPath": KERBEROS_CONFIG_DIR, "readOnly": True})
    container: dict[str, Any] = {
        "name": CONTAINER,
        "image": run.image,
        "command": ["hivecat", "distcp", *distcp_arguments(run)],
        "env": copy_environment(run),
        "volumeMounts": mounts,
        "securityContext": {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True,
                            "runAsNonRoot": True, "capabilities": {"drop": ["ALL"]}},
    }
    if run.resources:
        container["resources"] = {key: dict(value) for key, value in run.resources.items()}
    return container


def copy_job(run: CopyRun) -> dict[str, Any]:
    """A batch/v1 Job running `hivecat distcp --plan <uri> --plan-digest <digest> ... --output json`."""
    metadata = copy_metadata(run)
    volumes: list[dict[str, Any]] = [{"name": TMP_VOLUME, "emptyDir": {}}]
    if run.credentials_secret:
        volumes.append({"name": CREDENTIALS_VOLUME, "secret": {"secretName": run.credentials_secret}})
    if run.kerberos is not None:  # the one key, as one file only the pod reads
        volumes.append(keytab_volume(KEYTAB_VOLUME, run.kerberos.keytab_secret, run.kerberos.keytab_key))
    if run.kerberos_config:
        volumes.append({"name": KERBEROS_CONFIG_VOLUME, "configMap": {"name": run.kerberos_config}})
    pod: dict[str, Any] = {
        "restartPolicy": "Never",
        "automountServiceAccountToken": False,  # distcp never calls the Kubernetes API
        "enableServiceLinks": False,
        "securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"},
                            **({"fsGroup": KEYTAB_FS_GROUP} if run.kerberos is not None else {})},
        "containers": [_container(run)],
        "volumes": volumes,
    }
    if run.service_account:
        pod["serviceAccountName"] = run.service_account
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": metadata,
        "spec": {
            "backoffLimit": BACKOFF_LIMIT,
            "activeDeadlineSeconds": run.active_deadline_seconds,
            "ttlSecondsAfterFinished": TTL_SECONDS_AFTER_FINISHED,
            # A replacement pod starts only once the failed one has stopped: never two copies of one plan.
            "podReplacementPolicy": "Failed",
            "podFailurePolicy": {"rules": [
                {"action": "FailJob",
                 "onExitCodes": {"containerName": CONTAINER, "operator": "In", "values": [EXIT_BAD_INPUT]}},
                # an evicted or preempted pod is no failure of the copy: not counted against backoffLimit
                {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]},
            ]},
            "template": {"metadata": {"labels": dict(metadata["labels"])}, "spec": pod},
        },
    }


def job_state(job: Mapping[str, Any] | None) -> str:
    """Running, Succeeded or Failed, from a Job's status conditions. Kubernetes 1.31+ first adds
    SuccessCriteriaMet / FailureTarget, then Complete / Failed once the pods are gone; either says the outcome."""
    conditions = ((job or {}).get("status") or {}).get("conditions") or ()
    holding = {c.get("type") for c in conditions if isinstance(c, Mapping) and c.get("status") == "True"}
    if holding & {"Complete", "SuccessCriteriaMet"}:
        return SUCCEEDED
    if holding & {"Failed", "FailureTarget"}:
        return FAILED
    return RUNNING
