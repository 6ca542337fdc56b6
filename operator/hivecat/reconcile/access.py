"""What one namespace may use: the CatalogPolicies that select it, merged with the operator's defaults (chart
values), and the checks every reconciler runs against it before anything is read or written.

The one place that answers "which storage and which credentials may this namespace use for this cluster"
(`cluster_access`), which metastore databases and Glue catalogs its HiveCatalogs may name, which compute its
copies may run on, and how often its resources may act. Grants are unions: a namespace selected by two
policies may use what either grants. Nothing is granted by default: file:// storage, the operator's own
(ambient) credentials and Local compute only where a policy says so.

Pure: the handler reads the policies (a kopf index) and the namespace's labels; every check returns None or a
Violation whose reason is one of hivecat.reasons.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Final

from hivecat import reasons
from hivecat.locations.prefix import InvalidLocation, holds, parse_prefix, storage_prefix
from hivecat.reconcile.conditions import Condition
from hivecat.specs import mode as mode_rule
from hivecat.reconcile.policy import Violation, WorkloadPolicy
from hivecat.replication.routes import ClusterAccess
from hivecat.specs.clusterstorage import ClusterStorageSpec, canonical_uri
from hivecat.specs.hivecatalog import HiveCatalogSpec
from hivecat.specs.kerberos import KerberosSpec
from hivecat.specs.policy import (
    CatalogPolicySpec, DatabaseGrant, GlueGrant, KerberosGrant, MetastoreAddress, StorageGrant,
)
from hivecat.specs.tablereplica import TableReplicaSpec

ENFORCE, AUDIT = "Enforce", "Audit"
ENFORCEMENTS: Final = (ENFORCE, AUDIT)
CREDENTIAL_SCHEMES: Final = ("s3", "hdfs")  # storage the operator reaches with an identity (file:// has none)


@dataclass(frozen=True)
class Defaults:
    """The operator's settings that policies build on (chart values)."""

    enforcement: str = ENFORCE
    images: tuple[str, ...] = ()            # allowedImages: every namespace may name these
    service_accounts: tuple[str, ...] = ()  # allowedServiceAccounts
    min_sync_interval: float = 60.0         # seconds
    min_housekeeping_delay: float = 3600.0
    min_scan_interval: float = 60.0


@dataclass(frozen=True)
class InvalidPolicy:
    """A CatalogPolicy the operator could not read: it grants nothing, and refusals say so."""

    name: str
    message: str


@dataclass(frozen=True)
class NamespacePolicy:
    namespace: str
    enforcement: str = ENFORCE
    sources: tuple[str, ...] = ()     # the CatalogPolicies that select this namespace
    invalid: tuple[InvalidPolicy, ...] = ()
    storage: tuple[StorageGrant, ...] = ()
    compute: frozenset[str] = frozenset()
    workloads: WorkloadPolicy = WorkloadPolicy()
    databases: tuple[DatabaseGrant, ...] = ()
    glue: tuple[GlueGrant, ...] = ()
    addresses: tuple[MetastoreAddress, ...] = ()
    kerberos: tuple[KerberosGrant, ...] = ()
    min_sync_interval: float = 60.0
    min_housekeeping_delay: float = 3600.0
    min_scan_interval: float = 60.0
    notes: tuple[str, ...] = field(default=(), compare=False)

    @property
    def audit_only(self) -> bool:
        return self.enforcement == AUDIT

    # --- storage ---------------------------------------------------------------------------------------
    def storage_grant(self, uri: str) -> StorageGrant | None:
        """The most specific grant whose prefix holds `uri` (anchored at a path segment; s3a://b and s3://b are
        the same storage), or None."""
        try:
            location = storage_prefix(uri)
        except InvalidLocation:
            return None
        holding = [g for g in self.storage if holds(storage_prefix(g.prefix), location)]
        return max(holding, key=lambda g: len(str(g.prefix)), default=None)

    def check_storage(self, uri: str, field_: str) -> Violation | None:
        if self.storage_grant(uri) is not None:
            return None
        granted = ", ".join(canonical_uri(g.prefix) for g in self.storage) or "none"
        return Violation(reasons.STORAGE_NOT_ALLOWED,
                         f"{field_} {uri} is outside the storage the cluster administrator grants namespace "
                         f"{self.namespace} (granted: {granted}){self._where()}; ask for it to be granted in a "
                         "CatalogPolicy")

    def check_credentials(self, uri: str, has_secret: bool, field_: str) -> Violation | None:
        """Storage reached with an identity (S3, HDFS) needs the namespace's own credentials, unless the grant
        lets the operator use its own there."""
        if has_secret:
            return None
        try:
            family = parse_prefix(uri).family
        except InvalidLocation:
            return None  # refused as storage first
        grant = self.storage_grant(uri)
        if family not in CREDENTIAL_SCHEMES or grant is None or grant.ambient_credentials:
            return None
        return Violation(reasons.AMBIENT_CREDENTIALS_NOT_ALLOWED,
                         f"{field_} {uri} names no credentialsSecretRef, so the operator would reach it with its "
                         f"own identity, which the policy does not grant namespace {self.namespace} there; "
                         "reference a Secret with this namespace's credentials")

    def check_kerberos(self, kerberos: KerberosSpec | None, field_: str) -> Violation | None:
        """A Kerberos login is the namespace's own only where a policy grants both its principal and its Secret."""
        if kerberos is None or any(g.allows(kerberos.principal, kerberos.keytab_secret) for g in self.kerberos):
            return None
        return Violation(reasons.KERBEROS_NOT_ALLOWED,
                         f"{field_}: principal {kerberos.principal} with its keytab from Secret "
                         f"{kerberos.keytab_secret} is not a Kerberos login the cluster administrator grants "
                         f"namespace {self.namespace}{self._where()}; ask for both in a CatalogPolicy "
                         "(spec.kerberos.principals and keytabSecrets)")

    def check_compute(self, compute_type: str) -> Violation | None:
        if compute_type in self.compute:
            return None
        return Violation(reasons.COMPUTE_NOT_ALLOWED,
                         f"spec.compute.type {compute_type} is not granted to namespace {self.namespace} "
                         f"(granted: {', '.join(sorted(self.compute)) or 'none'}){self._where()}"
                         + ("; Local copies run inside the operator, so they must be granted explicitly"
                            if compute_type == "Local" else ""))

    # --- schedules -------------------------------------------------------------------------------------
    def check_minimum(self, what: str, seconds: float, minimum: float, field_: str) -> Violation | None:
        if seconds >= minimum:
            return None
        return Violation(reasons.INTERVAL_BELOW_MINIMUM,
                         f"{field_} is {_duration(seconds)}, below the {what} the cluster administrator allows "
                         f"namespace {self.namespace} ({_duration(minimum)}); use a longer one")

    # --- metastores --------------------------------------------------------------------------------------
    def check_database(self, host: str, port: int, name: str) -> Violation | None:
        for grant in self.databases:
            if grant.host == host.lower() and grant.port in (None, port) and (not grant.names or name in grant.names):
                return None
        granted = ", ".join(f"{g.host}{f':{g.port}' if g.port else ''}" for g in self.databases) or "none"
        return Violation(reasons.METASTORE_NOT_ALLOWED,
                         f"spec.database {host}:{port}/{name} is not a metastore database the cluster administrator "
                         f"grants namespace {self.namespace} (granted: {granted}){self._where()}")

    def check_glue(self, region: str, catalog_id: str | None, endpoint: str | None, role_arn: str | None,
                   has_secret: bool) -> Violation | None:
        grants = [g for g in self.glue if g.region == region and (not g.catalog_ids or (catalog_id or "") in
                                                                    g.catalog_ids) and g.endpoint == endpoint]
        if not grants:
            what = f"region {region}" + (f", catalog {catalog_id}" if catalog_id else "") + \
                (f", endpoint {endpoint}" if endpoint else "")
            return Violation(reasons.GLUE_NOT_ALLOWED,
                             f"spec.glue ({what}) is not a Glue catalog the cluster administrator grants namespace "
                             f"{self.namespace}{self._where()}")
        if role_arn is not None:
            if any(role_arn in g.role_arns for g in grants):
                return None
            return Violation(reasons.ROLE_NOT_ALLOWED,
                             f"spec.glue.roleArn {role_arn} is not a role the operator may assume for namespace "
                             f"{self.namespace}{self._where()}; ask for it in a CatalogPolicy, or reference a "
                             "Secret with this namespace's keys instead")
        if has_secret or any(g.ambient_credentials for g in grants):
            return None
        return Violation(reasons.AMBIENT_CREDENTIALS_NOT_ALLOWED,
                         "spec.glue names neither credentialsSecretRef nor roleArn, so the operator would call Glue "
                         f"with its own identity, which the policy does not grant namespace {self.namespace}; "
                         "reference a Secret with this namespace's keys, or a role the policy grants")

    def metastore_address(self, catalog: str) -> tuple[str, int] | None:
        """The administrator's override of where catalog `catalog`'s metastore is reached, if any."""
        found = next((a for a in self.addresses if a.catalog == catalog), None)
        return (found.host, found.port) if found else None

    def _where(self) -> str:
        if not self.sources and not self.invalid:
            return "; no CatalogPolicy selects this namespace"
        bad = "".join(f"; CatalogPolicy {p.name} is invalid and grants nothing: {p.message}" for p in self.invalid)
        return bad


def namespace_policy(namespace: str, labels: Mapping[str, str] | None,
                     policies: Iterable[CatalogPolicySpec | InvalidPolicy], defaults: Defaults) -> NamespacePolicy:
    """Everything the policies that select `namespace` grant it, on top of the operator's defaults."""
    chosen: list[CatalogPolicySpec] = []
    invalid: list[InvalidPolicy] = []
    for policy in policies:
        if isinstance(policy, InvalidPolicy):
            invalid.append(policy)
        elif policy.selects(namespace, labels):
            chosen.append(policy)
    chosen.sort(key=lambda p: p.name)

    def lowest(values: Iterable[float | None], default: float) -> float:
        found = [v for v in values if v is not None]
        return min(found) if found else default

    return NamespacePolicy(
        namespace=namespace,
        enforcement=defaults.enforcement,
        sources=tuple(p.name for p in chosen),
        invalid=tuple(sorted(invalid, key=lambda p: p.name)),
        storage=tuple(g for p in chosen for g in p.storage),
        compute=frozenset(c for p in chosen for c in p.compute),
        workloads=WorkloadPolicy.from_lists([*defaults.images, *(i for p in chosen for i in p.images)],
                                            [*defaults.service_accounts,
                                             *(s for p in chosen for s in p.service_accounts)]),
        databases=tuple(g for p in chosen for g in p.databases),
        glue=tuple(g for p in chosen for g in p.glue),
        addresses=tuple(a for p in chosen for a in p.metastore_addresses),
        kerberos=tuple(p.kerberos for p in chosen if p.kerberos.principals),
        min_sync_interval=lowest((p.minimums.sync_interval for p in chosen), defaults.min_sync_interval),
        min_housekeeping_delay=lowest((p.minimums.housekeeping_delay for p in chosen), defaults.min_housekeeping_delay),
        min_scan_interval=lowest((p.minimums.scan_interval for p in chosen), defaults.min_scan_interval),
    )


def needs_labels(policies: Iterable[CatalogPolicySpec | InvalidPolicy]) -> bool:
    """Whether the namespace's labels are needed to tell which policies select it (a namespaceSelector)."""
    return any(isinstance(p, CatalogPolicySpec) and p.uses_selector for p in policies)


def judged(violation: Violation | None, policy: NamespacePolicy) -> tuple[Violation | None, Condition | None]:
    """(what refuses the resource, what only reports) under the operator's enforcement: Enforce refuses;
    Audit refuses nothing and states PolicyCompliant False with what would be refused."""
    if violation is None:
        return None, None
    if not policy.audit_only:
        return violation, None
    return None, Condition.of(reasons.POLICY_COMPLIANT, False, violation.reason,
                              f"would be refused once the policy is enforced: {violation.message}")


def _duration(seconds: float) -> str:
    whole = int(seconds)
    if whole != seconds or whole < 60:
        return f"{seconds:g}s"
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return "".join(f"{n}{unit}" for n, unit in ((hours, "h"), (minutes, "m"), (secs, "s")) if n) or "0s"


# --- the checks of each kind ---------------------------------------------------------------------------------

def check_cluster_storage(spec: ClusterStorageSpec, policy: NamespacePolicy, *,
                          scan_interval_set: bool) -> Violation | None:
    """Registration: the filesystem is granted storage, the compute type granted, the scan not too frequent.
    (Credentials are judged where storage is used: cluster_access.)"""
    return (policy.check_storage(spec.filesystem, "spec.filesystem")
            or policy.check_kerberos(spec.kerberos, "spec.kerberos")
            or policy.check_compute(spec.compute.type)
            or (policy.check_minimum("scan interval", spec.scan_interval, policy.min_scan_interval,
                                     "spec.scanInterval") if scan_interval_set else None))


def check_hive_catalog(spec: HiveCatalogSpec, policy: NamespacePolicy) -> Violation | None:
    """The metastore database, its Kerberos logins (the operator's and the metastore's own) and the Glue catalog
    (with how it is reached) are granted to the namespace."""
    if spec.kerberos is not None:
        violation = (policy.check_kerberos(spec.kerberos.login, "spec.kerberos")
                     or policy.check_kerberos(spec.kerberos.metastore, "spec.kerberos (the metastore's own)"))
        if violation is not None:
            return violation
    database = spec.database
    if spec.mode in (mode_rule.THRIFT, mode_rule.HYBRID) and database is not None and database.dialect != "derby":
        assert database.host and database.name  # parse_hive_catalog requires them
        violation = policy.check_database(database.host, database.port, database.name)
        if violation is not None:
            return violation
    glue = spec.glue
    if spec.mode in (mode_rule.GLUE, mode_rule.HYBRID) and glue is not None:
        return policy.check_glue(glue.region, glue.catalog_id, glue.endpoint, glue.role_arn,
                                 glue.credentials is not None)
    return None


def check_table_replica(spec: TableReplicaSpec, policy: NamespacePolicy) -> Violation | None:
    return (policy.check_minimum("sync interval", spec.interval, policy.min_sync_interval,
                                 "spec.schedule.interval")
            or policy.check_minimum("sync interval", spec.readiness_interval, policy.min_sync_interval,
                                    "spec.schedule.readinessInterval")
            or policy.check_minimum("housekeeping delay", spec.housekeeping_delay, policy.min_housekeeping_delay,
                                    "spec.housekeeping.delay"))


def cluster_access(policy: NamespacePolicy, cluster: str, filesystem: str, credentials_secret: str | None,
                   claim: Violation | None = None, kerberos: KerberosSpec | None = None) -> ClusterAccess | Violation:
    """Whether (and how) a TableReplica of `policy.namespace` may read and write ClusterStorage `cluster`: not
    claimed by another namespace (`claim`: from reconcile.claims; refused whatever the enforcement), its
    filesystem granted, and credentials the namespace's own unless the grant lets the operator use its own
    there (under Audit, only reported)."""
    if claim is not None:
        return claim
    where = f"ClusterStorage {cluster}: spec.filesystem"
    violation = (policy.check_storage(filesystem, where)
                 or policy.check_kerberos(kerberos, f"ClusterStorage {cluster}: spec.kerberos")
                 or policy.check_credentials(filesystem, credentials_secret is not None or kerberos is not None, where))
    refusal, audit = judged(violation, policy)
    if refusal is not None:
        return refusal
    return ClusterAccess(cluster, filesystem, credentials_secret, violation if audit is not None else None,
                         kerberos)
