"""What a HiveCatalog's pass decides and reports, with no I/O: its outcome (status fields, conditions, Events, when
to look again), a schema Job's state from its status, and the mode the catalog ran in before. The pass
itself (resolve refs → validate → desired state → apply → status) runs in act/hivecatalog.py; the decisions
it takes are the domain's pure functions (specs.mode, workloads.schema, workloads.*).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from hivecat.reconcile.conditions import Condition

READY, SCHEMA_READY, REACHABLE, MODE_WARNING = "Ready", "SchemaReady", "BackendReachable", "Warning"
THRIFT, GLUE, HYBRID = "Thrift", "Glue", "Hybrid"
SHORT_WAIT = 1.0  # seconds: a Job or a rollout in progress (the re-check daemon wakes twice a second)
JOB_BACKOFF_DEFAULT = 6  # batch/v1 Job's spec.backoffLimit when the manifest leaves it out


# (access key id, secret access key) from a Secret, or with the session token of an assumed role
GlueKeys = tuple[str, ...]


@dataclass(frozen=True)
class Event:
    type: str  # Normal or Warning
    reason: str
    message: str


@dataclass
class Outcome:
    """What the handler writes back: status fields, conditions, Events, and when to look again.

    phase: Pending (provisioning: a schema Job, a rollout), Ready, Degraded (a backend check fails),
    Invalid (the spec, a reference or the database's schema must be fixed first; see Ready's reason) or
    Stopped (the metastore is scaled to zero)."""

    mode: str | None = None
    endpoint: str = ""
    client_config_map: str = ""
    schema_version: str | None = None  # as read from the VERSION table, when there is one
    phase: str = "Pending"
    conditions: list[Condition] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    retry_after: float | None = None

    def stop(self, reason: str, message: str, *, phase: str = "Invalid", retry: float | None = None) -> Outcome:
        """Ready False with `reason`; replaces a Ready stated before, so there is only ever one."""
        self.conditions = [c for c in self.conditions if c.type != READY]
        self.conditions.append(Condition.of(READY, False, reason, message))
        self.phase, self.retry_after = phase, retry
        return self


def job_state(job: Mapping[str, Any]) -> str:
    """running, succeeded or failed, from the Job controller's conditions (or, before it set them, its
    counters: failed only once the retries allowed are used up and no pod is left)."""
    status = job.get("status") or {}
    for condition in status.get("conditions") or ():
        if condition.get("status") == "True" and condition.get("type") == "Failed":
            return "failed"
        if condition.get("status") == "True" and condition.get("type") == "Complete":
            return "succeeded"
    if status.get("succeeded"):
        return "succeeded"
    limit = (job.get("spec") or {}).get("backoffLimit")
    limit = JOB_BACKOFF_DEFAULT if limit is None else limit
    if (status.get("failed") or 0) > limit and not status.get("active"):
        return "failed"
    return "running"


def previous_mode(status: Mapping[str, Any] | None) -> str | None:
    return (status or {}).get("mode") or None
