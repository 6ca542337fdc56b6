"""The KubernetesJob and SparkApplication launchers: one copy run as a batch/v1 Job (workloads/copy_job.py) or
a spark-operator SparkApplication (workloads/spark_application.py), owned by the TableReplica.

The plan goes to the secondary's own filesystem (copy/plan_store.py: any size, pinned by its digest), the
workload runs `hivecat distcp --plan URI --plan-digest D`; a later pass reads its outcome. Its name is fixed per
TableReplica and secondary, so one left running by an earlier operator process is read as this process's own,
never duplicated; an ended one is deleted before the next run (a Job's template cannot change). What the run
achieved is decided afterwards from the data (replication/verify.py), never from the workload's success.
"""

from __future__ import annotations

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
from hivecat.copy.plan_store import plan_location, read_plan, write_plan
from hivecat.copy.storage import Storage
from hivecat.kinds import CLUSTER_STORAGE
from hivecat.reconcile.policy import WorkloadPolicy
from hivecat.replication.registry import ClusterEntry
from hivecat.replication.launch import FAILED, RUNNING, SUCCEEDED, WAITING, LaunchResult
from hivecat.specs.clusterstorage import ComputeSpec, parse_cluster_storage
from hivecat.specs.errors import SpecInvalid
from hivecat.specs.tablereplica import CopySettings
from hivecat.workloads.copy_job import (ANNOTATION_PLAN_DIGEST, ANNOTATION_RUN, CopyRun, copy_job,
                                        copy_name, job_state)
from hivecat.workloads.spark_application import API_VERSION as SPARK_API_VERSION
from hivecat.workloads.spark_application import KIND as SPARK_KIND
from hivecat.workloads.spark_application import (spark_application, spark_application_phase,
                                                 spark_application_state)



@dataclass(frozen=True)
class Workload:
    """One kind of copy workload: how to build it, and how to read its outcome."""

    api_version: str
    kind: str
    field: str                                        # spec.compute.<field>, for messages
    build: Callable[[CopyRun, ComputeSpec], dict[str, Any]]
    state: Callable[[Mapping[str, Any] | None], str]  # RUNNING | SUCCEEDED | FAILED
    failure: Callable[[Mapping[str, Any]], str]
    plural: str                                       # what kopf watches

    @property
    def group(self) -> str:
        return self.api_version.rpartition("/")[0]

    @property
    def version(self) -> str:
        return self.api_version.rpartition("/")[2]


JOB = Workload("batch/v1", "Job", "job", lambda run, compute: copy_job(run), job_state,
               lambda job: _condition_failure(job), "jobs")
SPARK_APPLICATION = Workload(SPARK_API_VERSION, SPARK_KIND, "sparkApplication",
                             lambda run, compute: spark_application(run, compute.spark), spark_application_phase,
                             lambda app: f"{spark_application_state(app)}: "
                                         f"{((app.get('status') or {}).get('applicationState') or {}).get('errorMessage', '')}",
                             "sparkapplications")


class WorkloadLauncher:
    """The runs of one TableReplica to one secondary as Jobs or SparkApplications of one fixed name: a start
    creates it and returns; observe reads the state of the run recorded as in flight (status copyRunId). An
    ended one stays until the next start deletes it. Nothing here waits: a pass that finds it running leaves
    it, and the workload's own end (its watch event, or the next timed pass) brings the next one."""

    def __init__(self, workload: Workload, owner: Mapping[str, Any], catalog: str, secondary: ClusterEntry,
                 storage: Storage, expected: str | None = None) -> None:
        """`expected`: the run in flight to this secondary, as the last pass (or status) recorded it."""
        self.workload, self.owner, self.catalog, self.secondary, self.storage = (
            workload, owner, catalog, secondary, storage)
        self.expected = expected
        self.namespace = owner["metadata"]["namespace"]
        self.replica = owner["metadata"]["name"]
        self.name = copy_name(self.replica, self.secondary.name)

    def _get(self) -> dict[str, Any] | None:
        """This TableReplica's workload; NameTaken when the name is someone else's object."""
        found = k8s.get(self.workload.api_version, self.workload.kind, self.namespace, self.name)
        if found is not None and not k8s.owned_by(found, self.owner["metadata"]["uid"]):
            raise k8s.NameTaken(self.workload.kind, self.namespace, self.name)
        return found

    def observe(self) -> LaunchResult | None:
        """The run status records as in flight: RUNNING, or its end. An ended workload stays (its pods' logs,
        its plan) until the next start deletes it; one status does not name was read before."""
        kind = self.workload.kind
        try:
            obj = self._get()
        except k8s.NameTaken as taken:  # replaced: not this TableReplica's to read or delete
            return LaunchResult(FAILED, taken.message)
        run_id = _run_id(obj)
        if obj is None or run_id is None or run_id != self.expected:
            return None
        state = self.workload.state(obj)
        if state == RUNNING:
            return LaunchResult(RUNNING, f"{kind} {self.name} runs", run_id)
        units = self._units(obj.get("metadata") or {}, run_id)
        if state == SUCCEEDED:
            return LaunchResult(SUCCEEDED, "", run_id, units=units)
        return LaunchResult(FAILED, f"{kind} {self.name} failed: {self.workload.failure(obj)}", run_id, units=units)

    def start(self, plan: CopyPlan, copy: CopySettings) -> LaunchResult:
        kind = self.workload.kind
        try:
            found = self._get()
            if found is not None:  # an earlier run's workload: a Job's template cannot change, the name is fixed
                if (found.get("metadata") or {}).get("deletionTimestamp"):
                    return LaunchResult(WAITING, f"the previous copy {kind} {self.name} is being deleted")
                if self.workload.state(found) == RUNNING:  # started by a pass whose status was not seen yet
                    return LaunchResult(RUNNING, f"{kind} {self.name} runs", _run_id(found))
                k8s.delete(self.workload.api_version, kind, self.namespace, self.name,
                           owner=self.owner["metadata"]["uid"])
                return LaunchResult(WAITING, f"the previous copy {kind} {self.name} is being deleted")
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
        return LaunchResult(RUNNING, f"{kind} {self.name} started", run.run_id,
                            units=tuple(u.id for u in plan.units))

    def _units(self, meta: Mapping[str, Any], run_id: str) -> tuple[str, ...]:
        """The unit ids of the run's plan, read back from where the start wrote it: the plan location of the run
        id this launcher recorded, never the location the workload's annotation names (whoever may edit Jobs
        in the namespace could point it at other storage); pinned by its digest. None when it cannot be read
        (the pass then counts no unit as unverified by this run)."""
        digest = (meta.get("annotations") or {}).get(ANNOTATION_PLAN_DIGEST)
        try:
            location = plan_location(self.secondary.filesystem, self.namespace, self.replica, run_id)
            plan = read_plan(self.storage, location, digest)
        except (OSError, ValueError, CopyInputError):
            return ()
        return tuple(u.id for u in plan.units)

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


def _run_id(obj: Mapping[str, Any] | None) -> str | None:
    return (((obj or {}).get("metadata") or {}).get("annotations") or {}).get(ANNOTATION_RUN)


def _condition_failure(job: Mapping[str, Any]) -> str:
    for condition in (job.get("status") or {}).get("conditions") or ():
        if condition.get("type") in ("Failed", "FailureTarget") and condition.get("status") == "True":
            return f"{condition.get('reason', '')}: {condition.get('message', '')}".strip(": ")
    return "no reason given"
