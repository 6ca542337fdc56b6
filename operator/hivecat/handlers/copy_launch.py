"""The KubernetesJob launcher: one copy run as a batch/v1 Job (workloads/copy_job.py) owned by the TableReplica.

The plan goes to the secondary's own filesystem (copy/plan_store.py: any size, pinned by its digest), the Job
runs `hivecat distcp --plan URI --plan-digest D`, and the launcher waits for the Job's outcome. Its name is
fixed per TableReplica and secondary, so a Job left running by an earlier operator process is waited for,
never duplicated; a finished one is deleted before the next run (a Job's template cannot change). What the run
achieved is decided afterwards from the data (replication/verify.py), never from the Job's success.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

import kopf

from hivecat import k8s
from hivecat.config import config
from hivecat.copy.copier import new_run_id
from hivecat.copy.errors import CopyInputError
from hivecat.copy.plan import CopyPlan
from hivecat.copy.plan_store import plan_location, write_plan
from hivecat.copy.storage import Storage
from hivecat.kinds import CLUSTER_STORAGE
from hivecat.reconcile.policy import WorkloadPolicy
from hivecat.reconcile.registry import ClusterEntry
from hivecat.replication.launch import CANCELLED, FAILED, SUCCEEDED, LaunchResult
from hivecat.specs.clusterstorage import parse_cluster_storage
from hivecat.specs.errors import SpecInvalid
from hivecat.specs.tablereplica import CopySettings
from hivecat.workloads.copy_job import RUNNING, CopyRun, copy_job, copy_name, job_state

POLL_SECONDS = 1.0
GONE_TIMEOUT = 120.0  # a finished Job's deletion (its pods first) before the next run's Job


class JobLauncher:
    def __init__(self, owner: Mapping[str, Any], catalog: str, secondary: ClusterEntry, storage: Storage) -> None:
        self.owner, self.catalog, self.secondary, self.storage = owner, catalog, secondary, storage
        self.namespace = owner["metadata"]["namespace"]
        self.replica = owner["metadata"]["name"]

    def run(self, plan: CopyPlan, copy: CopySettings, stopped: Callable[[], bool]) -> LaunchResult:
        began = time.monotonic()
        name = copy_name(self.replica, self.secondary.name)
        if not self._wait_and_clear(name, stopped):
            return LaunchResult(CANCELLED, "the operator stopped while an earlier copy Job ran")
        try:
            run = self._copy_run(plan, copy)
        except (SpecInvalid, CopyInputError, OSError, ValueError) as error:
            return LaunchResult(FAILED, f"cannot start the copy Job: {getattr(error, 'message', error)}")
        manifest = copy_job(run)
        kopf.adopt(manifest, owner=self.owner)  # goes with the TableReplica
        k8s.apply(manifest)
        while True:
            job = k8s.get("batch/v1", "Job", self.namespace, name)
            state = job_state(job) if job is not None else FAILED
            if state != RUNNING:
                break
            if stopped():  # the Job runs on; the next operator process waits for it
                return LaunchResult(CANCELLED, f"the operator stopped while Job {name} ran")
            time.sleep(POLL_SECONDS)
        seconds = round(time.monotonic() - began, 3)
        if state == SUCCEEDED:
            return LaunchResult(SUCCEEDED, "", run.run_id, seconds=seconds)
        return LaunchResult(FAILED, f"Job {name} failed: {_failure(job)}", run.run_id, seconds=seconds)

    def _copy_run(self, plan: CopyPlan, copy: CopySettings) -> CopyRun:
        body = k8s.get(CLUSTER_STORAGE.api_version, CLUSTER_STORAGE.kind, self.namespace, self.secondary.name)
        if body is None:
            raise SpecInvalid("ClusterNotFound", f"ClusterStorage {self.secondary.name} is gone")
        spec = parse_cluster_storage(body, default_scan_interval=3600.0)
        if spec.compute.image is None:
            raise SpecInvalid("ComputeIncomplete", f"ClusterStorage {spec.name} names no image for its copy Jobs")
        settings = config()
        policy = WorkloadPolicy.from_lists(settings.allowed_images, settings.allowed_service_accounts)
        violation = (policy.check_image(spec.compute.image, "spec.compute.job.image")
                     or policy.check_service_account(spec.compute.service_account,
                                                     "spec.compute.job.serviceAccountName"))
        if violation is not None:
            raise SpecInvalid(violation.reason, f"ClusterStorage {spec.name}: {violation.message}")
        run_id = new_run_id()
        location = plan_location(self.secondary.filesystem, self.namespace, self.replica, run_id)
        digest = write_plan(self.storage, location, plan)
        return CopyRun(replica=self.replica, namespace=self.namespace, catalog=self.catalog,
                       secondary=self.secondary.name, run_id=run_id, plan_uri=location, plan_digest=digest,
                       image=spec.compute.image, service_account=spec.compute.service_account,
                       resources=spec.compute.resources, verify=copy.verify, engine=copy.engine,
                       parallelism=copy.parallelism, bandwidth_mbps=copy.bandwidth_mbps,
                       credentials_secret=spec.credentials_secret)

    def _wait_and_clear(self, name: str, stopped: Callable[[], bool]) -> bool:
        """Wait for a Job of this pair still running, then delete it. False when stopped meanwhile."""
        while (job := k8s.get("batch/v1", "Job", self.namespace, name)) is not None:
            if job_state(job) == RUNNING and not (job.get("metadata") or {}).get("deletionTimestamp"):
                if stopped():
                    return False
                time.sleep(POLL_SECONDS)
                continue
            k8s.delete("batch/v1", "Job", self.namespace, name)
            deadline = time.monotonic() + GONE_TIMEOUT
            while k8s.get("batch/v1", "Job", self.namespace, name) is not None and time.monotonic() < deadline:
                if stopped():
                    return False
                time.sleep(POLL_SECONDS)
        return True


def _failure(job: Mapping[str, Any] | None) -> str:
    if job is None:
        return "the Job was deleted while it ran"
    for condition in (job.get("status") or {}).get("conditions") or ():
        if condition.get("type") in ("Failed", "FailureTarget") and condition.get("status") == "True":
            return f"{condition.get('reason', '')}: {condition.get('message', '')}".strip(": ")
    return "no reason given"
