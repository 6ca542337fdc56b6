"""The KubernetesJob and SparkApplication launchers: one copy run as a batch/v1 Job (workloads/copy_job.py) or
a spark-operator SparkApplication (workloads/spark_application.py), owned by the TableReplica.

The plan goes to the secondary's own filesystem (copy/plan_store.py: any size, pinned by its digest), the
workload runs `hivecat distcp --plan URI --plan-digest D`, and the launcher waits for its outcome. Its name is
fixed per TableReplica and secondary, so one left running by an earlier operator process is waited for, never
duplicated; a finished one is deleted before the next run (a Job's template cannot change). What the run
achieved is decided afterwards from the data (replication/verify.py), never from the workload's success.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import kopf
from kubernetes.client.exceptions import ApiException

from hivecat import k8s, reasons
from hivecat.config import config
from hivecat.copy.copier import new_run_id
from hivecat.copy.errors import CopyInputError
from hivecat.copy.plan import CopyPlan
from hivecat.copy.plan_store import plan_location, write_plan
from hivecat.copy.storage import Storage
from hivecat.kinds import CLUSTER_STORAGE
from hivecat.reconcile.policy import WorkloadPolicy
from hivecat.replication.registry import ClusterEntry
from hivecat.replication.launch import CANCELLED, FAILED, SUCCEEDED, LaunchResult
from hivecat.specs.clusterstorage import ComputeSpec, parse_cluster_storage
from hivecat.specs.errors import SpecInvalid
from hivecat.specs.tablereplica import CopySettings
from hivecat.workloads.copy_job import RUNNING, CopyRun, copy_job, copy_name, job_state
from hivecat.workloads.spark_application import API_VERSION as SPARK_API_VERSION
from hivecat.workloads.spark_application import KIND as SPARK_KIND
from hivecat.workloads.spark_application import (spark_application, spark_application_phase,
                                                 spark_application_state)

POLL_SECONDS = 1.0
GONE_TIMEOUT = 120.0  # a finished Job's deletion (its pods first) before the next run's Job


@dataclass(frozen=True)
class Workload:
    """One kind of copy workload: how to build it, and how to read its outcome."""

    api_version: str
    kind: str
    field: str                                        # spec.compute.<field>, for messages
    build: Callable[[CopyRun, ComputeSpec], dict[str, Any]]
    state: Callable[[Mapping[str, Any] | None], str]  # RUNNING | SUCCEEDED | FAILED
    failure: Callable[[Mapping[str, Any]], str]


JOB = Workload("batch/v1", "Job", "job", lambda run, compute: copy_job(run), job_state,
               lambda job: _condition_failure(job))
SPARK_APPLICATION = Workload(SPARK_API_VERSION, SPARK_KIND, "sparkApplication",
                             lambda run, compute: spark_application(run, compute.spark), spark_application_phase,
                             lambda app: f"{spark_application_state(app)}: "
                                         f"{((app.get('status') or {}).get('applicationState') or {}).get('errorMessage', '')}")


class WorkloadLauncher:
    def __init__(self, workload: Workload, owner: Mapping[str, Any], catalog: str, secondary: ClusterEntry,
                 storage: Storage) -> None:
        self.workload, self.owner, self.catalog, self.secondary, self.storage = (
            workload, owner, catalog, secondary, storage)
        self.namespace = owner["metadata"]["namespace"]
        self.replica = owner["metadata"]["name"]

    def _get(self, name: str) -> dict[str, Any] | None:
        """This TableReplica's workload of that name; NameTaken when the name is someone else's object."""
        found = k8s.get(self.workload.api_version, self.workload.kind, self.namespace, name)
        if found is not None and not k8s.owned_by(found, self.owner["metadata"]["uid"]):
            raise k8s.NameTaken(self.workload.kind, self.namespace, name)
        return found

    def run(self, plan: CopyPlan, copy: CopySettings, stopped: Callable[[], bool]) -> LaunchResult:
        began = time.monotonic()
        kind = self.workload.kind
        name = copy_name(self.replica, self.secondary.name)
        try:
            if not self._wait_and_clear(name, stopped):
                return LaunchResult(CANCELLED, f"the operator stopped while an earlier copy {kind} ran")
            run, compute = self._copy_run(plan, copy)
            manifest = self.workload.build(run, compute)
            kopf.adopt(manifest, owner=self.owner)  # goes with the TableReplica
            k8s.apply(manifest)
        except (SpecInvalid, CopyInputError, OSError, ValueError, k8s.NameTaken) as error:
            return LaunchResult(FAILED, f"cannot start the copy {kind}: {getattr(error, 'message', error)}")
        except ApiException as error:
            missing = error.status == 404
            return LaunchResult(FAILED, f"cannot create the copy {kind}: " + (
                f"the API server does not serve {self.workload.api_version} {kind} (is its operator installed?)"
                if missing else f"{error.status} {error.reason}"))
        while True:
            try:
                obj = self._get(name)
            except k8s.NameTaken as taken:  # replaced while it ran: not this TableReplica's to read or delete
                return LaunchResult(FAILED, taken.message, run.run_id)
            state = self.workload.state(obj) if obj is not None else FAILED
            if state != RUNNING:
                break
            if stopped():  # it runs on; the next operator process waits for it
                return LaunchResult(CANCELLED, f"the operator stopped while {kind} {name} ran")
            time.sleep(POLL_SECONDS)
        seconds = round(time.monotonic() - began, 3)
        if state == SUCCEEDED:
            return LaunchResult(SUCCEEDED, "", run.run_id, seconds=seconds)
        why = self.workload.failure(obj) if obj is not None else f"the {kind} was deleted while it ran"
        return LaunchResult(FAILED, f"{kind} {name} failed: {why}", run.run_id, seconds=seconds)

    def _copy_run(self, plan: CopyPlan, copy: CopySettings) -> tuple[CopyRun, ComputeSpec]:
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
        run_id = new_run_id()
        location = plan_location(self.secondary.filesystem, self.namespace, self.replica, run_id)
        digest = write_plan(self.storage, location, plan)
        run = CopyRun(replica=self.replica, namespace=self.namespace, catalog=self.catalog,
                      secondary=self.secondary.name, run_id=run_id, plan_uri=location, plan_digest=digest,
                      image=compute.image, service_account=compute.service_account, resources=compute.resources,
                      verify=copy.verify, engine=copy.engine, parallelism=copy.parallelism,
                      bandwidth_mbps=copy.bandwidth_mbps, credentials_secret=spec.credentials_secret,
                      # the copy pods reach storage where the operator does (an S3-compatible endpoint,
                      # namenodes' WebHDFS addresses): the plan names locations, not how to reach them
                      s3_endpoint=self.storage.s3.endpoint,
                      webhdfs_endpoints=",".join(f"{a}={url}" for a, url in self.storage.webhdfs.endpoints) or None)
        return run, compute

    def _wait_and_clear(self, name: str, stopped: Callable[[], bool]) -> bool:
        """Wait for a workload of this pair still running, then delete it. False when stopped meanwhile."""
        while (obj := self._get(name)) is not None:
            if self.workload.state(obj) == RUNNING and not (obj.get("metadata") or {}).get("deletionTimestamp"):
                if stopped():
                    return False
                time.sleep(POLL_SECONDS)
                continue
            k8s.delete(self.workload.api_version, self.workload.kind, self.namespace, name,
                       owner=self.owner["metadata"]["uid"])
            deadline = time.monotonic() + GONE_TIMEOUT
            while self._get(name) is not None and time.monotonic() < deadline:
                if stopped():
                    return False
                time.sleep(POLL_SECONDS)
        return True


def _condition_failure(job: Mapping[str, Any]) -> str:
    for condition in (job.get("status") or {}).get("conditions") or ():
        if condition.get("type") in ("Failed", "FailureTarget") and condition.get("status") == "True":
            return f"{condition.get('reason', '')}: {condition.get('message', '')}".strip(": ")
    return "no reason given"
