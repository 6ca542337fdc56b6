"""One pass of a HiveCatalog, carried out: resolve refs → validate → desired state → apply → status.

The decisions are the domain's pure functions (specs.mode, workloads.schema, workloads.*); this module
puts them in order and says, for each step, what to read and what to write. It does its I/O through a
`Ports` object the handler supplies, so every path is unit-testable with a fake and the operator tier runs
the same code against the real control plane, databases, metastores and Glue.

A pass has two halves. First every check that can refuse the spec, all of them reads: the mode switch's
confirmation, the image allow-list, the referenced Secrets, the backends' probes. Only then does it change
anything (Glue's default database, the metastore's ConfigMap, schema Job, Service and Deployment, the client
ConfigMaps), so a bad spec leaves no child object and no write behind.

A pass stops at the first step that cannot go on (a missing Secret, a schema Job still running) and says so
in the conditions; `retry_after` asks the handler to come back soon when the wait is short (a Job, a
rollout), while the timer covers everything else. Every outcome states `Ready` exactly once, and
`BackendReachable` at most once, over every backend the mode uses (Hybrid: Glue and the metastore).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, NoReturn, Protocol

from hivecat import reasons
from hivecat.apierrors import NameTaken, SecretUnavailable
from hivecat.catalog.connect import CatalogUnavailable
from hivecat.catalog.probes import ProbeResult
from hivecat.catalog.schema_version import SchemaState
from hivecat.catalog.targets import SqlTarget, ThriftSasl
from hivecat.kerberos import keytab as keytab_file
from hivecat.kerberos.login import KerberosLogin
from hivecat.reconcile.conditions import FALSE, TRUE, UNKNOWN, Condition
from hivecat.reconcile.hivecatalog import (GLUE, HYBRID, MODE_WARNING, READY, REACHABLE, SCHEMA_READY, SHORT_WAIT,
                                          THRIFT, Event, GlueKeys, Outcome, job_state)
from hivecat.reconcile.policy import WorkloadPolicy
from hivecat.specs.hivecatalog import HiveCatalogSpec
from hivecat.specs.kerberos import KerberosSpec
from hivecat.workloads.client_config import client_config_map
from hivecat.workloads.discovery import discovery_config_map
from hivecat.workloads.metastore import (
    config_hash, metastore_config_map, metastore_config_map_name, metastore_deployment, metastore_endpoint,
    metastore_name, metastore_service)
from hivecat.workloads.schema import Init, Ready, Refuse, decide_schema
from hivecat.workloads.schema_job import schema_job


class Ports(Protocol):
    """What a pass reads and writes. The live implementation is in handlers/; tests bring fakes."""

    def read_secret(self, name: str, key: str) -> tuple[str, str]: ...  # (value, resourceVersion) or SecretUnavailable
    def probe_sql(self, target: SqlTarget, password: str) -> ProbeResult: ...
    def read_schema(self, target: SqlTarget, password: str) -> SchemaState: ...
    # sasl: a kerberized metastore (spec.kerberos), reached as the catalog's login
    def probe_thrift(self, spec: HiveCatalogSpec, service: Mapping[str, Any], sasl: ThriftSasl | None
                     ) -> ProbeResult: ...
    def read_keytab(self, name: str, key: str) -> tuple[bytes, str]: ...  # (bytes, resourceVersion) or SecretUnavailable
    def login(self, kerberos: KerberosSpec, keytab: bytes) -> KerberosLogin: ...  # the namespace's, never ambient
    def krb5_conf(self) -> str | None: ...  # the operator's realms and KDCs, for the metastore's pods
    def probe_glue(self, spec: HiveCatalogSpec, credentials: GlueKeys | None) -> ProbeResult: ...
    def ensure_glue_default(self, spec: HiveCatalogSpec, credentials: GlueKeys | None) -> ProbeResult: ...
    # spec.glue.roleArn's keys, assumed with the operator's identity (the policy granted the role), or why not
    def assume_role(self, role_arn: str) -> GlueKeys | ProbeResult: ...
    def get(self, api_version: str, kind: str, name: str) -> dict[str, Any] | None: ...
    def apply(self, manifest: dict[str, Any]) -> dict[str, Any]: ...
    def delete(self, api_version: str, kind: str, name: str) -> bool: ...


class _Stopped(Exception):
    """The pass cannot go on; the outcome already says why."""


@dataclass(frozen=True)
class _Database:
    """The metastore database as the checks found it: where it is, its password, the Secret's version."""

    target: SqlTarget
    password: str
    secret_version: str


@dataclass(frozen=True)
class _Kerberos:
    """A kerberized metastore as the checks found it: how the operator reaches it, the version of its keytab's
    Secret (a rotation rolls the pods), and the realms its pods get."""

    sasl: ThriftSasl
    keytab_version: str
    krb5_conf: str | None


class Pass:
    """One pass over one catalog. `run()` is the whole of it."""

    def __init__(self, spec: HiveCatalogSpec, previous_mode: str | None, ports: Ports, policy: WorkloadPolicy,
                 *, named_image: str | None = None) -> None:
        # named_image: the image the CR names itself (None: the operator's default, always allowed).
        self.spec, self.previous_mode, self.ports, self.policy = spec, previous_mode, ports, policy
        self.named_image = named_image
        self.out = Outcome(mode=spec.mode)
        self._reach: dict[str, Condition] = {}  # backend ("Glue", "metastore") → its reachability
        self._secrets: list[str] = []  # values read from Secrets: scrubbed from every message at the end

    def run(self) -> Outcome:
        try:
            self._run()
        except _Stopped:
            pass
        except NameTaken as taken:  # an object hivecat needs is someone else's: never taken over
            self.out.stop(taken.reason, taken.message)
        return self._finish()

    def _run(self) -> None:
        spec, out = self.spec, self.out
        if spec.spark_side_completed:
            out.conditions.append(Condition.of(MODE_WARNING, True, reasons.SPARK_SIDE_COMPLETED,
                                               "the Glue client factory is set in hive-site only: Spark clients "
                                               "were configured for Glue as well, as EMR does"))
        switching = self.previous_mode is not None and self.previous_mode != spec.mode
        if switching:
            out.mode = self.previous_mode  # until the switch is under way, the catalog is what it was
            if not spec.confirm_mode_switch:
                self._stop(reasons.MODE_SWITCH_NOT_CONFIRMED,
                           f"switching from {self.previous_mode} to {spec.mode} points every client at another "
                           "catalog: set the annotation hivecatalog.io/confirm-mode-switch to \"true\" to confirm it")
        uses_glue, runs_metastore = spec.mode in (GLUE, HYBRID), spec.mode in (THRIFT, HYBRID)
        # -- checks: reads only ---------------------------------------------------------------------------
        if runs_metastore:
            violation = self.policy.check_image(self.named_image, "spec.metastore.image")
            if violation is not None:
                self._stop(violation.reason, violation.message)
        credentials = self._glue_credentials() if uses_glue else None
        database = self._database_password() if runs_metastore else None
        kerberos = self._kerberos() if runs_metastore and spec.kerberos is not None else None
        if uses_glue:
            self._probe_glue(credentials)
        if database is not None:
            self._probe_database(database)
        # -- changes ------------------------------------------------------------------------------------------
        if uses_glue:
            self._glue_default(credentials)
        if switching:
            out.mode = spec.mode
            out.events.append(Event("Normal", reasons.MODE_SWITCHED, f"switched from {self.previous_mode} to {spec.mode}"))
        serving = self._metastore(database, kerberos) if runs_metastore else self._no_metastore()
        client = client_config_map(spec, out.endpoint or None)
        self.ports.apply(client)
        out.client_config_map = client["metadata"]["name"]
        self.ports.apply(discovery_config_map(spec, out.endpoint or None))
        if serving:
            out.conditions.append(Condition.of(READY, True, reasons.READY, f"the {spec.mode} catalog is serving clients"))
            out.phase, out.retry_after = "Ready", None

    def _stop(self, reason: str, message: str, *, phase: str = "Invalid", retry: float | None = None) -> NoReturn:
        self.out.stop(reason, message, phase=phase, retry=retry)
        raise _Stopped

    def _finish(self) -> Outcome:
        out = self.out
        reachable = self._reachable()
        if reachable is not None:
            out.conditions.append(reachable)
        if not any(c.type == READY for c in out.conditions):  # every path states it; never leave it out
            out.stop(reasons.NOT_READY, "the catalog is not serving clients yet", phase="Pending", retry=SHORT_WAIT)
        ready = [c for c in out.conditions if c.type == READY]
        out.conditions = ready + [c for c in out.conditions if c.type != READY]
        out.conditions = [replace(c, message=self._scrub(c.message)) for c in out.conditions]
        out.events = [replace(e, message=self._scrub(e.message)) for e in out.events]
        return out

    def _scrub(self, message: str) -> str:
        """Belt and braces: the probes never echo a secret, and a message must never carry one."""
        for secret in self._secrets:
            if secret:
                message = message.replace(secret, "***")
        return message

    def _reachable(self) -> Condition | None:
        """One BackendReachable over the backends checked: False if any is down, Unknown if one could not
        be checked yet (a metastore that does not run yet), else True."""
        if not self._reach:
            return None
        if len(self._reach) == 1:
            only = next(iter(self._reach.values()))
            return Condition(REACHABLE, only.status, only.reason, only.message)
        parts = "; ".join(f"{backend}: {c.message}" for backend, c in self._reach.items())
        for status in (FALSE, UNKNOWN):
            first = next((c for c in self._reach.values() if c.status == status), None)
            if first is not None:
                return Condition(REACHABLE, status, first.reason, parts)
        return Condition(REACHABLE, TRUE, reasons.REACHABLE, parts)

    def _read_secret(self, name: str, key: str) -> tuple[str, str]:
        try:
            value, version = self.ports.read_secret(name, key)
        except SecretUnavailable as error:
            self._stop(error.reason, error.message)
        self._secrets.append(value)
        return value, version

    # -- Glue ---------------------------------------------------------------------------------------------
    def _glue_credentials(self) -> GlueKeys | None:
        glue = self.spec.glue
        assert glue is not None  # parse_hive_catalog refuses Glue/Hybrid without it
        if glue.role_arn is not None:  # the policy granted the role (reconcile.access): assumed for this catalog
            keys = self.ports.assume_role(glue.role_arn)
            if isinstance(keys, ProbeResult):
                self._reach["Glue"] = Condition.of(REACHABLE, False, keys.reason, keys.message)
                self._stop(keys.reason, keys.message, phase="Degraded")
            self._secrets.extend(keys[1:])
            return keys
        if glue.credentials is None:  # the operator's own credentials, where the policy grants them
            return None
        ref = glue.credentials
        return (self._read_secret(ref.name, ref.access_key_id_key)[0],
                self._read_secret(ref.name, ref.secret_access_key_key)[0])

    def _probe_glue(self, credentials: GlueKeys | None) -> None:
        probe = self.ports.probe_glue(self.spec, credentials)
        self._reach["Glue"] = Condition.of(REACHABLE, probe.ok, probe.reason, probe.message)
        if not probe.ok:
            self._stop(probe.reason, probe.message, phase="Degraded")

    def _glue_default(self, credentials: GlueKeys | None) -> None:
        """The `default` database with a location: created if missing, reported if it has none."""
        default = self.ports.ensure_glue_default(self.spec, credentials)
        if not default.ok:
            self._stop(default.reason, default.message, phase="Degraded")

    # -- Thrift metastore -----------------------------------------------------------------------------------
    def _no_metastore(self) -> bool:
        """Glue only: the metastore's Deployment, Service and server ConfigMap go (never its database).
        Only a catalog that ran a metastore (or whose last mode is unknown) has them: a Glue catalog's
        steady re-checks make no delete calls."""
        if self.previous_mode == GLUE:
            return True
        removed = False
        name = metastore_name(self.spec)
        for api, kind, object_ in (("apps/v1", "Deployment", name), ("v1", "Service", name),
                                   ("v1", "ConfigMap", metastore_config_map_name(self.spec))):
            removed |= self.ports.delete(api, kind, object_)
        if removed:
            self.out.events.append(Event("Normal", reasons.METASTORE_REMOVED,
                                         f"metastore Deployment and Service {name} removed; its database is kept"))
        return True

    def _database_password(self) -> _Database | None:
        database = self.spec.database
        assert database is not None  # parse_hive_catalog refuses Thrift/Hybrid without it
        if database.dialect == "derby":  # inside the metastore pod: nothing to read or reach from here
            return None
        assert database.password is not None and database.host and database.name and database.user
        password, secret_version = self._read_secret(database.password.name, database.password.key)
        target = SqlTarget(database.dialect, database.host, database.name, database.user, database.port)
        return _Database(target, password, secret_version)

    def _probe_database(self, database: _Database) -> None:
        probe = self.ports.probe_sql(database.target, database.password)
        if not probe.ok:
            self._reach["metastore"] = Condition.of(REACHABLE, False, probe.reason, probe.message)
            self._stop(probe.reason, probe.message, phase="Degraded")
        self._reach["metastore"] = Condition(REACHABLE, UNKNOWN, reasons.METASTORE_NOT_RUNNING,
                                             "the metastore database answers; the metastore does not serve yet")

    def _kerberos(self) -> _Kerberos:
        """Both keytabs (the operator's login and the metastore's own) read and each found to hold its principal,
        before anything is written: a wrong Secret is a condition, never a metastore that cannot start."""
        kerberos = self.spec.kerberos
        assert kerberos is not None
        keytabs = {}
        for login, field_ in ((kerberos.login, "spec.kerberos.keytabSecretRef"),
                              (kerberos.metastore, "spec.kerberos.metastoreKeytabSecretRef")):
            try:
                keytabs[field_] = self.ports.read_keytab(login.keytab_secret, login.keytab_key)
            except SecretUnavailable as error:
                self._stop(error.reason, error.message)
            self._check_keytab(keytabs[field_][0], login, field_)
        login = self.ports.login(kerberos.login, keytabs["spec.kerberos.keytabSecretRef"][0])
        return _Kerberos(ThriftSasl(login, kerberos.metastore_principal),
                         keytabs["spec.kerberos.metastoreKeytabSecretRef"][1], self.ports.krb5_conf())

    def _check_keytab(self, keytab: bytes, login: KerberosSpec, field_: str) -> None:
        where = f"{field_} (key {login.keytab_key!r} of Secret {login.keytab_secret})"
        try:
            held = keytab_file.principals(keytab)
        except keytab_file.KeytabUnreadable as error:
            self._stop(reasons.KEYTAB_MISMATCH, f"{where} is no keytab: {error}")
        # Hadoop's _HOST stands for the host the metastore runs on: any instance matches it here
        wanted = re.compile(re.escape(login.principal).replace("_HOST", "[^/@]+"))
        if not any(wanted.fullmatch(principal) for principal in held):
            self._stop(reasons.KEYTAB_MISMATCH, f"{where} holds no key for {login.principal}; it holds "
                                                f"{', '.join(held[:5]) or 'no key at all'}")

    def _metastore(self, database: _Database | None, kerberos: _Kerberos | None) -> bool:
        """ConfigMap, schema (its Job when needed), Service and Deployment; True when the metastore serves."""
        spec = self.spec
        krb5 = kerberos.krb5_conf if kerberos else None
        self.ports.apply(metastore_config_map(spec, krb5))  # before the schema Job, which mounts it
        if database is None:  # Derby: the pod initializes its own schema; there is no VERSION to read
            self.out.conditions.append(Condition(SCHEMA_READY, UNKNOWN, reasons.EMBEDDED_DERBY,
                                                 "an embedded Derby database is initialized by the metastore pod "
                                                 "itself, for development only; its schema is not checked"))
        else:
            self._schema(database)
        return self._deploy(database.secret_version if database else None, kerberos)

    def _schema(self, database: _Database) -> None:
        spec, out = self.spec, self.out
        try:
            state = self.ports.read_schema(database.target, database.password)
        except CatalogUnavailable as error:
            out.conditions.append(Condition.of(SCHEMA_READY, False, error.reason, error.message))
            self._stop(error.reason, error.message, phase="Degraded")
        out.schema_version = state.version
        decision = decide_schema(state, spec.metastore.hive_version)
        if isinstance(decision, Ready):
            out.conditions.append(Condition.of(SCHEMA_READY, True, reasons.SCHEMA_CURRENT, f"schema version {state.version} "
                                               f"matches Hive {spec.metastore.hive_version}"))
            return
        if isinstance(decision, Refuse):
            out.conditions.append(Condition.of(SCHEMA_READY, False, decision.reason, decision.message))
            self._stop(decision.reason, decision.message)
        job = schema_job(spec, decision)
        name = job["metadata"]["name"]
        existing = self.ports.get("batch/v1", "Job", name)
        if existing is None:
            existing = self.ports.apply(job)
            verb = "initialize" if isinstance(decision, Init) else f"upgrade from {decision.from_version}"
            out.events.append(Event("Normal", reasons.SCHEMA_JOB_CREATED, f"Job {name} created to {verb} the schema"))
        state_of_job = job_state(existing)
        if state_of_job == "failed":
            message = f"schema Job {name} failed; see its pod's log, fix the cause, then delete the Job to retry"
            out.conditions.append(Condition.of(SCHEMA_READY, False, reasons.SCHEMA_JOB_FAILED, message))
            self._stop(reasons.SCHEMA_JOB_FAILED, message, phase="Degraded")
        # A succeeded Job that left the VERSION table behind is not ready either: the table decides.
        if state_of_job == "succeeded":
            reason = reasons.SCHEMA_JOB_SUCCEEDED_BUT_VERSION_BEHIND
            message = (f"schema Job {name} succeeded but the VERSION table says {state.version or 'nothing'}, not "
                       f"{decision.to_version}; see the Job's log, then delete the Job to run it again")
        else:
            reason, message = reasons.SCHEMA_JOB_RUNNING, f"schema Job {name} is running"
        out.conditions.append(Condition.of(SCHEMA_READY, False, reason, message))
        self._stop(reason, message, phase="Pending", retry=SHORT_WAIT)

    def _deploy(self, secret_version: str | None, kerberos: _Kerberos | None) -> bool:
        spec, out = self.spec, self.out
        name = metastore_name(spec)
        service = metastore_service(spec)
        self.ports.apply(service)
        created = self.ports.get("apps/v1", "Deployment", name) is None
        krb5 = kerberos.krb5_conf if kerberos else None
        digest = config_hash(spec, secret_version, krb5, kerberos.keytab_version if kerberos else None)
        deployment = self.ports.apply(metastore_deployment(spec, digest, krb5_conf=krb5 is not None))
        if created:
            out.events.append(Event("Normal", reasons.METASTORE_CREATED,
                                    f"metastore Deployment {name} created for Hive {spec.metastore.hive_version}"))
        out.endpoint = metastore_endpoint(spec)
        if spec.metastore.replicas == 0:
            self._reach["metastore"] = Condition.of(REACHABLE, False, reasons.SCALED_TO_ZERO, "spec.metastore.replicas is 0")
            out.stop(reasons.SCALED_TO_ZERO, "the metastore is scaled to zero replicas", phase="Stopped")
            return False
        ready = (deployment.get("status") or {}).get("readyReplicas") or 0
        if ready < 1:
            self._reach["metastore"] = Condition(REACHABLE, UNKNOWN, reasons.METASTORE_STARTING,
                                                 "no metastore pod is ready yet")
            out.stop(reasons.METASTORE_STARTING, "waiting for a metastore pod to become ready", phase="Pending",
                     retry=SHORT_WAIT)
            return False
        probe = self.ports.probe_thrift(spec, service, kerberos.sasl if kerberos else None)
        self._reach["metastore"] = Condition.of(REACHABLE, probe.ok, probe.reason, probe.message)
        if not probe.ok:  # pods ready, yet no answer: an error, retried with the shared backoff (not each second)
            out.stop(probe.reason, probe.message, phase="Degraded")
        return probe.ok
