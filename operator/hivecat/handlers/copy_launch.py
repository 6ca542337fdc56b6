"""The live ports of the copy workload launcher (replication/launch/workload.py): the API server, and a run's
Job (workloads/copy_job.py) or SparkApplication (workloads/spark_application.py) built from the secondary's
ClusterStorage compute, within the administrator's image and service-account allow-lists, and owned by the
TableReplica (it goes with it)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import kopf
from kubernetes.client.exceptions import ApiException

from hivecat import k8s, reasons
from hivecat.config import config
from hivecat.copy.storage import Storage
from hivecat.handlers.ports import krb5_conf
from hivecat.kinds import CLUSTER_STORAGE
from hivecat.reconcile.policy import WorkloadPolicy
from hivecat.replication.launch.workload import Workload, WorkloadLauncher, WorkloadRefused
from hivecat.replication.registry import ClusterEntry
from hivecat.specs.clusterstorage import ClusterStorageSpec, ComputeSpec, parse_cluster_storage
from hivecat.specs.errors import SpecInvalid
from hivecat.specs.tablereplica import CopySettings
from hivecat.workloads.copy_job import (
    KRB5_CONF, WEBHDFS_CA, CopyRun, copy_job, copy_name, job_state, kerberos_config_map, kerberos_config_name,
)
from hivecat.workloads.spark_application import API_VERSION as SPARK_API_VERSION
from hivecat.workloads.spark_application import KIND as SPARK_KIND
from hivecat.workloads.spark_application import (spark_application, spark_application_phase,
                                                 spark_application_state)

Build = Callable[[CopyRun, ComputeSpec], dict[str, Any]]


def _condition_failure(job: Mapping[str, Any]) -> str:
    for condition in (job.get("status") or {}).get("conditions") or ():
        if condition.get("type") in ("Failed", "FailureTarget") and condition.get("status") == "True":
            return f"{condition.get('reason', '')}: {condition.get('message', '')}".strip(": ")
    return "no reason given"


def _application_failure(app: Mapping[str, Any]) -> str:
    error = ((app.get("status") or {}).get("applicationState") or {}).get("errorMessage", "")
    return f"{spark_application_state(app)}: {error}"


JOB = Workload("batch/v1", "Job", "job", job_state, _condition_failure, "jobs")
SPARK_APPLICATION = Workload(SPARK_API_VERSION, SPARK_KIND, "sparkApplication", spark_application_phase,
                             _application_failure, "sparkapplications")
BUILDS: dict[str, Build] = {JOB.kind: lambda run, compute: copy_job(run),
                            SPARK_APPLICATION.kind: lambda run, compute: spark_application(run, compute.spark)}


def workload_launcher(workload: Workload, owner: kopf.Body | Mapping[str, Any], catalog: str,
                      secondary: ClusterEntry, storage: Storage, expected: str | None = None) -> WorkloadLauncher:
    """The launcher of `owner`'s (a TableReplica's) copies to `secondary` as `workload`s."""
    meta = owner["metadata"]
    ports = LiveWorkloadPorts(workload, owner, catalog, secondary, storage)
    return WorkloadLauncher(workload, ports, copy_name(meta["name"], secondary.name), meta["namespace"],
                            meta["name"], secondary, storage, expected)


class LiveWorkloadPorts:
    def __init__(self, workload: Workload, owner: kopf.Body | Mapping[str, Any], catalog: str,
                 secondary: ClusterEntry, storage: Storage) -> None:
        self.workload, self.owner, self.catalog, self.secondary, self.storage = (
            workload, owner, catalog, secondary, storage)
        self.namespace, self.uid = owner["metadata"]["namespace"], owner["metadata"]["uid"]
        self._config_map: dict[str, Any] | None = None

    def get(self, name: str) -> dict[str, Any] | None:
        """The TableReplica's own workload; NameTaken when the name is someone else's object."""
        found = k8s.get(self.workload.api_version, self.workload.kind, self.namespace, name)
        if found is not None and not k8s.owned_by(found, self.uid):
            raise k8s.NameTaken(self.workload.kind, self.namespace, name)
        return found

    def delete(self, name: str) -> None:
        k8s.delete(self.workload.api_version, self.workload.kind, self.namespace, name, owner=self.uid)

    def apply(self, manifest: dict[str, Any]) -> None:
        try:
            if self._config_map is not None:  # what the copy pod mounts for its realms, before the pod exists
                name = self._config_map["metadata"]["name"]
                found = k8s.get("v1", "ConfigMap", self.namespace, name)
                if found is not None and not k8s.owned_by(found, self.uid):
                    raise k8s.NameTaken("ConfigMap", self.namespace, name)
                k8s.apply(self._config_map)
            k8s.apply(manifest)
        except ApiException as error:
            raise WorkloadRefused(
                f"the API server does not serve {self.workload.api_version} {self.workload.kind} (is its operator "
                "installed?)" if error.status == 404 else f"{error.status} {error.reason}") from None

    def _kerberos_config(self, spec: ClusterStorageSpec) -> tuple[str | None, dict[str, str]]:
        """The ConfigMap (name, data) a copy pod on an hdfs:// secondary mounts for its realms and CA, if any."""
        data = _kerberos_config_data(self.storage) if spec.filesystem.startswith("hdfs://") else {}
        return (kerberos_config_name(self.owner["metadata"]["name"], self.secondary.name) if data else None), data

    def builder(self, copy: CopySettings) -> Callable[[str, str, str], dict[str, Any]]:
        """The secondary's compute, read now and checked against the allow-lists; SpecInvalid if it names no
        image, or one (or a service account) the administrator does not allow."""
        body = k8s.get(CLUSTER_STORAGE.api_version, CLUSTER_STORAGE.kind, self.namespace, self.secondary.name)
        if body is None:
            raise SpecInvalid(reasons.CLUSTER_NOT_FOUND, f"ClusterStorage {self.secondary.name} is gone")
        spec = parse_cluster_storage(body, default_scan_interval=3600.0)
        compute, where = spec.compute, f"spec.compute.{self.workload.field}"
        if compute.image is None:
            raise SpecInvalid(reasons.COMPUTE_INCOMPLETE, f"ClusterStorage {spec.name} names no {where}.image")
        settings = config()
        policy = WorkloadPolicy.from_lists(settings.allowed_images, settings.allowed_service_accounts)
        violation = (policy.check_image(compute.image, f"{where}.image")
                     or policy.check_service_account(compute.service_account, f"{where}.serviceAccountName"))
        if violation is not None:
            raise SpecInvalid(violation.reason, f"ClusterStorage {spec.name}: {violation.message}")
        image, build = compute.image, BUILDS[self.workload.kind]
        meta = self.owner["metadata"]
        config_name, config_data = self._kerberos_config(spec)

        def manifest(run_id: str, plan_uri: str, plan_digest: str) -> dict[str, Any]:
            run = CopyRun(replica=meta["name"], namespace=self.namespace, catalog=self.catalog,
                          secondary=self.secondary.name, run_id=run_id, plan_uri=plan_uri, plan_digest=plan_digest,
                          image=image, service_account=compute.service_account, resources=compute.resources,
                          verify=copy.verify, engine=copy.engine, parallelism=copy.parallelism,
                          bandwidth_mbps=copy.bandwidth_mbps, credentials_secret=spec.credentials_secret,
                          # the copy pods reach storage where the operator does (an S3-compatible endpoint,
                          # namenodes' WebHDFS addresses): the plan names locations, not how to reach them
                          s3_endpoint=self.storage.s3.endpoint,
                          webhdfs_endpoints=",".join(f"{a}={url}" for a, url in self.storage.webhdfs.endpoints)
                          or None, kerberos=spec.kerberos, kerberos_config=config_name,
                          kerberos_config_keys=tuple(sorted(config_data)))
            built = build(run, compute)
            kopf.adopt(built, owner=self.owner)  # goes with the TableReplica
            if config_name is not None:
                self._config_map = kerberos_config_map(run, config_data)
                kopf.adopt(self._config_map, owner=self.owner)
            return built
        return manifest


def _kerberos_config_data(storage: Storage) -> dict[str, str]:
    """The operator's own krb5.conf ($KRB5_CONFIG, the chart's kerberos.krb5Conf) and WebHDFS CA bundle, as a copy
    pod gets them: configuration the administrator gave the operator, never a custom resource's."""
    data: dict[str, str] = {}
    realms = krb5_conf()
    if realms is not None:
        data[KRB5_CONF] = realms
    if storage.webhdfs.ca_bundle:
        try:
            data[WEBHDFS_CA] = Path(storage.webhdfs.ca_bundle).read_text()
        except OSError:
            pass  # not there: the pod then has what its image has
    return data
