"""Copies as Kubernetes workloads: one run of a TableReplica to one secondary as a batch/v1 Job or a
spark-operator SparkApplication of one fixed name (workloads/copy_job.py: copy_name), owned by the TableReplica.

The plan goes to the secondary's own filesystem (copy/plan_store.py: any size, pinned by its digest), the
workload runs `hivecat distcp --plan URI --plan-digest D`; a later pass reads its outcome. Its name is fixed per
TableReplica and secondary, so one left running by an earlier operator process is read as this process's own,
never duplicated; an ended one is deleted before the next run (a Job's template cannot change). What the run
achieved is decided afterwards from the data (replication/verify.py), never from the workload's success.

The launcher holds a run's lifecycle. What it reaches the API server through, and how a run's object is built
(workloads/, from the secondary's compute under the administrator's allow-lists), are its ports: the live
ones are handlers/copy_launch.py's.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Protocol

from hivecat.apierrors import NameTaken
from hivecat.copy.copier import new_run_id
from hivecat.copy.errors import CopyInputError
from hivecat.copy.plan import CopyPlan
from hivecat.copy.plan_store import plan_location, read_plan, write_plan
from hivecat.copy.storage import Storage
from hivecat.kinds import GROUP
from hivecat.replication.launch import FAILED, RUNNING, SUCCEEDED, WAITING, LaunchResult
from hivecat.replication.registry import ClusterEntry
from hivecat.specs.errors import SpecInvalid
from hivecat.specs.tablereplica import CopySettings

ANNOTATION_RUN: Final = f"{GROUP}/copy-run-id"
ANNOTATION_PLAN: Final = f"{GROUP}/copy-plan"
ANNOTATION_PLAN_DIGEST: Final = f"{GROUP}/copy-plan-digest"


@dataclass(frozen=True)
class Workload:
    """One kind of copy workload, and how to read a run's outcome from its object."""

    api_version: str
    kind: str
    field: str                                        # spec.compute.<field>, for messages
    state: Callable[[Mapping[str, Any] | None], str]  # RUNNING | SUCCEEDED | FAILED
    failure: Callable[[Mapping[str, Any]], str]
    plural: str                                       # what the operator watches

    @property
    def group(self) -> str:
        return self.api_version.rpartition("/")[0]

    @property
    def version(self) -> str:
        return self.api_version.rpartition("/")[2]


class WorkloadRefused(Exception):
    """The API server would not take a run's object (e.g. it does not serve the kind)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class WorkloadPorts(Protocol):
    """The API and the builder a WorkloadLauncher acts through, for one TableReplica, one secondary and one
    kind of workload."""

    def get(self, name: str) -> dict[str, Any] | None: ...  # NameTaken: someone else's
    def delete(self, name: str) -> None: ...  # only the TableReplica's own object
    def apply(self, manifest: dict[str, Any]) -> None: ...  # WorkloadRefused
    # How to build a run's object, owned by the TableReplica: (run id, plan URI, plan digest) -> manifest.
    # SpecInvalid when the secondary's compute does not allow a run (read and checked before anything is written).
    def builder(self, copy: CopySettings) -> Callable[[str, str, str], dict[str, Any]]: ...


class WorkloadLauncher:
    """The runs of one TableReplica to one secondary as workloads of one fixed name: a start creates it and
    returns; observe reads the state of the run recorded as in flight (status copyRunId). An ended one stays
    until the next start deletes it. Nothing here waits: a pass that finds it running leaves it, and the
    workload's own end (its watch event, or the next timed pass) brings the next one."""

    def __init__(self, workload: Workload, ports: WorkloadPorts, name: str, namespace: str, replica: str,
                 secondary: ClusterEntry, storage: Storage, expected: str | None = None) -> None:
        """`expected`: the run in flight to this secondary, as the last pass (or status) recorded it."""
        self.workload, self.ports, self.name = workload, ports, name
        self.namespace, self.replica, self.secondary, self.storage = namespace, replica, secondary, storage
        self.expected = expected

    def observe(self) -> LaunchResult | None:
        """The run status records as in flight: RUNNING, or its end. An ended workload stays (its pods' logs,
        its plan) until the next start deletes it; one status does not name was read before."""
        kind = self.workload.kind
        try:
            obj = self.ports.get(self.name)
        except NameTaken as taken:  # replaced: not this TableReplica's to read or delete
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
            found = self.ports.get(self.name)
            if found is not None:  # an earlier run's workload: a Job's template cannot change, the name is fixed
                if (found.get("metadata") or {}).get("deletionTimestamp"):
                    return LaunchResult(WAITING, f"the previous copy {kind} {self.name} is being deleted")
                if self.workload.state(found) == RUNNING:  # started by a pass whose status was not seen yet
                    return LaunchResult(RUNNING, f"{kind} {self.name} runs", _run_id(found))
                self.ports.delete(self.name)
                return LaunchResult(WAITING, f"the previous copy {kind} {self.name} is being deleted")
            build = self.ports.builder(copy)
            run_id = new_run_id()
            location = plan_location(self.secondary.filesystem, self.namespace, self.replica, run_id)
            digest = write_plan(self.storage, location, plan)
            self.ports.apply(build(run_id, location, digest))
        except (SpecInvalid, CopyInputError, OSError, ValueError, NameTaken) as error:
            return LaunchResult(FAILED, f"cannot start the copy {kind}: {getattr(error, 'message', error)}")
        except WorkloadRefused as refused:
            return LaunchResult(FAILED, f"cannot create the copy {kind}: {refused.message}")
        return LaunchResult(RUNNING, f"{kind} {self.name} started", run_id, units=tuple(u.id for u in plan.units))

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


def _run_id(obj: Mapping[str, Any] | None) -> str | None:
    return (((obj or {}).get("metadata") or {}).get("annotations") or {}).get(ANNOTATION_RUN)
