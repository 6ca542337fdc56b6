"""One reconcile pass of a HiveCatalog: resolve refs → validate → desired state → apply → status.

The decisions are the domain's pure functions (reconcile.mode, reconcile.schema, workloads.*); this module
puts them in order and says, for each step, what to read and what to write. It does its I/O through a
`Ports` object the handler supplies, so every path is unit-testable with a fake and the operator tier runs
the same code against the real control plane, databases, metastores and Glue.

A pass stops at the first step that cannot go on (a missing Secret, a schema Job still running) and says so
in the conditions; `retry_after` asks the handler to come back soon when the wait is short (a Job, a
rollout), while the timer covers everything else.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from hivecat.catalog.connect import CatalogUnavailable
from hivecat.catalog.probes import ProbeResult
from hivecat.catalog.schema_version import SchemaState
from hivecat.catalog.targets import SqlTarget
from hivecat.reconcile.conditions import Condition
from hivecat.reconcile.policy import WorkloadPolicy
from hivecat.reconcile.schema import Init, Ready, Refuse, decide_schema
from hivecat.specs.hivecatalog import HiveCatalogSpec
from hivecat.workloads.client_config import client_config_map
from hivecat.workloads.discovery import discovery_config_map
from hivecat.workloads.metastore import (
    config_hash, metastore_config_map, metastore_deployment, metastore_endpoint, metastore_name, metastore_service)
from hivecat.workloads.schema_job import schema_job

READY, SCHEMA_READY, REACHABLE, MODE_WARNING = "Ready", "SchemaReady", "BackendReachable", "Warning"
THRIFT, GLUE, HYBRID = "Thrift", "Glue", "Hybrid"
SHORT_WAIT = 2.0  # seconds: a Job or a rollout in progress


class Ports(Protocol):
    """What a pass reads and writes. The live implementation is in handlers/; tests bring fakes."""

    def read_secret(self, name: str, key: str) -> tuple[str, str]: ...  # (value, resourceVersion) or SecretUnavailable
    def probe_sql(self, target: SqlTarget, password: str) -> ProbeResult: ...
    def read_schema(self, target: SqlTarget, password: str) -> SchemaState: ...
    def probe_thrift(self, spec: HiveCatalogSpec, service: Mapping[str, Any]) -> ProbeResult: ...
    def probe_glue(self, spec: HiveCatalogSpec, credentials: tuple[str, str] | None) -> ProbeResult: ...
    def ensure_glue_default(self, spec: HiveCatalogSpec, credentials: tuple[str, str] | None) -> ProbeResult: ...
    def get(self, api_version: str, kind: str, name: str) -> dict[str, Any] | None: ...
    def apply(self, manifest: dict[str, Any]) -> dict[str, Any]: ...
    def delete(self, api_version: str, kind: str, name: str) -> bool: ...


@dataclass(frozen=True)
class Event:
    type: str  # Normal or Warning
    reason: str
    message: str


@dataclass
class Outcome:
    """What the handler writes back: status fields, conditions, Events, and when to look again."""

    mode: str | None = None
    endpoint: str = ""
    client_config_map: str = ""
    schema_version: str | None = None  # as read from the VERSION table, when there is one
    phase: str = "Pending"
    conditions: list[Condition] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    retry_after: float | None = None

    def stop(self, reason: str, message: str, *, phase: str = "Failed", retry: float | None = None) -> Outcome:
        self.conditions.append(Condition.of(READY, False, reason, message))
        self.phase, self.retry_after = phase, retry
        return self


class Pass:
    """One pass over one catalog. `run()` is the whole of it."""

    def __init__(self, spec: HiveCatalogSpec, previous_mode: str | None, ports: Ports, policy: WorkloadPolicy,
                 *, named_image: str | None = None) -> None:
        # named_image: the image the CR names itself (None: the operator's default, always allowed).
        self.spec, self.previous_mode, self.ports, self.policy = spec, previous_mode, ports, policy
        self.named_image = named_image
        self.out = Outcome(mode=spec.mode)

    def run(self) -> Outcome:
        spec, out = self.spec, self.out
        if spec.spark_side_completed:
            out.conditions.append(Condition.of(MODE_WARNING, True, "SparkSideCompleted",
                                               "the Glue client factory is set in hive-site only: Spark clients "
                                               "were configured for Glue as well, as EMR does"))
        switching = self.previous_mode is not None and self.previous_mode != spec.mode
        if switching and not spec.confirm_mode_switch:
            out.mode = self.previous_mode
            return out.stop("ModeSwitchNotConfirmed",
                            f"switching from {self.previous_mode} to {spec.mode} points every client at another "
                            f"catalog: set the annotation hivecatalog.io/confirm-mode-switch to \"true\" to "
                            "confirm it", phase="Blocked")
        runs_metastore = spec.mode in (THRIFT, HYBRID)
        if runs_metastore:
            violation = self.policy.check_image(self.named_image, "spec.metastore.image")
            if violation is not None:
                return out.stop(violation.reason, violation.message)
        glue_ok = self._glue() if spec.mode in (GLUE, HYBRID) else True
        metastore_ok = self._metastore() if runs_metastore else self._no_metastore()
        if metastore_ok is None or glue_ok is None:  # stopped with a reason already
            return out
        client = client_config_map(spec, out.endpoint or None)
        self.ports.apply(client)
        out.client_config_map = client["metadata"]["name"]
        self.ports.apply(discovery_config_map(spec, out.endpoint or None))
        if metastore_ok and glue_ok:
            out.conditions.append(Condition.of(READY, True, "Ready", f"{spec.mode} catalog is serving clients"))
            out.phase = "Ready"
        elif not any(c.type == READY for c in out.conditions):
            out.stop("NotReady", "waiting for the metastore to become ready", phase="Pending", retry=SHORT_WAIT)
        if switching:
            out.events.append(Event("Normal", "ModeSwitched", f"switched from {self.previous_mode} to {spec.mode}"))
        return out

    # -- Glue ---------------------------------------------------------------------------------------------
    def _glue(self) -> bool | None:
        spec, out = self.spec, self.out
        assert spec.glue is not None  # parse_hive_catalog refuses Glue/Hybrid without it
        credentials = None
        if spec.glue.credentials is not None:
            ref = spec.glue.credentials
            try:
                credentials = (self.ports.read_secret(ref.name, ref.access_key_id_key)[0],
                               self.ports.read_secret(ref.name, ref.secret_access_key_key)[0])
            except Exception as error:  # SecretUnavailable, reason and message
                if not hasattr(error, "reason"):
                    raise
                out.stop(error.reason, error.message)
                return None
        probe = self.ports.probe_glue(spec, credentials)
        if not probe.ok:
            out.conditions.append(Condition.of(REACHABLE, False, probe.reason, f"Glue: {probe.message}"))
            out.stop(probe.reason, f"Glue: {probe.message}", phase="Degraded")
            return None
        default = self.ports.ensure_glue_default(spec, credentials)
        if not default.ok:
            out.stop(default.reason, default.message, phase="Degraded")
            return None
        if spec.mode == GLUE:
            out.conditions.append(Condition.of(REACHABLE, True, "Reachable", "Glue answers"))
        return True

    # -- Thrift metastore -----------------------------------------------------------------------------------
    def _no_metastore(self) -> bool:
        """Glue only: the metastore's Deployment and Service go (never its database)."""
        removed = False
        name = metastore_name(self.spec)
        for api, kind in (("apps/v1", "Deployment"), ("v1", "Service")):
            removed |= self.ports.delete(api, kind, name)
        if removed:
            self.out.events.append(Event("Normal", "MetastoreRemoved",
                                         "metastore Deployment and Service removed; its database is kept"))
        return True

    def _metastore(self) -> bool | None:
        spec, out = self.spec, self.out
        database = spec.database
        assert database is not None  # parse_hive_catalog refuses Thrift/Hybrid without it
        if database.dialect == "derby":
            return self._deploy(None, schema_checked=False)
        assert database.password is not None and database.host and database.name and database.user
        try:
            password, secret_version = self.ports.read_secret(database.password.name, database.password.key)
        except Exception as error:
            if not hasattr(error, "reason"):
                raise
            out.stop(error.reason, error.message)
            return None
        target = SqlTarget(database.dialect, database.host, database.name, database.user, database.port)
        probe = self.ports.probe_sql(target, password)
        if not probe.ok:
            out.conditions.append(Condition.of(REACHABLE, False, probe.reason, probe.message))
            out.stop(probe.reason, probe.message, phase="Degraded", retry=None)
            return None
        self.ports.apply(metastore_config_map(spec))
        if not self._schema(target, password):
            return None
        return self._deploy(secret_version, schema_checked=True)

    def _schema(self, target: SqlTarget, password: str) -> bool:
        spec, out = self.spec, self.out
        try:
            state = self.ports.read_schema(target, password)
        except CatalogUnavailable as error:
            out.conditions.append(Condition.of(SCHEMA_READY, False, error.reason, error.message))
            out.stop(error.reason, error.message, phase="Degraded")
            return False
        out.schema_version = state.version
        decision = decide_schema(state, spec.metastore.hive_version)
        if isinstance(decision, Ready):
            out.conditions.append(Condition.of(SCHEMA_READY, True, "SchemaCurrent",
                                               f"schema version {state.version} matches Hive {spec.metastore.hive_version}"))
            return True
        if isinstance(decision, Refuse):
            out.conditions.append(Condition.of(SCHEMA_READY, False, decision.reason, decision.message))
            out.stop(decision.reason, decision.message)
            return False
        job = schema_job(spec, decision)
        name = job["metadata"]["name"]
        existing = self.ports.get("batch/v1", "Job", name)
        if existing is None:
            self.ports.apply(job)
            verb = "initialize" if isinstance(decision, Init) else f"upgrade from {decision.from_version}"
            out.events.append(Event("Normal", "SchemaJobCreated", f"Job {name} created to {verb} the schema"))
            existing = {}
        status = existing.get("status") or {}
        if status.get("failed") and not status.get("active"):
            message = f"schema Job {name} failed; see its pod's log, fix the cause, then delete the Job to retry"
            out.conditions.append(Condition.of(SCHEMA_READY, False, "SchemaJobFailed", message))
            out.stop("SchemaJobFailed", message)
            return False
        # A succeeded Job that left the VERSION table behind is not ready either: the table decides.
        reason = "SchemaJobSucceededButVersionBehind" if status.get("succeeded") else "SchemaJobRunning"
        message = (f"schema Job {name} succeeded but the VERSION table still says {state.version}"
                   if status.get("succeeded") else f"schema Job {name} is running")
        out.conditions.append(Condition.of(SCHEMA_READY, False, reason, message))
        out.stop(reason, message, phase="Pending", retry=SHORT_WAIT)
        return False

    def _deploy(self, secret_version: str | None, *, schema_checked: bool) -> bool:
        spec, out = self.spec, self.out
        if not schema_checked:
            self.ports.apply(metastore_config_map(spec))
        service = metastore_service(spec)
        self.ports.apply(service)
        created = self.ports.get("apps/v1", "Deployment", metastore_name(spec)) is None
        deployment = self.ports.apply(metastore_deployment(spec, config_hash(spec, secret_version)))
        if created:
            out.events.append(Event("Normal", "MetastoreCreated", f"metastore Deployment {metastore_name(spec)} "
                                                                   f"created for Hive {spec.metastore.hive_version}"))
        out.endpoint = metastore_endpoint(spec)
        if spec.metastore.replicas == 0:
            out.conditions.append(Condition.of(REACHABLE, False, "ScaledToZero", "spec.metastore.replicas is 0"))
            out.stop("ScaledToZero", "the metastore is scaled to zero replicas", phase="Stopped")
            return False
        ready = (deployment.get("status") or {}).get("readyReplicas") or 0
        if ready < 1:
            out.conditions.append(Condition.of(REACHABLE, False, "MetastoreStarting", "no metastore pod is ready yet"))
            return False
        probe = self.ports.probe_thrift(spec, service)
        out.conditions.append(Condition.of(REACHABLE, probe.ok, probe.reason,
                                           "the metastore answers Thrift calls" if probe.ok else probe.message))
        return probe.ok


def previous_mode(status: Mapping[str, Any] | None) -> str | None:
    return (status or {}).get("mode") or None


def condition_types(conditions: Sequence[Condition]) -> list[str]:
    return [c.type for c in conditions]
